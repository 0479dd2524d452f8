import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { writeRow } from '../../reference/client/apply/rows.ts';
import { SynchroClient } from '../../reference/client/client.ts';
import { SqlRefused } from '../../reference/client/errors.ts';
import { serverApply } from '../../reference/client/local/metadata.ts';
import { FakeServer } from './fake-server.ts';
import { manifest, openClient } from './fixtures.ts';

let server: FakeServer;
before(async () => {
  server = await new FakeServer(manifest()).start();
});
after(() => server.stop());

async function connected(id: string): Promise<SynchroClient> {
  const c = openClient(server, id);
  assert.equal((await c.syncNow()).completion, 'idle');
  return c;
}

const queue = (c: SynchroClient) => c.inspectMutations().map((m) => [m.operation, m.status, m.recordId]);

test('insert, update and delete are captured with only authored fields', async () => {
  const c = await connected('surface-1');
  c.execute("INSERT INTO orders(id, title, qty) VALUES ('a', 'x', 1)");
  c.execute("UPDATE orders SET title = NULL WHERE id = 'a'");
  c.execute("DELETE FROM notes WHERE id = 99"); // no row, no capture
  const ms = c.inspectMutations();
  assert.equal(ms.length, 2);
  assert.deepEqual(ms[0]?.columns, { fld_orders_paid: null, fld_orders_qty: 1, fld_orders_title: 'x' });
  assert.deepEqual(ms[1]?.columns, { fld_orders_title: null }, 'an update carries only the changed field, null kept as a value');
  assert.match(ms[0]?.mutationId ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(ms[1]?.dependsOnMutationId, ms[0]?.mutationId);
  c.close();
});

test('deleting from a soft-delete table keeps the row and captures one delete', async () => {
  const c = await connected('surface-2');
  c.execute("INSERT INTO orders(id, title) VALUES ('s', 't')");
  await c.syncNow();
  c.execute("DELETE FROM orders WHERE id = 's'");
  const row = c.query("SELECT deleted_at FROM orders WHERE id = 's'")[0] as { deleted_at: string | null };
  assert.match(String(row.deleted_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  const pending = c.inspectMutations().filter((m) => m.status === 'pending');
  assert.deepEqual(pending.map((m) => m.operation), ['delete']);
  c.close();
});

test('changing a synced primary key fails and leaves no trace', async () => {
  const c = await connected('surface-3');
  c.execute("INSERT INTO orders(id, title) VALUES ('k', 't')");
  const before = queue(c);
  assert.throws(() => c.execute("UPDATE orders SET id = 'k2' WHERE id = 'k'"), /synced primary key cannot change/);
  assert.deepEqual(queue(c), before);
  assert.equal(c.query("SELECT id FROM orders WHERE id = 'k'").length, 1);
  c.close();
});

test('transaction control, metadata writes, trigger DDL and upserts are refused', async () => {
  const c = await connected('surface-4');
  const before = queue(c);
  for (const sql of [
    'BEGIN',
    'COMMIT',
    'SAVEPOINT x',
    "UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'",
    'DELETE FROM _synchro_pending_changes',
    'DROP TRIGGER "_synchro_cdc_insert_orders"',
    'CREATE TRIGGER t AFTER INSERT ON notes BEGIN SELECT 1; END',
    "INSERT OR REPLACE INTO orders(id) VALUES ('z')",
    "INSERT INTO orders(id) VALUES ('z') ON CONFLICT(id) DO UPDATE SET title = 'y'",
    'ALTER TABLE orders ADD COLUMN extra TEXT',
    'PRAGMA user_version = 3',
  ]) {
    assert.throws(() => c.execute(sql), SqlRefused, sql);
  }
  assert.deepEqual(queue(c), before);
  c.close();
});

test('a write is refused when the capture triggers were tampered with', async () => {
  const c = await connected('surface-5');
  c.ctx.db.exec('DROP TRIGGER "_synchro_cdc_update_orders"');
  assert.throws(() => c.execute("INSERT INTO orders(id) VALUES ('q')"), /capture triggers/);
  assert.equal(c.query("SELECT id FROM orders WHERE id = 'q'").length, 0);
  c.close();
});

test('server-originated writes create no mutation', async () => {
  const c = await connected('surface-6');
  const table = c.ctx.schema?.byName.get('notes');
  assert.ok(table);
  serverApply(c.ctx.db, () => writeRow(c.ctx, table, { fld_notes_id: 5, fld_notes_body: 'from server' }));
  assert.equal(c.query('SELECT body FROM notes WHERE id = 5').length, 1);
  assert.equal(c.inspectMutations().length, 0);
  c.close();
});

test('before a verified manifest, synced writes are refused and local-only tables work', () => {
  const c = SynchroClient.open({ path: ':memory:', clientId: 'fresh', transport: async () => assert.fail('no network expected') });
  // No manifest was installed: the write is refused with a typed code, not left to fail inside SQLite.
  assert.throws(() => c.execute("INSERT INTO orders(id) VALUES ('a')"), (e: unknown) => (e as { code?: string }).code === 'no_verified_manifest');
  c.execute('CREATE TABLE drafts (id INTEGER PRIMARY KEY, text TEXT)');
  c.execute("INSERT INTO drafts(text) VALUES ('local only')");
  assert.equal(c.query('SELECT * FROM drafts').length, 1);
  assert.equal(c.inspectMutations().length, 0);
  // Capture itself refuses when schema metadata does not match a verified archive.
  c.close();
});

test('a bundled manifest allows offline writes that are pushed with the same IDs at first connect', async () => {
  const c = SynchroClient.open({ path: ':memory:', clientId: 'bundled', transport: openClient(server, 'unused').ctx.transport, bundledManifest: manifest() });
  c.execute("INSERT INTO orders(id, title) VALUES ('off', 'line')");
  const id = c.inspectMutations()[0]?.mutationId;
  assert.equal(c.life.state, 'local_ready');
  assert.equal((await c.syncNow()).completion, 'idle');
  const m = c.inspectMutations()[0];
  assert.equal(m?.mutationId, id);
  assert.equal(m?.status, 'accepted');
  assert.equal(server.rows.get('tbl_orders')?.get('off')?.row.fld_orders_title, 'line');
  c.close();
});

test('a tampered bundled manifest is refused', () => {
  const bad = { ...manifest(), schema_hash: 'f'.repeat(64) };
  const c = SynchroClient.open({ path: ':memory:', clientId: 'tampered', transport: async () => assert.fail('no network'), bundledManifest: bad });
  assert.equal(c.life.state, 'error');
  // No manifest was installed: the write is refused with a typed code, not left to fail inside SQLite.
  assert.throws(() => c.execute("INSERT INTO orders(id) VALUES ('a')"), (e: unknown) => (e as { code?: string }).code === 'no_verified_manifest');
  c.close();
});

test('without a manifest a write to an unknown table is refused, a local-only table stays writable', () => {
  const c = SynchroClient.open({ path: ':memory:', clientId: 'no-manifest', transport: async () => assert.fail('no network') });
  assert.throws(() => c.execute("INSERT INTO orders(id) VALUES ('a')"), (e: unknown) => (e as { code?: string }).code === 'no_verified_manifest');
  c.execute('CREATE TABLE drafts (id TEXT PRIMARY KEY, body TEXT)');
  assert.equal(c.execute("INSERT INTO drafts(id, body) VALUES ('d1', 'kept')").changes, 1);
  c.close();
});

test('a lifecycle call inside a transaction callback is rejected', async () => {
  const c = await connected('surface-7');
  let attempt: Promise<unknown> | undefined;
  c.transaction(() => {
    attempt = c.syncNow();
  });
  await assert.rejects(attempt as Promise<unknown>, /inside an application transaction/);
  const requests = server.requests.length;
  assert.throws(() => c.transaction(() => c.stop()), /inside an application transaction/);
  assert.equal(c.life.state, 'ready');
  assert.equal(server.requests.length, requests);
  c.close();
});
