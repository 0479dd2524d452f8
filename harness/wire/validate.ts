/**
 * Schema validation of wire messages. Every wire schema is registered once on
 * one strict ajv instance (draft 2020-12 with ajv-formats); a kind's
 * validator is compiled the first time that kind is checked and then reused.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { WireMessages } from './generated.ts';
import { loadWireSchemas, schemaIdOf, type WireKind } from './schema-files.ts';

export { isWireKind, WIRE_KINDS, type WireKind } from './schema-files.ts';

// ajv-formats is CommonJS; under ESM its default export arrives wrapped once.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020, formats?: string[]) => Ajv2020;

/** The TypeScript type of a valid message of each kind. */
export type WireValue<K extends WireKind> = WireMessages[K];

/** One schema failure: where (JSON pointer), which keyword failed, and why. */
export interface SchemaError {
  pointer: string;
  rule: string;
  message: string;
}

export type ValidationResult<K extends WireKind> =
  | { ok: true; value: WireValue<K> }
  | { ok: false; errors: SchemaError[] };

let ajv: Ajv2020 | undefined;
const compiled = new Map<WireKind, ValidateFunction>();

function instance(): Ajv2020 {
  if (ajv !== undefined) return ajv;
  // allowUnionTypes: a portable row value is legitimately one of several JSON types.
  const created = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  addFormats(created, ['date-time']);
  for (const { schema } of loadWireSchemas()) created.addSchema(schema);
  ajv = created;
  return created;
}

function validatorFor(kind: WireKind): ValidateFunction {
  let validator = compiled.get(kind);
  if (validator === undefined) {
    validator = instance().getSchema(schemaIdOf(kind));
    if (validator === undefined) throw new Error(`no schema registered for wire kind ${kind}`);
    compiled.set(kind, validator);
  }
  return validator;
}

/** Checks `value` against the schema of `kind`. */
export function validate<K extends WireKind>(kind: K, value: unknown): ValidationResult<K> {
  const validator = validatorFor(kind);
  if (validator(value)) return { ok: true, value: value as WireValue<K> };
  return { ok: false, errors: toSchemaErrors(validator.errors ?? []) };
}

/** Compiles every kind now (used by tests to prove all schemas compile under strict mode). */
export function compileAll(kinds: readonly WireKind[]): void {
  for (const kind of kinds) validatorFor(kind);
}

function toSchemaErrors(errors: ErrorObject[]): SchemaError[] {
  const out: SchemaError[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    const message = explainSchemaError(error);
    const key = `${error.instancePath}\u0000${error.keyword}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ pointer: error.instancePath, rule: error.keyword, message });
  }
  return out;
}

/** A readable sentence for one ajv error; shared by every schema check in the project. */
export function explainSchemaError(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return `unknown member "${String(params.additionalProperty)}"`;
    case 'required':
      return `missing required member "${String(params.missingProperty)}"`;
    case 'dependentRequired':
      return `member "${String(params.property)}" requires member "${String(params.missingProperty)}"`;
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case 'enum':
      return `must be one of ${JSON.stringify(params.allowedValues)}`;
    default:
      return error.message ?? error.keyword;
  }
}
