/**
 * Produces the wire validators as standalone code (ajv's standalone mode):
 * one CommonJS module with a compiled validate function per wire kind, from
 * the same schemas and the same strict settings `validate.ts` would compile
 * them with. Loading it costs a module load instead of a schema compile,
 * which a fresh server or client process would otherwise pay on its first
 * message of every kind. Output is deterministic; a test compares the
 * committed file with a fresh generation.
 */
import { Ajv2020, _ } from 'ajv/dist/2020.js';
import standaloneCodeModule from 'ajv/dist/standalone/index.js';
import addFormatsModule from 'ajv-formats';
import { GENERATED_BANNER } from './generate-types.ts';
import { loadWireSchemas, schemaIdOf, WIRE_KINDS, type WireKind } from './schema-files.ts';

// Both are CommonJS; under ESM their default exports arrive wrapped once.
const standaloneCode = ((standaloneCodeModule as unknown as { default?: unknown }).default ?? standaloneCodeModule) as (ajv: Ajv2020, refsOrFunc: Record<string, string>) => string;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020, formats?: string[]) => Ajv2020;

export const GENERATED_VALIDATORS_PATH = new URL('./validators.generated.cjs', import.meta.url);


/** The strict ajv settings of every wire validator; the standalone code is compiled with exactly these. */
export function wireAjv(options: { standalone: boolean }): Ajv2020 {
  // allowUnionTypes: a portable row value is legitimately one of several JSON types.
  const ajv = new Ajv2020({
    strict: true,
    allErrors: true,
    allowUnionTypes: true,
    ...(options.standalone ? { code: { source: true, formats: _`require("ajv-formats/dist/formats").fullFormats` } } : {}),
  });
  addFormats(ajv, ['date-time']);
  for (const { schema } of loadWireSchemas()) ajv.addSchema(schema);
  return ajv;
}

/** Compiles every kind from the schemas under the same strict settings (tests prove all schemas compile). */
export function compileAll(kinds: readonly WireKind[]): void {
  const ajv = wireAjv({ standalone: false });
  for (const kind of kinds) if (ajv.getSchema(schemaIdOf(kind)) === undefined) throw new Error(`no schema registered for wire kind ${kind}`);
}

export function generateWireValidators(): string {
  const ajv = wireAjv({ standalone: true });
  const code = standaloneCode(ajv, Object.fromEntries(WIRE_KINDS.map((kind) => [kind, schemaIdOf(kind)])));
  return `${GENERATED_BANNER}\n${code}\n`;
}
