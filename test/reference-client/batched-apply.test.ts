/**
 * Applying a rebuild page writes each table with multi-row statements. These
 * tests pin what that must not change: rows land in the order given whatever
 * the chunking, a failing row takes the whole transaction with it, SQLite
 * orders identities the way the scope digest needs, and a page that mixes
 * tables and meets a protected row leaves the same state row by row.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { checksumObject, digestRow, fromHex, readTableShape, scopeDigest, toHex } from '../../harness/codec/index.ts';
import type { RebuildResponse, SchemaManifest } from '../../harness/wire/generated.ts';
import { addScope, localScopeDigest } from '../../reference/client/apply/scopes.ts';
import { SynchroClient } from '../../reference/client/client.ts';
import { serverApply } from '../../reference/client/local/metadata.ts';
import { runMultiRow } from '../../reference/client/local/statements.ts';
import { applyRebuildPage, finishRebuild, rebuildRequest, startAttempt } from '../../reference/client/rebuild/rebuild.ts';
import { manifest, tempDb } from './fixtures.ts';

function ordered(width: number): Database.Database {
  const db = new Database(':memory:');
  const cols = Array.from({ length: width }, (_, c) => `c${c}`);
  db.exec(`CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, ${cols.map((c) => `${c} NOT NULL`).join(', ')})`);
  return db;
}

test('runMultiRow writes every row once, in the order given, for any count and width', () => {
  // Width 700 allows only four rows per statement, so its small counts cover every chunk size there.
  for (const [width, counts] of [[1, [0, 1, 2, 63, 64, 65, 130, 1000]], [6, [0, 1, 63, 64, 65, 130]], [700, [0, 1, 3, 4, 5, 9]]] as const) {
    for (const count of counts) {
      const db = ordered(width);
      const rows = Array.from({ length: count }, (_, r) => Array.from({ length: width }, (_, c) => (c === 0 ? r : `${r}:${c}`)));
      const cols = Array.from({ length: width }, (_, c) => `c${c}`);
      db.transaction(() => runMultiRow(db, `INSERT INTO t (${cols.join(', ')})`, '', width, rows))();
      const stored = db.prepare(`SELECT ${cols.join(', ')} FROM t ORDER BY seq`).raw(true).all();
      assert.deepEqual(stored, rows, `width ${width}, ${count} rows`);
      db.close();
    }
  }
});

test('runMultiRow refuses a row of the wrong width and a failing row rolls the whole transaction back', () => {
  const db = ordered(2);
  assert.throws(() => runMultiRow(db, 'INSERT INTO t (c0, c1)', '', 2, [[1, 2], [3]]), /has 1 values, expected 2/);
  const rows = Array.from({ length: 100 }, (_, r) => [r, r === 70 ? null : r]);
  assert.throws(() => db.transaction(() => runMultiRow(db, 'INSERT INTO t (c0, c1)', '', 2, rows))(), /NOT NULL constraint failed: t\.c1/);
  assert.equal((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 0, 'no row of the failed transaction is left');
  db.close();
});

test('SQLite orders BLOBs exactly as Buffer.compare does, prefixes first (the order the scope digest hashes in)', () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE b (k BLOB NOT NULL)');
  const insert = db.prepare('INSERT INTO b (k) VALUES (?)');
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 6 }), { maxLength: 40 }), (blobs) => {
      db.exec('DELETE FROM b');
      for (const k of blobs) insert.run(Buffer.from(k));
      const bySqlite = (db.prepare('SELECT k FROM b ORDER BY k').raw(true).all() as [Buffer][]).map(([k]) => toHex(k));
      const byNode = blobs.map((k) => Buffer.from(k)).sort(Buffer.compare).map((k) => toHex(k));
      assert.deepEqual(bySqlite, byNode);
    }),
  );
  db.close();
});

function record(m: SchemaManifest, tableId: string, row: Record<string, string | number | boolean | null>, version: string) {
  const table = m.tables.find((t) => t.table_id === tableId);
  if (table === undefined) throw new Error(`no ${tableId}`);
  const shape = readTableShape(table);
  const d = digestRow({ schemaHash: m.schema_hash, table: shape, row, serverVersion: version });
  const pkField = table.primary_key_field_id;
  const key = row[pkField];
  if (typeof key !== 'string' && typeof key !== 'number') throw new Error(`the key of a ${tableId} row is a string or a number`);
  return { record: { table: tableId, pk: { [pkField]: key }, row, row_checksum: checksumObject(d.digest), server_version: version }, entry: d };
}

test('a rebuild page mixing tables writes versions, provenance and rows as the records say, and leaves a protected row as written locally', () => {
  const m = manifest();
  const client = SynchroClient.open({
    path: tempDb(),
    clientId: 'batched',
    transport: async () => {
      throw new Error('pages are applied directly');
    },
    bundledManifest: m,
  });
  try {
    const db = client.ctx.db;
    serverApply(db, () => addScope(client.ctx, 'all', null));
    db.prepare(`INSERT INTO _synchro_meta(key, value) VALUES ('client_generation', '1') ON CONFLICT(key) DO UPDATE SET value = '1'`).run();
    // A local write to order "o2" is still pending: the rebuild records its server version but keeps the local row.
    client.execute(`INSERT INTO orders (id, title, qty, paid) VALUES ('o2', 'local title', 9, 1)`);
    const made = [
      record(m, 'tbl_notes', { fld_notes_id: 1, fld_notes_body: 'one' }, 'v1'),
      record(m, 'tbl_orders', { fld_orders_id: 'o1', fld_orders_title: 'first', fld_orders_qty: 1, fld_orders_paid: true, fld_orders_deleted_at: null, fld_orders_updated_at: '2024-01-01T00:00:00.000000Z' }, 'v2'),
      record(m, 'tbl_orders', { fld_orders_id: 'o2', fld_orders_title: 'server title', fld_orders_qty: 2, fld_orders_paid: false, fld_orders_deleted_at: null, fld_orders_updated_at: null }, 'v3'),
      record(m, 'tbl_notes', { fld_notes_id: 2, fld_notes_body: null }, 'v4'),
      record(m, 'tbl_notes', { fld_notes_id: 3, fld_notes_body: 'three' }, 'v5'),
      record(m, 'tbl_orders', { fld_orders_id: 'o3', fld_orders_title: null, fld_orders_qty: null, fld_orders_paid: null, fld_orders_deleted_at: null, fld_orders_updated_at: null }, 'v6'),
    ];
    const attempt = startAttempt(client.ctx, 'all');
    const page: RebuildResponse = {
      scope: 'all',
      records: made.map((x) => x.record),
      cursor: null,
      has_more: false,
      final_scope_cursor: 'c-final',
      checksum: { algorithm: 'sha256', version: 1, encoding: 'hex', digest: toHex(scopeDigest(fromHex(m.schema_hash), 'all', made.map((x) => x.entry))) },
    };
    // Spelled with indentation, as no re-serialization would spell it: the receipt must keep these octets.
    const body = Buffer.from(JSON.stringify(page, null, 2), 'utf8');
    const request = rebuildRequest(client.ctx, attempt);
    applyRebuildPage(client.ctx, attempt, request, page, body);
    assert.deepEqual(db.prepare('SELECT page, request_json, response_json FROM _synchro_rebuild_page_receipts WHERE rebuild_id = ?').all(attempt.rebuild_id), [{ page: 0, request_json: request, response_json: body }]);
    assert.deepEqual(db.prepare('SELECT id, body FROM notes ORDER BY id').all(), [
      { id: 1, body: 'one' },
      { id: 2, body: null },
      { id: 3, body: 'three' },
    ]);
    assert.deepEqual(db.prepare('SELECT id, title, qty, paid, updated_at FROM orders ORDER BY id').all(), [
      { id: 'o1', title: 'first', qty: 1, paid: 1, updated_at: '2024-01-01T00:00:00.000000Z' },
      { id: 'o2', title: 'local title', qty: 9, paid: 1, updated_at: null },
      { id: 'o3', title: null, qty: null, paid: null, updated_at: null },
    ]);
    const versions = db.prepare('SELECT table_id, record_id, server_version, row_identity, row_digest FROM _synchro_row_versions ORDER BY server_version').all() as {
      table_id: string;
      record_id: string;
      server_version: string;
      row_identity: Buffer;
      row_digest: Buffer;
    }[];
    assert.deepEqual(
      versions.map((v) => [v.table_id, v.record_id, v.server_version, toHex(v.row_identity), toHex(v.row_digest)]),
      made.map((x) => [x.record.table, String(Object.values(x.record.pk)[0]), x.record.server_version, toHex(x.entry.identity), toHex(x.entry.digest)]),
    );
    assert.deepEqual(
      db.prepare('SELECT table_id, record_id, generation FROM _synchro_scope_rows WHERE scope_id = ? ORDER BY table_id, record_id').all('all'),
      made.map((x) => ({ table_id: x.record.table, record_id: String(Object.values(x.record.pk)[0]), generation: attempt.generation })).sort((a, b) => (a.table_id + a.record_id).localeCompare(b.table_id + b.record_id)),
    );
    assert.equal(client.inspectMutations().length, 1, 'applying the page captured nothing: only the local write is queued');
    assert.equal(localScopeDigest(client.ctx, 'all'), page.checksum?.digest, 'the stored identities and digests give the server scope digest');
    assert.equal(finishRebuild(client.ctx, 'all'), true);
  } finally {
    client.close();
  }
});
