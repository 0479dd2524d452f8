import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  batchFingerprint,
  CodecError,
  MAX_NORMALIZED_MUTATION_OCTETS,
  mutationFingerprint,
  normalizedMutationOctets,
  parseJson,
  pushFingerprints,
  toHex,
} from '../../harness/codec/index.ts';

const H = '96e4fedd1c5372f38dddc418faa064e141bf15a85f8c138a3d213f1114c82a35';
type Obj = Record<string, unknown>;

const mutation = (): Obj => ({
  mutation_id: '0b4c5f0e-8a51-4c8e-9d7a-2f1e3b6c7d80',
  table: 'tbl_notes',
  pk: { fld_notes_id: 'n-1' },
  authored_schema: { version: 6, hash: H },
  op: 'update',
  client_version: '2024-02-29T12:34:56.123456Z',
  base_version: 'v-17',
  columns: { fld_b: 'x', fld_a: 1 },
});
const request = (): Obj => ({
  client_id: 'client-1',
  client_generation: 3,
  batch_id: '7f3e2d1c-0b9a-4876-a543-210fedcba987',
  schema: { version: 6, hash: H },
  mutations: [mutation(), { ...mutation(), mutation_id: '5d1f2c3b-4a59-4e6f-8a7b-9c0d1e2f3a4b', pk: { fld_notes_id: 'n-2' } }],
});
const mfp = (m: unknown, user = 'u', client = 'c') => toHex(mutationFingerprint(user, client, m).digest);
const bfp = (r: unknown, user = 'u') => toHex(batchFingerprint(user, r).digest);

test('the normalized mutation has fixed positions, sorted columns and explicit presence markers', () => {
  assert.equal(
    mutationFingerprint('u', 'c', mutation()).canonical,
    `["mutation-scope-v1","u","c",["mutation-v1","0b4c5f0e-8a51-4c8e-9d7a-2f1e3b6c7d80","tbl_notes",["fld_notes_id","n-1"],["6","${H}"],"update",[1,"v-17"],"2024-02-29T12:34:56.123456Z",[1,[["fld_a",1],["fld_b","x"]]]]]`,
  );
  const del: Obj = { ...mutation(), op: 'delete' };
  delete del.columns;
  assert.match(mutationFingerprint('u', 'c', del).canonical, /"delete",\[1,"v-17"\],"2024-02-29T12:34:56.123456Z",\[0\]\]\]$/);
  const insert: Obj = { ...mutation(), op: 'insert', columns: {} };
  delete insert.base_version;
  assert.match(mutationFingerprint('u', 'c', insert).canonical, /"insert",\[0\],"2024-02-29T12:34:56.123456Z",\[1,\[\]\]\]\]$/);
});

/**
 * Each entry changes one fingerprinted member of the mutation. A change of op
 * also changes the presence markers the op-shape matrix ties to it.
 */
const mutationChanges: [string, (m: Obj) => void][] = [
  ['mutation_id', (m) => { m.mutation_id = '0b4c5f0e-8a51-4c8e-9d7a-2f1e3b6c7d81'; }],
  ['table', (m) => { m.table = 'tbl_other'; }],
  ['pk field', (m) => { m.pk = { other: 'n-1' }; }],
  ['pk value', (m) => { m.pk = { fld_notes_id: 'n-9' }; }],
  ['schema version', (m) => { m.authored_schema = { version: 7, hash: H }; }],
  ['schema hash', (m) => { m.authored_schema = { version: 6, hash: `${H.slice(0, -1)}0` }; }],
  ['op delete, columns absent', (m) => { m.op = 'delete'; delete m.columns; }],
  ['op insert, base absent', (m) => { m.op = 'insert'; delete m.base_version; }],
  ['insert with empty columns', (m) => { m.op = 'insert'; delete m.base_version; m.columns = {}; }],
  ['base version', (m) => { m.base_version = 'v-18'; }],
  ['client_version', (m) => { m.client_version = '2024-02-29T12:34:56.123457Z'; }],
  ['column value', (m) => { m.columns = { fld_b: 'y', fld_a: 1 }; }],
  ['column null vs absent', (m) => { m.columns = { fld_b: 'x', fld_a: 1, fld_c: null }; }],
  ['int vs int64 text', (m) => { m.columns = { fld_b: 'x', fld_a: '1' }; }],
];

test('a fingerprint changes when any fingerprinted member changes', () => {
  const base = mfp(mutation());
  const seen = new Set([base]);
  for (const [label, change] of mutationChanges) {
    const m = mutation();
    change(m);
    const d = mfp(m);
    assert.notEqual(d, base, label);
    seen.add(d);
  }
  assert.equal(seen.size, mutationChanges.length + 1);
  assert.notEqual(mfp(mutation(), 'u2'), base);
  assert.notEqual(mfp(mutation(), 'u', 'c2'), base);
});

test('member order and whitespace of the request do not change a fingerprint; a loose number spelling is refused', () => {
  const text = JSON.stringify(mutation());
  const reordered = `{"columns":{"fld_a":1,"fld_b":"x"},"op":"update","base_version":"v-17","pk":{"fld_notes_id":"n-1"},
    "table":"tbl_notes","client_version":"2024-02-29T12:34:56.123456Z","authored_schema":{"hash":"${H}","version":6},
    "mutation_id":"0b4c5f0e-8a51-4c8e-9d7a-2f1e3b6c7d80"}`;
  assert.equal(mfp(parseJson(text)), mfp(mutation()));
  assert.equal(mfp(parseJson(reordered)), mfp(mutation()));
  // RFC 8785 would turn 1.0 into 1 and give two different submissions one fingerprint.
  for (const spelled of ['1.0', '1e0', '10e-1']) {
    assert.throws(() => mfp(parseJson(reordered.replace('"fld_a":1', `"fld_a":${spelled}`))), (e: unknown) => e instanceof CodecError && e.code === 'noncanonical_number');
  }
});

test('random column sets: order never matters, content always does (property)', () => {
  const cols = fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null)), { minKeys: 1, maxKeys: 6 });
  fc.assert(
    fc.property(cols, (c) => {
      const entries = Object.entries(c);
      const forward = Object.fromEntries(entries);
      const backward = Object.fromEntries([...entries].reverse());
      const a = mfp({ ...mutation(), columns: forward });
      const b = mfp({ ...mutation(), columns: backward });
      const extra = mfp({ ...mutation(), columns: { ...forward, '\u0000extra': 0 } });
      return a === b && a !== extra;
    }),
  );
});

test('the batch fingerprint covers the envelope, mutation order and the atomic tag', () => {
  const base = bfp(request());
  const variants: [string, Obj][] = [
    ['atomic', { ...request(), atomic: true }],
    ['client_id', { ...request(), client_id: 'client-2' }],
    ['generation', { ...request(), client_generation: 4 }],
    ['batch_id', { ...request(), batch_id: '7f3e2d1c-0b9a-4876-a543-210fedcba988' }],
    ['schema', { ...request(), schema: { version: 7, hash: H } }],
    ['order', { ...request(), mutations: [...(request().mutations as unknown[])].reverse() }],
    ['one mutation', { ...request(), mutations: (request().mutations as unknown[]).slice(0, 1) }],
  ];
  for (const [label, r] of variants) assert.notEqual(bfp(r), base, label);
  assert.notEqual(bfp(request(), 'u2'), base);
  const atomic = batchFingerprint('u', { ...request(), atomic: true }).canonical;
  assert.equal(atomic, batchFingerprint('u', request()).canonical.replace('["batch-v1"', '["atomic-batch-v1"'));
});

test('a batch embeds the same normalized mutation the mutation fingerprint hashes, atomic or not', () => {
  const m = mutation();
  const scoped = mutationFingerprint('u', 'c', m).canonical;
  const normalized = scoped.slice('["mutation-scope-v1","u","c",'.length, -1);
  for (const r of [{ ...request(), mutations: [m] }, { ...request(), mutations: [m], atomic: true, schema: { version: 9, hash: H } }]) {
    assert.ok(batchFingerprint('u', r).canonical.endsWith(`,[${normalized}]]`));
  }
});

test('malformed inputs are refused with typed errors', () => {
  const badMutation = (change: (m: Obj) => void) => {
    const m = mutation();
    change(m);
    assert.throws(() => mutationFingerprint('u', 'c', m), (e: unknown) => e instanceof CodecError && e.code === 'invalid_mutation');
  };
  badMutation((m) => { m.pk = { a: 1, b: 2 }; });
  badMutation((m) => { m.pk = {}; });
  badMutation((m) => { delete m.pk; });
  badMutation((m) => { m.authored_schema = { version: 0, hash: H }; });
  badMutation((m) => { m.authored_schema = { version: '6', hash: H }; });
  badMutation((m) => { m.columns = []; });
  badMutation((m) => { m.extra = 1; });
  const badBatch = (r: Obj) => assert.throws(() => batchFingerprint('u', r), (e: unknown) => e instanceof CodecError && e.code === 'invalid_batch');
  badBatch({ ...request(), atomic: false });
  badBatch({ ...request(), atomic: 'true' });
  badBatch({ ...request(), client_generation: 0 });
  badBatch({ ...request(), client_generation: 9007199254740992 });
  badBatch({ ...request(), mutations: {} });
});

test('the normalized mutation size is the octet length of its canonical text', () => {
  const m = mutation();
  const text = JSON.stringify(['mutation-v1', m.mutation_id, m.table, ['fld_notes_id', 'n-1'], ['6', H], 'update', [1, 'v-17'], m.client_version, [1, [['fld_a', 1], ['fld_b', 'x']]]]);
  assert.equal(normalizedMutationOctets(m), Buffer.byteLength(text));
  assert.equal(MAX_NORMALIZED_MUTATION_OCTETS, 65536);
  assert.equal(normalizedMutationOctets({ ...m, columns: { fld_a: 'é' } }) - normalizedMutationOctets({ ...m, columns: { fld_a: 'e' } }), 1);
});

/** What a call answers or the refusal it throws, comparable across the two ways of computing fingerprints. */
function settle(f: () => unknown): unknown {
  try {
    return f();
  } catch (e) {
    return e instanceof CodecError ? { code: e.code, path: e.path, message: e.message } : { thrown: String(e) };
  }
}

test('both fingerprints of a request in one pass equal the batch fingerprint and each mutation fingerprint, refusals included', () => {
  const requests: [string, unknown, string?][] = [
    ['plain', request()],
    ['atomic', { ...request(), atomic: true }],
    ['other user', request(), 'u2'],
    ...mutationChanges.map(([label, change]): [string, unknown] => {
      const r = request();
      change((r.mutations as Obj[])[1] as Obj);
      return [label, r];
    }),
    ['a delete and an insert', { ...request(), mutations: [{ ...mutation(), op: 'delete', columns: undefined }, { ...mutation(), mutation_id: '5d1f2c3b-4a59-4e6f-8a7b-9c0d1e2f3a4b', op: 'insert', base_version: undefined }].map((m) => JSON.parse(JSON.stringify(m))) }],
    ['text needing escapes', { ...request(), client_id: 'client "1" é', mutations: [{ ...mutation(), columns: { fld_a: 'line\nbreak \u2028 "q"', fld_b: 1e21 } }] }],
    ['a mutation refused', { ...request(), mutations: [mutation(), { ...mutation(), pk: {} }] }],
    ['the batch refused', { ...request(), client_generation: 0 }],
    ['bad client identifier', { ...request(), client_id: '' }],
    ['bad user', request(), ''],
    ['not a request', [1, 2]],
  ];
  for (const [label, r, user = 'u'] of requests) {
    const separate = settle(() => {
      const batch = toHex(batchFingerprint(user, r).digest);
      const rr = r as { client_id: string; mutations: unknown[] };
      return { batch, mutations: rr.mutations.map((m) => toHex(mutationFingerprint(user, rr.client_id, m).digest)) };
    });
    const together = settle(() => {
      const f = pushFingerprints(user, r);
      return { batch: toHex(f.batch), mutations: f.mutations.map(toHex) };
    });
    assert.deepEqual(together, separate, label);
  }
});
