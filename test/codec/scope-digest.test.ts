import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  CodecError,
  type CodecErrorCode,
  digestRow,
  rowIdentityFromWire,
  ScopeDigestBuilder,
  SortedScopeDigest,
  schemaHashRaw,
  scopeDigest,
  toHex,
} from '../../harness/codec/index.ts';
import { DIGESTS, R1_TABLE, R3_ROW, R3_TABLE, r1Row, SCHEMA_HASH } from './fixtures.ts';

const HASH = schemaHashRaw(SCHEMA_HASH);
const rejects = (fn: () => unknown, code: CodecErrorCode) => assert.throws(fn, (e: unknown) => e instanceof CodecError && e.code === code, code);

const r1 = digestRow({ schemaHash: SCHEMA_HASH, table: R1_TABLE, row: r1Row('rec-1'), serverVersion: 'sv-0001' });
const r2 = digestRow({ schemaHash: SCHEMA_HASH, table: R1_TABLE, row: r1Row('rec-2'), serverVersion: 'sv-0002' });
const r3 = digestRow({ schemaHash: SCHEMA_HASH, table: R3_TABLE, row: R3_ROW, serverVersion: '1' });

test('the sheet scope vectors: empty scope and {R1, R2, R3} in any order', () => {
  assert.equal(toHex(scopeDigest(HASH, 'scope-a', [])), DIGESTS.emptyScope);
  for (const order of [[r1, r2, r3], [r3, r2, r1], [r2, r3, r1]]) assert.equal(toHex(scopeDigest(HASH, 'scope-a', order)), DIGESTS.scopeR123);
});

test('a shorter table ID sorts first because the length prefix is compared too', () => {
  const sorted = new SortedScopeDigest(HASH, 'scope-a', 3);
  sorted.add(r1.identity, r1.digest);
  sorted.add(r2.identity, r2.digest);
  sorted.add(r3.identity, r3.digest);
  assert.equal(toHex(sorted.finish()), DIGESTS.scopeR123);
});

test('mutants: duplicate, omitted, extra, swapped pairing, cardinality and scope ID', () => {
  rejects(() => scopeDigest(HASH, 'scope-a', [r1, r2, r1]), 'duplicate_identity');
  const good = DIGESTS.scopeR123;
  assert.notEqual(toHex(scopeDigest(HASH, 'scope-a', [r1, r2])), good);
  const extra = digestRow({ schemaHash: SCHEMA_HASH, table: R3_TABLE, row: { fld_n: 8, fld_label: 'eight' }, serverVersion: '1' });
  assert.notEqual(toHex(scopeDigest(HASH, 'scope-a', [r1, r2, r3, extra])), good);
  const swapped = [
    { identity: r1.identity, digest: r2.digest },
    { identity: r2.identity, digest: r1.digest },
    r3,
  ];
  assert.notEqual(toHex(scopeDigest(HASH, 'scope-a', swapped)), good);
  assert.notEqual(toHex(scopeDigest(HASH, 'scope-b', [r1, r2, r3])), good);
  for (const n of [2, 4]) {
    const s = new SortedScopeDigest(HASH, 'scope-a', n);
    rejects(() => {
      for (const e of [r1, r2, r3]) s.add(e.identity, e.digest);
      s.finish();
    }, 'cardinality_mismatch');
  }
});

test('streaming refuses out-of-order and repeated identities', () => {
  const s = new SortedScopeDigest(HASH, 'scope-a', 3);
  s.add(r3.identity, r3.digest);
  rejects(() => s.add(r1.identity, r1.digest), 'unsorted_identity');
  const t = new SortedScopeDigest(HASH, 'scope-a', 3);
  t.add(r1.identity, r1.digest);
  rejects(() => t.add(r1.identity, r2.digest), 'duplicate_identity');
});

test('malformed entries are errors, never digests', () => {
  const b = () => new ScopeDigestBuilder(HASH, 'scope-a');
  rejects(() => b().add(r3.identity, r3.digest.subarray(1)), 'invalid_digest');
  rejects(() => b().add(Buffer.concat([r3.identity, Uint8Array.of(0)]), r3.digest), 'invalid_row_identity');
  rejects(() => b().add(r3.identity.subarray(0, r3.identity.length - 1), r3.digest), 'invalid_row_identity');
  rejects(() => b().add(r3.body, r3.digest), 'invalid_row_identity');
  const nullKey = Buffer.from(r3.identity.subarray(0, r3.identity.length - 5));
  rejects(() => b().add(Buffer.concat([nullKey, Uint8Array.of(0x00)]), r3.digest), 'invalid_row_identity');
  rejects(() => new ScopeDigestBuilder(HASH.subarray(1), 'scope-a'), 'invalid_schema_hash');
  rejects(() => new ScopeDigestBuilder(HASH, ''), 'invalid_identifier');
});

const entryArb = fc
  .uniqueArray(fc.integer({ min: -1000, max: 1000 }), { minLength: 1, maxLength: 12 })
  .chain((keys) =>
    fc.tuple(
      fc.constant(keys),
      fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { minLength: keys.length, maxLength: keys.length }),
    ),
  )
  .map(([keys, digests]) => keys.map((k, i) => ({ identity: rowIdentityFromWire(k % 2 === 0 ? 'tbl_a' : 'tbl_long', 'id', 'int', k), digest: digests[i] ?? new Uint8Array(32) })));

test('the scope digest does not depend on input order (property)', () => {
  fc.assert(
    fc.property(entryArb, fc.integer(), (entries, seed) => {
      const shuffled = [...entries].sort((a, b) => ((a.digest[0] ?? 0) ^ seed) - ((b.digest[0] ?? 0) ^ seed));
      return toHex(scopeDigest(HASH, 's', entries)) === toHex(scopeDigest(HASH, 's', shuffled));
    }),
  );
});

test('changing any one pair changes the scope digest (property)', () => {
  fc.assert(
    fc.property(entryArb, fc.nat(), fc.integer({ min: 0, max: 31 }), (entries, pick, octet) => {
      const i = pick % entries.length;
      const before = toHex(scopeDigest(HASH, 's', entries));
      const changed = entries.map((e, k) => {
        if (k !== i) return e;
        const d = Uint8Array.from(e.digest);
        d[octet] = (d[octet] ?? 0) ^ 0x01;
        return { identity: e.identity, digest: d };
      });
      const dropped = entries.filter((_, k) => k !== i);
      return before !== toHex(scopeDigest(HASH, 's', changed)) && before !== toHex(scopeDigest(HASH, 's', dropped));
    }),
  );
});
