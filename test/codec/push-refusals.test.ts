/**
 * The fingerprint functions refuse every push request the protocol refuses
 * with a whole-request 400, themselves, not only behind a JSON Schema: one
 * test per refused form, with the boundary that is still accepted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  batchFingerprint,
  CodecError,
  type CodecErrorCode,
  canonicalJson,
  mutationFingerprint,
  normalizedMutationOctets,
  normalizeMutation,
  PUSH_LIMITS,
  parseJson,
  readPushRequestBody,
} from '../../harness/codec/index.ts';

const H = '96e4fedd1c5372f38dddc418faa064e141bf15a85f8c138a3d213f1114c82a35';
type Obj = Record<string, unknown>;

const id = (k: number): string => `00000000-0000-4000-8000-${k.toString(16).padStart(12, '0')}`;
const insert = (k = 1, columns: Obj = { fld_body: 'x' }): Obj => ({
  mutation_id: id(k),
  table: 'tbl_notes',
  pk: { fld_id: `n-${k}` },
  authored_schema: { version: 6, hash: H },
  op: 'insert',
  client_version: '2026-09-01T08:21:10.000000Z',
  columns,
});
const update = (k = 1): Obj => ({ ...insert(k), op: 'update', base_version: 'sv:1' });
const request = (mutations: Obj[], extra: Obj = {}): Obj => ({
  client_id: 'client-1',
  client_generation: 2,
  batch_id: '11e5568c-faac-4e81-ada3-a6ca19b57f22',
  schema: { version: 6, hash: H },
  mutations,
  ...extra,
});

function refuses(code: CodecErrorCode, run: () => unknown): void {
  assert.throws(run, (e: unknown) => {
    assert.ok(e instanceof CodecError, String(e));
    assert.equal(e.code, code, e.message);
    return true;
  });
}
const fingerprintMutation = (m: Obj) => mutationFingerprint('user-1', 'client-1', m);
const fingerprintBatch = (r: unknown) => batchFingerprint('user-1', r);

test('an atomic batch naming one row twice is refused; the same pair without atomic is fingerprinted', () => {
  const sameRow = [insert(1), { ...update(2), pk: { fld_id: 'n-1' } }];
  refuses('duplicate_row', () => fingerprintBatch(request(sameRow, { atomic: true })));
  assert.equal(fingerprintBatch(request(sameRow)).digest.length, 32);
  // Another row, or the same key value in another table, is a different row.
  assert.equal(fingerprintBatch(request([insert(1), { ...update(2), pk: { fld_id: 'n-2' } }], { atomic: true })).digest.length, 32);
  assert.equal(fingerprintBatch(request([insert(1), { ...update(2), table: 'tbl_other', pk: { fld_id: 'n-1' } }], { atomic: true })).digest.length, 32);
});

test('a batch repeating a mutation, or a mutation_id, is refused', () => {
  refuses('duplicate_mutation_id', () => fingerprintBatch(request([insert(1), insert(1)])));
  refuses('duplicate_mutation_id', () => fingerprintBatch(request([insert(1), { ...insert(2), mutation_id: id(1) }])));
});

test('1,001 mutations are refused, 1,000 are fingerprinted, and an empty batch is refused', () => {
  const many = (n: number) => request(Array.from({ length: n }, (_, k) => ({ ...update(k + 1), op: 'delete', columns: undefined })).map(stripUndefined));
  assert.equal(fingerprintBatch(many(PUSH_LIMITS.mutations)).digest.length, 32);
  refuses('invalid_mutation_count', () => fingerprintBatch(many(PUSH_LIMITS.mutations + 1)));
  refuses('invalid_mutation_count', () => fingerprintBatch(request([])));
});

function stripUndefined(o: Obj): Obj {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

test('client_version without microseconds, with an offset, or on no calendar day is refused', () => {
  for (const cv of ['2026-09-01T08:21:10Z', '2026-09-01T08:21:10.000Z', '2026-09-01T08:21:10.000000+00:00', '2026-02-30T08:21:10.000000Z', '2026-09-01 08:21:10.000000Z']) {
    refuses('invalid_datetime', () => fingerprintMutation({ ...insert(), client_version: cv }));
    refuses('invalid_datetime', () => fingerprintBatch(request([{ ...insert(), client_version: cv }])));
  }
});

test('257 columns are refused, 256 are fingerprinted', () => {
  const columns = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, k) => [`f${k}`, k]));
  assert.equal(fingerprintMutation(insert(1, columns(PUSH_LIMITS.columns))).digest.length, 32);
  refuses('too_many_columns', () => fingerprintMutation(insert(1, columns(PUSH_LIMITS.columns + 1))));
  refuses('too_many_columns', () => fingerprintBatch(request([insert(1, columns(PUSH_LIMITS.columns + 1))])));
});

test('a mutation_id in uppercase hex, braced, unhyphenated or nil is refused, and so is such a batch_id', () => {
  const good = id(0xabc);
  for (const bad of [good.toUpperCase(), `{${good}}`, good.replaceAll('-', ''), '00000000-0000-0000-0000-000000000000', `${good} `]) {
    refuses('invalid_uuid', () => fingerprintMutation({ ...insert(), mutation_id: bad }));
    refuses('invalid_uuid', () => fingerprintBatch(request([insert()], { batch_id: bad })));
  }
});

/** An insert whose normalized form has exactly `octets` octets. */
function sized(octets: number): Obj {
  const m = insert(1, { fld_body: '' });
  return insert(1, { fld_body: 'x'.repeat(octets - normalizedMutationOctets(m)) });
}

test('a normalized mutation over 65,536 octets is refused; exactly 65,536 is fingerprinted; measuring never refuses', () => {
  const atLimit = sized(PUSH_LIMITS.normalizedMutationOctets);
  assert.equal(Buffer.byteLength(canonicalJson(normalizeMutation(atLimit))), PUSH_LIMITS.normalizedMutationOctets);
  assert.equal(fingerprintMutation(atLimit).digest.length, 32);
  const over = sized(PUSH_LIMITS.normalizedMutationOctets + 1);
  refuses('mutation_too_large', () => normalizeMutation(over));
  refuses('mutation_too_large', () => fingerprintMutation(over));
  refuses('mutation_too_large', () => fingerprintBatch(request([over])));
  // A client sizing its queue must learn the size of an oversized mutation, not fail on it.
  assert.equal(normalizedMutationOctets(over), PUSH_LIMITS.normalizedMutationOctets + 1);
});

test('a base_version present as null where one is required, or where none belongs, is refused', () => {
  refuses('invalid_op_shape', () => fingerprintMutation({ ...update(), base_version: null }));
  refuses('invalid_op_shape', () => fingerprintMutation({ ...update(), op: 'delete', columns: undefined, base_version: null }));
  refuses('invalid_op_shape', () => fingerprintMutation({ ...insert(), base_version: null }));
  const { base_version: _, ...noBase } = update();
  refuses('invalid_op_shape', () => fingerprintMutation(noBase));
  for (const bad of ['', 'x'.repeat(65), 'a"b', 'a\\b', 'a\nb', 'é']) refuses('invalid_server_version', () => fingerprintMutation({ ...update(), base_version: bad }));
  assert.equal(fingerprintMutation({ ...update(), base_version: '~'.repeat(64) }).digest.length, 32);
});

test('the rest of the op-shape matrix and the push vocabulary', () => {
  refuses('invalid_op_shape', () => fingerprintMutation({ ...update(), columns: {} }));
  refuses('invalid_op_shape', () => fingerprintMutation({ ...insert(), columns: null }));
  const { columns: _, ...noColumns } = insert();
  refuses('invalid_op_shape', () => fingerprintMutation(noColumns));
  refuses('invalid_op_shape', () => fingerprintMutation({ ...update(), op: 'delete', columns: {} }));
  assert.equal(fingerprintMutation({ ...insert(), columns: {} }).digest.length, 32);
  for (const op of ['create', 'upsert', 'Insert', '', null, 1]) refuses('invalid_op', () => fingerprintMutation({ ...insert(), op }));
});

test('keys, column values and member sets the protocol cannot accept whatever the schema', () => {
  refuses('null_not_allowed', () => fingerprintMutation({ ...insert(), pk: { fld_id: null } }));
  refuses('invalid_pk_type', () => fingerprintMutation({ ...insert(), pk: { fld_id: true } }));
  refuses('int_out_of_range', () => fingerprintMutation({ ...insert(), pk: { fld_id: 2147483648 } }));
  refuses('invalid_int', () => fingerprintMutation({ ...insert(), pk: { fld_id: 1.5 } }));
  refuses('invalid_identifier', () => fingerprintMutation({ ...insert(), pk: { '': 'n-1' } }));
  refuses('invalid_identifier', () => fingerprintMutation({ ...insert(), table: '' }));
  refuses('invalid_identifier', () => fingerprintMutation(insert(1, { '': 1 })));
  refuses('wrong_json_type', () => fingerprintMutation(insert(1, { fld_body: { a: 1 } })));
  refuses('wrong_json_type', () => fingerprintMutation(insert(1, { fld_body: [1] })));
  refuses('invalid_string', () => fingerprintMutation(insert(1, { fld_body: '\ud800' })));
  refuses('noncanonical_number', () => fingerprintMutation(parseJson(JSON.stringify(insert(1, { fld_n: 7 })).replace('"fld_n":7', '"fld_n":7.0')) as Obj));
  refuses('noncanonical_number', () => fingerprintMutation(insert(1, { fld_n: -0 })));
  refuses('invalid_mutation', () => fingerprintMutation({ ...insert(), local_order: 3 }));
  refuses('invalid_mutation', () => fingerprintMutation({ ...insert(), authored_schema: { version: 6, hash: H, extra: 1 } }));
  refuses('invalid_schema_hash', () => fingerprintMutation({ ...insert(), authored_schema: { version: 6, hash: H.toUpperCase() } }));
  refuses('invalid_identifier', () => mutationFingerprint('', 'client-1', insert()));
  refuses('invalid_identifier', () => mutationFingerprint('user-1', '', insert()));
});

test('envelope members: exact set, positive safe generation, atomic only true, a real schema reference', () => {
  refuses('invalid_batch', () => fingerprintBatch(request([insert()], { limit: 10 })));
  for (const g of [0, -1, 1.5, '2', 9007199254740992, null]) refuses('invalid_batch', () => fingerprintBatch(request([insert()], { client_generation: g })));
  assert.equal(fingerprintBatch(request([insert()], { client_generation: 9007199254740991 })).digest.length, 32);
  for (const a of [false, 'true', null, 1]) refuses('invalid_batch', () => fingerprintBatch(request([insert()], { atomic: a })));
  refuses('invalid_batch', () => fingerprintBatch(request([insert()], { schema: { version: 0, hash: '' } })));
  refuses('invalid_identifier', () => fingerprintBatch(request([insert()], { client_id: '' })));
  const { schema: _, ...noSchema } = request([insert()]);
  refuses('invalid_batch', () => fingerprintBatch(noSchema));
});

test('the RFC 8785 form of a request may reach 1,048,576 octets and no more', () => {
  // 17 inserts of about 61,700 octets each, the last trimmed so the request lands on the limit.
  const build = (target: number) => {
    const mutations = Array.from({ length: 17 }, (_, k) => insert(k + 1, { fld_body: 'x'.repeat(61_700) }));
    const r = request(mutations);
    const excess = Buffer.byteLength(canonicalJson(r)) - target;
    const last = mutations[16] as Obj;
    last.columns = { fld_body: 'x'.repeat(61_700 - excess) };
    assert.equal(Buffer.byteLength(canonicalJson(r)), target);
    return r;
  };
  assert.equal(fingerprintBatch(build(PUSH_LIMITS.canonicalRequestOctets)).digest.length, 32);
  refuses('request_too_large', () => fingerprintBatch(build(PUSH_LIMITS.canonicalRequestOctets + 1)));
});

test('a request body may have 1,048,576 octets and no more, and is read strictly', () => {
  const body = JSON.stringify(request([insert()]));
  const padTo = (octets: number) => `${body.slice(0, -1)}${' '.repeat(octets - Buffer.byteLength(body))}}`;
  assert.equal(fingerprintBatch(readPushRequestBody(padTo(PUSH_LIMITS.bodyOctets))).canonical, fingerprintBatch(request([insert()])).canonical);
  refuses('request_too_large', () => readPushRequestBody(padTo(PUSH_LIMITS.bodyOctets + 1)));
  refuses('json_duplicate_member', () => readPushRequestBody(body.replace('"client_id"', '"client_id":"x","client_id"')));
  refuses('json_syntax', () => readPushRequestBody(body.slice(0, -1)));
  refuses('json_syntax', () => readPushRequestBody(Uint8Array.of(0x7b, 0xff, 0x7d)));
  refuses('invalid_string', () => readPushRequestBody(body.replace('"x"', '"\\ud800"')));
});
