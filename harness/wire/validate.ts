/**
 * Schema validation of wire messages. The validators are the standalone code
 * ajv generated from schemas/ with strict draft 2020-12 settings
 * (`validators.generated.cjs`, written by `npm run generate` and checked
 * against the schemas by a test), so no process compiles a schema at run
 * time: a fresh server or client answers its first message as fast as its
 * hundredth. Nothing here loads the schema compiler or the generators (which
 * bring a code formatter along): every server and client process imports
 * this module.
 */
import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import type { WireMessages } from './generated.ts';
import type { WireKind } from './schema-files.ts';

export { isWireKind, WIRE_KINDS, type WireKind } from './schema-files.ts';

const standalone = createRequire(import.meta.url)('./validators.generated.cjs') as Record<WireKind, ValidateFunction>;

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

function validatorFor(kind: WireKind): ValidateFunction {
  const validator = standalone[kind];
  if (validator === undefined) throw new Error(`no generated validator for wire kind ${kind}: run \`npm run generate\``);
  return validator;
}

/** Checks `value` against the schema of `kind`. */
export function validate<K extends WireKind>(kind: K, value: unknown): ValidationResult<K> {
  const validator = validatorFor(kind);
  if (validator(value)) return { ok: true, value: value as WireValue<K> };
  return { ok: false, errors: toSchemaErrors(validator.errors ?? []) };
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
