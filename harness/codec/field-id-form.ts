/**
 * The normalized field-ID representation of keys, mutations and push requests
 * (the form upstream canonical vectors use), turned into the wire form the
 * codec's checks and fingerprints take:
 *
 *   key       {field_id, value}                        → wire pk {field_id: value}
 *   mutation  {mutation_id, table_id, pk, authored_schema, operation,
 *              client_version, base_version?, columns?: [{field_id, value}]}
 *                                                       → wire Mutation (table, pk, op, columns object)
 *   request   {client_id, client_generation, batch_id, request_schema,
 *              mutations, atomic?}                      → wire PushRequest (schema)
 *
 * Only what has no wire equivalent is refused here (a missing or unknown
 * member, a column list that is not a list of {field_id, value}, a field ID
 * listed twice); presence is carried over as it is, including a present
 * `null`, so the wire checks judge it exactly as they judge a wire request.
 */
import { CodecError, type CodecErrorCode, pointer } from './errors.ts';
import { exactMembers, type Obj, readObject } from './json-shape.ts';

/** Sets a member even when its name is `__proto__` or another Object.prototype name. */
function define(o: Obj, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

export interface FieldIdKey {
  fieldId: string;
  value: unknown;
}

/** `{field_id, value}` exactly. */
export function readFieldIdKey(v: unknown, path = '', code: CodecErrorCode = 'wrong_json_type'): FieldIdKey {
  const key = readObject(v, code, path, 'a key');
  exactMembers(key, ['field_id', 'value'], [], code, path, 'a key {field_id, value}');
  if (typeof key.field_id !== 'string') throw new CodecError(code, pointer(path, 'field_id'), 'field_id must be a string');
  return { fieldId: key.field_id, value: key.value };
}

function readColumns(v: unknown, path: string): Obj {
  if (!Array.isArray(v)) throw new CodecError('invalid_mutation', path, 'columns is a list of {field_id, value}');
  const columns: Obj = {};
  const seen = new Map<string, number>();
  v.forEach((item: unknown, k: number) => {
    const { fieldId, value } = readFieldIdKey(item, pointer(path, k), 'invalid_mutation');
    const first = seen.get(fieldId);
    if (first !== undefined) throw new CodecError('duplicate_field', pointer(pointer(path, k), 'field_id'), `field ${fieldId} is already listed at ${pointer(path, first)}`);
    seen.set(fieldId, k);
    define(columns, fieldId, value);
  });
  return columns;
}

const MUTATION_REQUIRED = ['mutation_id', 'table_id', 'pk', 'authored_schema', 'operation', 'client_version'] as const;

export function mutationFromFieldIdForm(v: unknown, path = ''): Obj {
  const m = readObject(v, 'invalid_mutation', path, 'a mutation');
  exactMembers(m, MUTATION_REQUIRED, ['base_version', 'columns'], 'invalid_mutation', path, 'a mutation in field-ID form');
  const key = readFieldIdKey(m.pk, pointer(path, 'pk'), 'invalid_mutation');
  const pk: Obj = {};
  define(pk, key.fieldId, key.value);
  const wire: Obj = {
    mutation_id: m.mutation_id,
    table: m.table_id,
    pk,
    authored_schema: m.authored_schema,
    op: m.operation,
    client_version: m.client_version,
  };
  if (Object.hasOwn(m, 'base_version')) wire.base_version = m.base_version;
  if (Object.hasOwn(m, 'columns')) wire.columns = m.columns === null ? null : readColumns(m.columns, pointer(path, 'columns'));
  return wire;
}

const REQUEST_REQUIRED = ['client_id', 'client_generation', 'batch_id', 'request_schema', 'mutations'] as const;

export function pushRequestFromFieldIdForm(v: unknown): Obj {
  const r = readObject(v, 'invalid_batch', '', 'a push request');
  exactMembers(r, REQUEST_REQUIRED, ['atomic'], 'invalid_batch', '', 'a push request in field-ID form');
  if (!Array.isArray(r.mutations)) throw new CodecError('invalid_batch', '/mutations', 'mutations must be an array');
  const wire: Obj = {
    client_id: r.client_id,
    client_generation: r.client_generation,
    batch_id: r.batch_id,
    schema: r.request_schema,
    mutations: r.mutations.map((m: unknown, k: number) => mutationFromFieldIdForm(m, pointer('/mutations', k))),
  };
  if (Object.hasOwn(r, 'atomic')) wire.atomic = r.atomic;
  return wire;
}
