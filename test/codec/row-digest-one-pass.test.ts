/**
 * The one-pass row digest (per-table plan, values validated and written
 * straight into one preimage buffer) and the one-scan canonical json check
 * must agree with the general path they shortcut: same octets, same
 * refusals, same codes and paths.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { isCertainlyCanonicalJson } from '../../harness/codec/canonical-json-scan.ts';
import {
  CodecError,
  canonicalJson,
  digestRow,
  encodeRowBody,
  encodeRowIdentity,
  IMPL_JSON_LIMITS,
  parseJson,
  readRow,
  rowDigest,
  rowDigestFromParts,
  schemaHashRaw,
  toHex,
} from '../../harness/codec/index.ts';
import { readCanonicalJsonTextFully } from '../../harness/codec/json-value.ts';
import { R1_TABLE, r1Row, SCHEMA_HASH } from './fixtures.ts';

/** The digest composed from the public pieces, as digestRow computed it before the one-pass path. */
function generalDigest(table: typeof R1_TABLE, row: unknown, pk: unknown, serverVersion: string) {
  const { values, pk: key } = readRow(table, row, pk);
  const identity = encodeRowIdentity(table.tableId, table.pkFieldId, key);
  const body = encodeRowBody(table, values);
  return { identity: toHex(identity), body: toHex(body), digest: toHex(rowDigestFromParts(schemaHashRaw(SCHEMA_HASH), identity, body, serverVersion)) };
}

function outcome(fn: () => { identity: Uint8Array | string; body: Uint8Array | string; digest: Uint8Array | string }): string {
  try {
    const r = fn();
    const hex = (x: Uint8Array | string) => (typeof x === 'string' ? x : toHex(x));
    return `ok ${hex(r.identity)} ${hex(r.body)} ${hex(r.digest)}`;
  } catch (e) {
    if (e instanceof CodecError) return `refused ${e.code} at ${e.path}: ${e.message}`;
    throw e;
  }
}

const wireValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.integer(),
  fc.double(),
  fc.constantFrom('0', '-1', '1.50', '1.5', '12345678.9', '9223372036854775807', '9223372036854775808', 'AQID', 'AQI', 'AQJ', '', '\ud800x', '{"a":1}', '{"b":1,"a":2}', '[1, 2]'),
  fc.constantFrom('2024-02-29T12:34:56.123456Z', '2023-02-29T12:34:56.123456Z', '2024-02-29', '2023-02-29', '23:59:59.000001', '24:00:00.000000'),
);

test('one-pass digest equals the general path on the sheet row and on rows with one field replaced (property)', () => {
  const base = r1Row('rec-1');
  assert.equal(outcome(() => digestRow({ schemaHash: SCHEMA_HASH, table: R1_TABLE, row: base, serverVersion: 'sv-0001' })), outcome(() => generalDigest(R1_TABLE, base, undefined, 'sv-0001')));
  fc.assert(
    fc.property(fc.constantFrom(...R1_TABLE.bodyOrder), wireValue, fc.option(fc.constantFrom('rec-1', 'rec-2', 7), { nil: undefined }), (field, value, pk) => {
      const row = { ...base, [field]: value };
      const fast = outcome(() => digestRow({ schemaHash: SCHEMA_HASH, table: R1_TABLE, row, pk, serverVersion: 'sv-0001' }));
      return fast === outcome(() => generalDigest(R1_TABLE, row, pk, 'sv-0001'));
    }),
    { numRuns: 400 },
  );
});

test('rowDigest gives the digest of digestRow, or its refusal, and leaves the next digestRow whole (property)', () => {
  const base = r1Row('rec-1');
  const digestOnly = (row: unknown, pk: unknown): string => {
    try {
      return `ok ${toHex(rowDigest({ schemaHash: SCHEMA_HASH, table: R1_TABLE, row, pk, serverVersion: 'sv-0001' }))}`;
    } catch (e) {
      if (e instanceof CodecError) return `refused ${e.code} at ${e.path}: ${e.message}`;
      throw e;
    }
  };
  fc.assert(
    fc.property(fc.constantFrom(...R1_TABLE.bodyOrder), wireValue, fc.option(fc.constantFrom('rec-1', 'rec-2', 7), { nil: undefined }), (field, value, pk) => {
      const row = { ...base, [field]: value };
      const full = outcome(() => digestRow({ schemaHash: SCHEMA_HASH, table: R1_TABLE, row, pk, serverVersion: 'sv-0001' }));
      const only = digestOnly(row, pk);
      // A digest alone, then the whole result of another row: the identity and body come from that row, not the one before.
      const after = outcome(() => digestRow({ schemaHash: SCHEMA_HASH, table: R1_TABLE, row: base, serverVersion: 'sv-0002' }));
      return (full.startsWith('ok ') ? only === `ok ${full.split(' ')[3]}` : only === full) && after === outcome(() => generalDigest(R1_TABLE, base, undefined, 'sv-0002'));
    }),
    { numRuns: 400 },
  );
});

test('one-pass digest refuses a missing or unknown member exactly as the general path does', () => {
  const base = r1Row('rec-1');
  const { fld_int: _dropped, ...missing } = base;
  for (const row of [missing, { ...base, fld_extra: 1 }, [], 'row', null]) {
    assert.equal(outcome(() => digestRow({ schemaHash: SCHEMA_HASH, table: R1_TABLE, row, serverVersion: 'sv-0001' })), outcome(() => generalDigest(R1_TABLE, row, undefined, 'sv-0001')));
  }
});

test('one-pass digest keeps a shape without a plan on the general path (a body field without a spec)', () => {
  const odd = { ...R1_TABLE, bodyOrder: [...R1_TABLE.bodyOrder, 'fld_zz'] };
  assert.throws(
    () => digestRow({ schemaHash: SCHEMA_HASH, table: odd, row: r1Row('rec-1'), serverVersion: 'sv-0001' }),
    (e: unknown) => e instanceof CodecError && e.code === 'missing_field' && e.path === '/fld_zz',
  );
});

function fullOutcome(text: string): string {
  try {
    return `ok ${readCanonicalJsonTextFully(text)}`;
  } catch (e) {
    if (e instanceof CodecError) return `refused ${e.code}`;
    throw e;
  }
}

test('the one-scan json check never accepts what the full reader refuses (property)', () => {
  const texts = fc.oneof(
    fc.jsonValue().map((v) => canonicalJson(v)),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.jsonValue().map((v) => JSON.stringify(v, null, 1)),
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.string({ unit: 'grapheme' }),
    fc.constantFrom('{"a":1,"a":2}', '{"b":1,"a":2}', '"\\u00e9"', '"\\u001f"', '"\\u001F"', '"\\/"', '"\\ud800"', '"\ud800"', '"\ufdd0"', '"\uffff"', '1.0', '-0', '1e21', '1e+21', '9007199254740993', '[1,]', 'tru', '"a"x'),
  );
  fc.assert(
    fc.property(texts, (text) => {
      if (!isCertainlyCanonicalJson(text, IMPL_JSON_LIMITS)) return true;
      return fullOutcome(text) === `ok ${text}`;
    }),
    { numRuns: 2000 },
  );
});

test('the one-scan json check accepts ordinary canonical text and respects the depth and size bounds', () => {
  for (const text of ['{"a":1,"b":[true,null,"x"]}', '"h\u00e9llo"', '"tab\\there"', '"\\u001f"', '1.5e-7', '-1.5', '[]', '{}']) {
    assert.equal(isCertainlyCanonicalJson(text, IMPL_JSON_LIMITS), true, text);
    assert.equal(fullOutcome(text), `ok ${text}`, text);
  }
  assert.equal(isCertainlyCanonicalJson('[[1]]', { maxDepth: 1, maxValues: 10 }), false);
  assert.equal(isCertainlyCanonicalJson('[1,2,3]', { maxDepth: 5, maxValues: 3 }), false);
  assert.equal(isCertainlyCanonicalJson(JSON.stringify(parseJson('{"b":1,"a":2}')), IMPL_JSON_LIMITS), false);
});
