/**
 * The client adapter protocol's payload schemas (schemas/adapter/) and the
 * check every JSON-RPC payload goes through: params before the harness sends
 * them, results and errors as soon as the client answers.
 */
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';

export const CLIENT_METHODS = [
  'open',
  'start',
  'stop',
  'close',
  'syncNow',
  'retryAfterError',
  'resetSchemaAndStart',
  'getStatus',
  'query',
  'execute',
  'transaction',
  'atomicWrite',
  'armCrash',
  'crashPoints',
  'inspectMutations',
  'inspectRejections',
  'clearRejections',
  'inspectBatches',
  'inspectScopes',
  'inspectProvenance',
  'inspectRebuilds',
  'validateTransition',
  'inspectRowVersions',
  'inspectBackoff',
  'inspectSeedReceipts',
  'snapshotDigest',
  'recover',
  'inspectMigration',
  'tamperMigration',
] as const;

export type ClientMethod = (typeof CLIENT_METHODS)[number];

export const CLIENT_SCHEMA_FILE = new URL('../../schemas/adapter/client-adapter.schema.json', import.meta.url);
const SCHEMA_ID = 'https://synchro.dev/schemas/v3/adapter/client-adapter.schema.json';

export interface PayloadProblem {
  pointer: string;
  rule: string;
  message: string;
}

let ajv: Ajv2020 | undefined;
const validators = new Map<string, ValidateFunction>();

function validatorFor(definition: string): ValidateFunction {
  let validator = validators.get(definition);
  if (validator) return validator;
  if (!ajv) {
    // Union types: SQL bind values may be positional (array) or named (object).
    ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true, allowUnionTypes: true });
    ajv.addSchema(JSON.parse(readFileSync(CLIENT_SCHEMA_FILE, 'utf8')) as object);
  }
  validator = ajv.getSchema(`${SCHEMA_ID}#/$defs/${definition}`);
  if (!validator) throw new Error(`schemas/adapter has no definition "${definition}"`);
  validators.set(definition, validator);
  return validator;
}

function problems(errors: ErrorObject[] | null | undefined): PayloadProblem[] {
  return (errors ?? []).map((error) => ({ pointer: error.instancePath, rule: error.keyword, message: error.message ?? error.keyword }));
}

export function isClientMethod(name: string): name is ClientMethod {
  return (CLIENT_METHODS as readonly string[]).includes(name);
}

/** Problems with a payload of `method`; an empty list means it is valid. */
export function checkPayload(method: ClientMethod, part: 'Params' | 'Result', value: unknown): PayloadProblem[] {
  const validator = validatorFor(`${method}${part}`);
  return validator(value) ? [] : problems(validator.errors);
}

/** Problems with a JSON-RPC error object sent by a client adapter. */
export function checkErrorObject(value: unknown): PayloadProblem[] {
  const validator = validatorFor('errorObject');
  return validator(value) ? [] : problems(validator.errors);
}

export function formatProblems(found: readonly PayloadProblem[]): string {
  return found.map((p) => `${p.pointer || '/'} violates "${p.rule}": ${p.message}`).join('; ');
}
