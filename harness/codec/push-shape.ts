/**
 * What makes a push request a whole-request `400 invalid_request` before any
 * fingerprint is taken (002 "Exact mutation shapes" and "Scoped immutable
 * identity", wire §3.3 and rules P1-P7). The fingerprint functions run these
 * checks themselves, so nothing can be fingerprinted that the protocol refuses.
 *
 * Left to the caller, because they need the current schema or the ledger:
 * whether `pk` names the table's key field with a value of its type, whether
 * each column is writable and its value valid for its type (per-mutation
 * `validation_failed` / `schema_incompatible` outcomes, not request errors),
 * and mutation IDs already ledgered in another batch.
 */
import { CodecError, pointer } from './errors.ts';
import { checkIdentifier, checkServerVersion, checkUuid } from './identifiers.ts';
import { exactMembers, type Obj, readEnvelopeInteger, readObject, readSchemaRef } from './json-shape.ts';
import { canonicalJson } from './rfc8785.ts';
import { isCanonicalNumberText, type JsonValue, parseJson, RawNumber, STACK_GUARD_DEPTH } from './strict-json.ts';
import { decodeUtf8, firstInvalidUtf8, isWellFormedText } from './unicode.ts';
import { readDatetime, readInt } from './wire-values.ts';

/** The protocol's push limits (002 "Exact mutation shapes"; wire §1.5). */
export const PUSH_LIMITS = {
  /** Octets of the decoded request body. */
  bodyOctets: 1_048_576,
  /** Octets of the RFC 8785 form of the parsed request. */
  canonicalRequestOctets: 1_048_576,
  /** Mutations per request (at least one). */
  mutations: 1000,
  /** Octets of the RFC 8785 form of one normalized mutation. */
  normalizedMutationOctets: 65_536,
  /** Authored columns per mutation. */
  columns: 256,
} as const;

export const PUSH_OPS = ['insert', 'update', 'delete'] as const;
export type PushOp = (typeof PUSH_OPS)[number];

const MUTATION_REQUIRED = ['mutation_id', 'table', 'pk', 'authored_schema', 'op', 'client_version'] as const;
const MUTATION_OPTIONAL = ['base_version', 'columns'] as const;
const REQUEST_REQUIRED = ['client_id', 'client_generation', 'batch_id', 'schema', 'mutations'] as const;
const REQUEST_OPTIONAL = ['atomic'] as const;

/** A key value the protocol can never accept, whatever the table: only a string or an int32 integer can be a key. */
function checkKeyValue(v: unknown, path: string): void {
  if (v === null) throw new CodecError('null_not_allowed', path, 'a key value is never null');
  if (typeof v === 'string') {
    if (!isWellFormedText(v)) throw new CodecError('invalid_string', path, 'key contains a lone surrogate');
    return;
  }
  if (v instanceof RawNumber || typeof v === 'number') {
    readInt(v, path);
    return;
  }
  throw new CodecError('invalid_pk_type', path, 'a key value is a string (string or int64 key) or an integer (int key)');
}

/**
 * A column value as far as it can be judged without the schema: one JSON
 * scalar (string, number, boolean or null; every portable type travels as one
 * of these) with a UTF-8 form, and a number spelled as the RFC 8785 text of
 * its value, since RFC 8785 would otherwise merge two different submissions
 * (`1.0` and `1`) into one fingerprint.
 */
function checkColumnValue(v: unknown, path: string): void {
  if (v === null || typeof v === 'boolean') return;
  if (typeof v === 'string') {
    if (!isWellFormedText(v)) throw new CodecError('invalid_string', path, 'value contains a lone surrogate');
    return;
  }
  if (v instanceof RawNumber) {
    if (!isCanonicalNumberText(v.raw)) throw new CodecError('noncanonical_number', path, `number ${v.raw} is not written in its RFC 8785 form`);
    return;
  }
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || Object.is(v, -0)) throw new CodecError('noncanonical_number', path, `${v} has no RFC 8785 form other than 0`);
    return;
  }
  throw new CodecError('wrong_json_type', path, 'a column value is a JSON string, number, boolean or null');
}

function readOp(v: unknown, path: string): PushOp {
  if (typeof v !== 'string' || !(PUSH_OPS as readonly string[]).includes(v)) {
    throw new CodecError('invalid_op', path, `op is exactly "insert", "update" or "delete", got ${JSON.stringify(v) ?? 'nothing'}`);
  }
  return v as PushOp;
}

/** The op-shape matrix: which of `base_version` and `columns` each op requires or forbids. A present null satisfies neither. */
function checkOpShape(m: Obj, op: PushOp, path: string): void {
  const hasBase = Object.hasOwn(m, 'base_version');
  const hasColumns = Object.hasOwn(m, 'columns');
  const shape = (member: string, why: string): never => {
    throw new CodecError('invalid_op_shape', pointer(path, member), `${op}: ${why}`);
  };
  if (op === 'insert' && hasBase) shape('base_version', 'an insert has no base_version (not even null)');
  if (op !== 'insert' && !hasBase) shape('base_version', `an ${op} requires base_version`);
  if (op === 'delete' && hasColumns) shape('columns', 'a delete has no columns (not even {})');
  if (op !== 'delete' && !hasColumns) shape('columns', `an ${op} requires columns`);
  if (hasBase && m.base_version === null) shape('base_version', 'null never stands for a base version');
  if (hasColumns && m.columns === null) shape('columns', 'null never stands for a column set');
}

function checkColumns(v: unknown, op: PushOp, path: string): void {
  const columns = readObject(v, 'invalid_mutation', path, 'columns');
  const names = Object.keys(columns);
  if (op === 'update' && names.length === 0) throw new CodecError('invalid_op_shape', path, 'update: an empty patch changes nothing ({} is valid only for insert)');
  if (names.length > PUSH_LIMITS.columns) {
    throw new CodecError('too_many_columns', path, `${names.length} columns, at most ${PUSH_LIMITS.columns} are allowed`);
  }
  for (const name of names) {
    checkIdentifier(name, pointer(path, name), 'a field ID');
    checkColumnValue(columns[name], pointer(path, name));
  }
}

/** Every rule of one wire mutation that does not need the schema; throws the first break found. */
export function checkMutationShape(mutation: unknown, path = ''): void {
  const m = readObject(mutation, 'invalid_mutation', path, 'a mutation');
  exactMembers(m, MUTATION_REQUIRED, MUTATION_OPTIONAL, 'invalid_mutation', path, 'a mutation');
  checkUuid(m.mutation_id, pointer(path, 'mutation_id'));
  checkIdentifier(m.table, pointer(path, 'table'), 'table');
  const pkPath = pointer(path, 'pk');
  const pk = readObject(m.pk, 'invalid_mutation', pkPath, 'pk');
  const keyMembers = Object.keys(pk);
  const keyField = keyMembers[0];
  if (keyMembers.length !== 1 || keyField === undefined) {
    throw new CodecError('invalid_mutation', pkPath, `pk has exactly one member (the key field), got ${keyMembers.length}`);
  }
  checkIdentifier(keyField, pointer(pkPath, keyField), 'the key field ID');
  checkKeyValue(pk[keyField], pointer(pkPath, keyField));
  readSchemaRef(m.authored_schema, 'invalid_mutation', pointer(path, 'authored_schema'));
  const op = readOp(m.op, pointer(path, 'op'));
  readDatetime(m.client_version, pointer(path, 'client_version'));
  checkOpShape(m, op, path);
  if (Object.hasOwn(m, 'base_version')) checkServerVersion(m.base_version, pointer(path, 'base_version'));
  if (Object.hasOwn(m, 'columns')) checkColumns(m.columns, op, pointer(path, 'columns'));
}

/**
 * Every request-level rule that does not need server state: the envelope, 1 to
 * 1000 mutations each valid, unique mutation IDs, and for an atomic request
 * no row addressed twice. Octet limits are checked where the octets are known
 * (readPushRequestBody, and the fingerprint functions for the RFC 8785 forms).
 */
export function checkPushRequestShape(request: unknown): void {
  const r = readObject(request, 'invalid_batch', '', 'a push request');
  exactMembers(r, REQUEST_REQUIRED, REQUEST_OPTIONAL, 'invalid_batch', '', 'a push request');
  checkIdentifier(r.client_id, '/client_id', 'client_id');
  readEnvelopeInteger(r.client_generation, 1, 'invalid_batch', '/client_generation', 'client_generation');
  checkUuid(r.batch_id, '/batch_id');
  readSchemaRef(r.schema, 'invalid_batch', '/schema');
  if (Object.hasOwn(r, 'atomic') && r.atomic !== true) throw new CodecError('invalid_batch', '/atomic', 'atomic is either absent or true');
  if (!Array.isArray(r.mutations)) throw new CodecError('invalid_batch', '/mutations', 'mutations must be an array');
  const count = r.mutations.length;
  if (count < 1 || count > PUSH_LIMITS.mutations) {
    throw new CodecError('invalid_mutation_count', '/mutations', `a request carries 1 to ${PUSH_LIMITS.mutations} mutations, got ${count}`);
  }
  const ids = new Map<string, number>();
  const rows = new Map<string, number>();
  r.mutations.forEach((mutation: unknown, k: number) => {
    const path = pointer('/mutations', k);
    checkMutationShape(mutation, path);
    const m = mutation as Obj;
    const id = m.mutation_id as string;
    const first = ids.get(id);
    if (first !== undefined) throw new CodecError('duplicate_mutation_id', pointer(path, 'mutation_id'), `mutation_id ${id} already appears at /mutations/${first}`);
    ids.set(id, k);
    if (r.atomic === true) {
      const [[field, value]] = Object.entries(m.pk as Obj) as [[string, unknown]];
      const row = canonicalJson([m.table, field, value]);
      const earlier = rows.get(row);
      if (earlier !== undefined) throw new CodecError('duplicate_row', pointer(path, 'pk'), `an atomic request addresses this row already at /mutations/${earlier}`);
      rows.set(row, k);
    }
  });
}

/**
 * Reads a push request body as the protocol reads it: at most 1,048,576
 * octets, well-formed UTF-8, one strict JSON value (no duplicate member at any
 * depth, no trailing data, no string without a UTF-8 form). Returns the value
 * with number spellings kept, for checkPushRequestShape and batchFingerprint.
 */
export function readPushRequestBody(body: Uint8Array | string): JsonValue {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  if (bytes.length > PUSH_LIMITS.bodyOctets) {
    throw new CodecError('request_too_large', '', `the body is ${bytes.length} octets, at most ${PUSH_LIMITS.bodyOctets} are allowed`);
  }
  const text = decodeUtf8(bytes);
  if (text === undefined) throw new CodecError('json_syntax', '', `the body is not valid UTF-8 (first ill-formed octet at ${firstInvalidUtf8(bytes)})`);
  return parseJson(text, { maxDepth: STACK_GUARD_DEPTH, maxValues: Number.POSITIVE_INFINITY, rejectLoneSurrogates: true });
}
