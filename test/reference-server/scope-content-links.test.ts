/**
 * Scope digests built from the last version's entries and the content links since (decision 428).
 * The entries arithmetic is checked against entries rebuilt from scratch; the database path is
 * checked against a reader with nothing kept (a catalog of its own), which aggregates the whole
 * scope, after each kind of write to the scope's rows.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import { digestTag, scopeChecksums } from '../../reference/server/core/checksums.ts';
import { ManifestStore } from '../../reference/server/core/manifests.ts';
import { type EntryChange, ScopeEntries } from '../../reference/server/core/scope-entries.ts';
import { type Harness, useEnv, withCaptureServer } from './helpers.ts';

const env = useEnv();

/** The entries' octets of (identity, digest) pairs, sorted by identity as bytea sorts. */
function body(pairs: Array<[Buffer, Buffer]>): Buffer {
  const sorted = [...pairs].sort(([a], [b]) => Buffer.compare(a, b));
  return Buffer.concat(
    sorted.map(([identity, digest]) => {
      const length = Buffer.alloc(8);
      length.writeBigUInt64BE(BigInt(identity.length));
      return Buffer.concat([length, identity, digest]);
    }),
  );
}

/** A small random generator with a seed, so a failure can be replayed. */
function generator(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s / 2 ** 32;
  };
}

test('entries with changes applied, round after round, equal the entries rebuilt from scratch, over 300 generated cases', () => {
  const header = Buffer.from('header');
  for (let seed = 1; seed <= 300; seed++) {
    const random = generator(seed);
    // Short identities over few octet values, so prefixes and equal identities are common.
    const identity = () => Buffer.from(Array.from({ length: 1 + Math.floor(random() * 3) }, () => Math.floor(random() * 3)));
    const digest = () => createHash('sha256').update(String(random())).digest();
    const state = new Map<string, [Buffer, Buffer]>();
    for (let k = Math.floor(random() * 12); k > 0; k--) {
      const id = identity();
      state.set(id.toString('hex'), [id, digest()]);
    }
    let entries = ScopeEntries.parse(body([...state.values()]));
    for (let round = 0; round < 4; round++) {
      assert.ok(entries !== null, `seed ${seed} round ${round}`);
      const changes = new Map<string, EntryChange>();
      for (let k = Math.floor(random() * 6); k > 0; k--) {
        const id = identity();
        const change = { identity: id, digest: random() < 0.4 ? null : digest() };
        changes.set(id.toString('hex'), change);
        if (change.digest === null) state.delete(id.toString('hex'));
        else state.set(id.toString('hex'), [id, change.digest]);
      }
      entries = entries.withChanges([...changes.values()]);
      const expected = body([...state.values()]);
      assert.ok(entries !== null, `seed ${seed} round ${round}: changes`);
      assert.deepEqual(entries.contiguous(), expected, `seed ${seed} round ${round}`);
      assert.equal(entries.count, state.size, `seed ${seed} round ${round}`);
      assert.deepEqual(entries.digest(header), (ScopeEntries.parse(expected) as ScopeEntries).digest(header), `seed ${seed} round ${round}`);
    }
  }
});

test('a version whose changes outgrow the overlay is written out whole and keeps the same digest', () => {
  const header = Buffer.from('header');
  const id = (k: number) => Buffer.from(`row-${String(k).padStart(4, '0')}`);
  const state = new Map<number, Buffer>();
  for (let k = 0; k < 1000; k += 2) state.set(k, createHash('sha256').update(`first ${k}`).digest());
  const pairs = () => [...state].map(([k, d]) => [id(k), d] as [Buffer, Buffer]);
  let entries = ScopeEntries.parse(body(pairs())) as ScopeEntries;
  // One change per version, 600 versions: adds, replacements and removals well past the overlay's limit.
  for (let step = 0; step < 600; step++) {
    const k = (step * 7) % 1000;
    const digest = step % 3 === 0 ? null : createHash('sha256').update(`step ${step}`).digest();
    if (digest === null) state.delete(k);
    else state.set(k, digest);
    entries = entries.withChanges([{ identity: id(k), digest }]) as ScopeEntries;
    assert.ok(entries !== null, `step ${step}`);
    assert.equal(entries.count, state.size, `step ${step}`);
  }
  assert.deepEqual(entries.contiguous(), body(pairs()));
  assert.deepEqual(entries.digest(header), (ScopeEntries.parse(body(pairs())) as ScopeEntries).digest(header));
});

test('entries out of order, repeated, or cut short are refused, and so is a change naming an identity twice', () => {
  const a = Buffer.from([1]);
  const b = Buffer.from([2]);
  const d = Buffer.alloc(32, 7);
  const ordered = body([
    [a, d],
    [b, d],
  ]);
  assert.ok(ScopeEntries.parse(ordered) !== null);
  assert.equal(ScopeEntries.parse(Buffer.concat([ordered.subarray(41), ordered.subarray(0, 41)])), null, 'out of order');
  assert.equal(ScopeEntries.parse(Buffer.concat([ordered.subarray(0, 41), ordered.subarray(0, 41)])), null, 'repeated');
  assert.equal(ScopeEntries.parse(ordered.subarray(0, ordered.length - 1)), null, 'cut short');
  assert.equal(
    (ScopeEntries.parse(ordered) as ScopeEntries).withChanges([
      { identity: a, digest: null },
      { identity: Buffer.from(a), digest: d },
    ]),
    null,
  );
});

const SETUP = `
CREATE TABLE public.notes (id text PRIMARY KEY, body text NOT NULL DEFAULT '');
SELECT synchro.synchro_register_table('public.notes');
`;

/** Statements of this process that aggregate a whole scope's entries. */
let wholeScopeReads = 0;
const original = pg.Client.prototype.query;
// biome-ignore lint/suspicious/noExplicitAny: the spy forwards whatever node-postgres accepts
(pg.Client.prototype as any).query = function (this: pg.Client, ...args: any[]) {
  const config = args[0] as string | { text?: string };
  const text = typeof config === 'string' ? config : config?.text;
  if (typeof text === 'string' && text.includes('string_agg(int8send(octet_length(pk_bytes))')) wholeScopeReads++;
  return (original as (...a: unknown[]) => unknown).apply(this, args);
};

/** The registered table's catalog, its digest tag, and the checksums of `scopes` read in a snapshot of the server's pool with `tables` (a copy of the catalog's map keeps nothing). */
async function readerOf(h: Harness) {
  const catalog = await new ManifestStore(h.server.pool).catalog();
  const table = [...catalog.tables.values()][0];
  assert.ok(table !== undefined);
  const checksums = async (tables: typeof catalog.tables, scopes: string[]) => {
    const db = await h.server.pool.connect();
    try {
      await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL ROLE synchro_owner');
      return await scopeChecksums(db, tables, catalog.current.hash, scopes);
    } finally {
      await db.query('ROLLBACK');
      db.release();
    }
  };
  return { catalog, table, tag: digestTag(table, catalog.current.hash), checksums };
}

test('after each kind of write to scope rows, the checksum built from the links equals the whole-scope one, and a truncation falls back to the whole scope', async () => {
  await withCaptureServer(env(), SETUP, async (h) => {
    const { catalog, table, tag, checksums: read } = await readerOf(h);
    const scopes = ['links:a', 'links:b'];
    const checksums = (tables: typeof catalog.tables) => read(tables, scopes);
    /** Both readers after one write: the one keeping entries, and a fresh one reading every scope whole. */
    const compare = async (what: string, linked: boolean) => {
      const reads = wholeScopeReads;
      const kept = await checksums(catalog.tables);
      assert.equal(wholeScopeReads - reads, linked ? 0 : scopes.length, `${what}: whole-scope reads of the reader keeping entries`);
      assert.deepEqual(kept, await checksums(new Map(catalog.tables)), what);
    };
    const write = (sql: string) => h.sql.query(sql);
    const row = (scope: string, id: number, digestSeed: string) =>
      `('${scope}', '${table.tableId}', '\\x${Buffer.from(`id-${id}`).toString('hex')}', 'id-${id}', '{}', 'v1', sha256('${digestSeed}'::bytea), '${tag}')`;
    const insert = (rows: string[]) => write(`INSERT INTO synchro.scope_rows (scope_id, table_id, pk_bytes, pk_text, row_wire, server_version, row_digest, digest_tag) VALUES ${rows.join(', ')}`);

    await insert(Array.from({ length: 40 }, (_, k) => row(scopes[k % 2] as string, k, `first ${k}`)));
    await compare('the first read of each scope', false);
    await insert([row('links:a', 100, 'added'), row('links:b', 101, 'added'), row('links:a', 102, 'added')]);
    await compare('an insert into both scopes', true);
    await write(`UPDATE synchro.scope_rows SET row_digest = sha256('changed'::bytea), server_version = 'v2' WHERE pk_text IN ('id-4', 'id-5')`);
    await compare('an update of one row per scope', true);
    await write(`DELETE FROM synchro.scope_rows WHERE pk_text IN ('id-0', 'id-100', 'id-7')`);
    await compare('a delete', true);
    await write(`UPDATE synchro.scope_rows SET scope_id = 'links:b' WHERE pk_text = 'id-2'`);
    await compare('a row moved from one scope to the other', true);
    // Two statements in one transaction, the second undoing the first: two links walked in one read.
    await write(`BEGIN; DELETE FROM synchro.scope_rows WHERE pk_text = 'id-6'; INSERT INTO synchro.scope_rows (scope_id, table_id, pk_bytes, pk_text, row_wire, server_version, row_digest, digest_tag) VALUES ${row('links:a', 6, 'back')}; COMMIT`);
    await compare('a row deleted and written again', true);
    // A row whose stored digest a writer dropped: the scope is left to the row-by-row path, still exact.
    await write(`UPDATE synchro.scope_rows SET row_digest = NULL, digest_tag = NULL WHERE pk_text = 'id-102'`);
    const reads = wholeScopeReads;
    await assert.rejects(checksums(catalog.tables), 'a row whose wire body fits no shape is an integrity failure on the row-by-row path');
    assert.equal(wholeScopeReads - reads, 1, 'the linked read found a row without a digest and read the scope whole');
    await write(`DELETE FROM synchro.scope_rows WHERE pk_text = 'id-102'`);
    await compare('the row without a digest removed', true);
    // A stored digest of the wrong length is no digest: neither path takes it.
    await write(`UPDATE synchro.scope_rows SET row_digest = '\\x00'::bytea WHERE pk_text = 'id-8'`);
    const before = wholeScopeReads;
    await assert.rejects(checksums(catalog.tables), 'the row-by-row path refuses the row');
    assert.equal(wholeScopeReads - before, 1, 'the linked read refused the short digest and read the scope whole');
    await write(`DELETE FROM synchro.scope_rows WHERE pk_text = 'id-8'`);
    await compare('the row with a short digest removed', true);
    await write('TRUNCATE synchro.scope_rows');
    await insert([row('links:a', 1, 'after truncation'), row('links:b', 2, 'after truncation')]);
    await compare('after a truncation', false);
    const { rows } = await h.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM synchro.scope_content_links WHERE scope_id = ANY ($1)`, [scopes]);
    assert.ok(rows[0] !== undefined && rows[0].n > 0);
  });
});

test('a random identity set survives a long chain of small writes read one link at a time', async () => {
  await withCaptureServer(env(), SETUP, async (h) => {
    const { catalog, table, tag, checksums } = await readerOf(h);
    const read = (tables: typeof catalog.tables) => checksums(tables, ['chain']);
    const random = generator(42);
    for (let step = 0; step < 30; step++) {
      const id = randomBytes(1 + Math.floor(random() * 4)).toString('hex');
      const remove = random() < 0.3;
      await h.sql.query(
        remove
          ? `DELETE FROM synchro.scope_rows WHERE scope_id = 'chain' AND pk_text = (SELECT min(pk_text) FROM synchro.scope_rows WHERE scope_id = 'chain')`
          : `INSERT INTO synchro.scope_rows (scope_id, table_id, pk_bytes, pk_text, row_wire, server_version, row_digest, digest_tag)
             VALUES ('chain', $1, decode($2, 'hex'), $2, '{}', 'v1', sha256($3::bytea), $4)
             ON CONFLICT (scope_id, table_id, pk_bytes) DO UPDATE SET row_digest = excluded.row_digest, digest_tag = excluded.digest_tag, server_version = 'v2'`,
        remove ? [] : [table.tableId, id, Buffer.from(`step ${step}`), tag],
      );
      assert.deepEqual(await read(catalog.tables), await read(new Map(catalog.tables)), `step ${step}`);
    }
  });
});
