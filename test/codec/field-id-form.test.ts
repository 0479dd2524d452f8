import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  batchFingerprint,
  CodecError,
  mutationFingerprint,
  mutationFromFieldIdForm,
  pushRequestFromFieldIdForm,
  readFieldIdKey,
  toHex,
} from '../../harness/codec/index.ts';

const H = '96e4fedd1c5372f38dddc418faa064e141bf15a85f8c138a3d213f1114c82a35';
const fieldIdForm = () => ({
  mutation_id: '057e64dc-602a-46bd-94dc-6b4e70f795e5',
  table_id: 'tbl_notes',
  pk: { field_id: 'fld_notes_id', value: 'n-0001' },
  authored_schema: { version: 6, hash: H },
  operation: 'update',
  base_version: 'sv:n-0001:17',
  client_version: '2026-09-01T08:21:11.500000Z',
  columns: [
    { field_id: 'fld_notes_price', value: null },
    { field_id: 'fld_notes_body', value: 'Buy oat milk' },
  ],
});
const wireForm = {
  mutation_id: '057e64dc-602a-46bd-94dc-6b4e70f795e5',
  table: 'tbl_notes',
  pk: { fld_notes_id: 'n-0001' },
  authored_schema: { version: 6, hash: H },
  op: 'update',
  base_version: 'sv:n-0001:17',
  client_version: '2026-09-01T08:21:11.500000Z',
  columns: { fld_notes_body: 'Buy oat milk', fld_notes_price: null },
};

test('a field-ID-form mutation is the wire mutation it names, with the same fingerprint', () => {
  const wire = mutationFromFieldIdForm(fieldIdForm());
  assert.deepEqual(wire, { ...wireForm, columns: { fld_notes_price: null, fld_notes_body: 'Buy oat milk' } });
  assert.equal(toHex(mutationFingerprint('u', 'c', wire).digest), toHex(mutationFingerprint('u', 'c', wireForm).digest));
  const request = { client_id: 'c', client_generation: 2, batch_id: '11e5568c-faac-4e81-ada3-a6ca19b57f22', request_schema: { version: 6, hash: H }, mutations: [fieldIdForm()] };
  const wireRequest = { client_id: 'c', client_generation: 2, batch_id: request.batch_id, schema: request.request_schema, mutations: [wireForm] };
  assert.equal(batchFingerprint('u', pushRequestFromFieldIdForm(request)).canonical, batchFingerprint('u', wireRequest).canonical);
  assert.equal(batchFingerprint('u', pushRequestFromFieldIdForm({ ...request, atomic: true })).canonical.slice(0, 18), '["atomic-batch-v1"');
});

test('presence carries over: absent stays absent, a present null stays null for the wire checks to refuse', () => {
  const { base_version: _, ...noBase } = fieldIdForm();
  assert.equal(Object.hasOwn(mutationFromFieldIdForm(noBase), 'base_version'), false);
  assert.equal(mutationFromFieldIdForm({ ...fieldIdForm(), columns: null }).columns, null);
  assert.throws(() => mutationFingerprint('u', 'c', mutationFromFieldIdForm({ ...fieldIdForm(), base_version: null })), (e: unknown) => e instanceof CodecError && e.code === 'invalid_op_shape');
});

test('what has no wire form is refused: repeated field IDs, unknown members, malformed keys and column lists', () => {
  const code = (run: () => unknown) => {
    try {
      run();
    } catch (e) {
      return e instanceof CodecError ? e.code : 'not a CodecError';
    }
    return 'accepted';
  };
  const twice = { ...fieldIdForm(), columns: [{ field_id: 'a', value: 1 }, { field_id: 'a', value: 1 }] };
  assert.equal(code(() => mutationFromFieldIdForm(twice)), 'duplicate_field');
  assert.equal(code(() => mutationFromFieldIdForm({ ...fieldIdForm(), table: 'tbl_notes' })), 'invalid_mutation');
  assert.equal(code(() => mutationFromFieldIdForm({ ...fieldIdForm(), columns: { a: 1 } })), 'invalid_mutation');
  assert.equal(code(() => mutationFromFieldIdForm({ ...fieldIdForm(), columns: [{ field_id: 'a' }] })), 'invalid_mutation');
  assert.equal(code(() => mutationFromFieldIdForm({ ...fieldIdForm(), pk: { fld_notes_id: 'n-1' } })), 'invalid_mutation');
  assert.equal(code(() => pushRequestFromFieldIdForm({ client_id: 'c', mutations: [] })), 'invalid_batch');
  assert.equal(code(() => readFieldIdKey({ field_id: 'k', value: 1, type: 'int' })), 'wrong_json_type');
  assert.equal(code(() => readFieldIdKey({ field_id: 7, value: 1 })), 'wrong_json_type');
});

test('a field ID named like an Object.prototype member is an ordinary member', () => {
  const wire = mutationFromFieldIdForm({ ...fieldIdForm(), columns: [{ field_id: '__proto__', value: 1 }] });
  assert.deepEqual(Object.keys(wire.columns as object), ['__proto__']);
  assert.match(mutationFingerprint('u', 'c', wire).canonical, /\[1,\[\["__proto__",1\]\]\]\]\]$/);
});
