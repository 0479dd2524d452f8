import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { SynchroClient } from '../../reference/client/client.ts';
import { PLAN_FORMAT } from '../../reference/client/journal/plan.ts';
import { FakeServer } from './fake-server.ts';
import { manifest, openClient, tempDb } from './fixtures.ts';

const offline = async (): Promise<never> => assert.fail('no network expected');

test('the plan and target are journalled; a journal whose plan does not match its hash enters error', () => {
  const path = tempDb();
  const c = SynchroClient.open({ path, clientId: 'journal-1', transport: offline, bundledManifest: manifest() });
  assert.equal(c.life.state, 'local_ready');
  c.close();
  // Simulate a journal left behind with a tampered plan.
  const db = new Database(path);
  const v2 = manifest(2, true);
  db.prepare(
    `INSERT OR REPLACE INTO _synchro_migration_journal(id, source_version, source_hash, target_version, target_hash, target_manifest_json, action, affected_scopes_json, plan_format, plan_json, plan_hash, cursor_updates_json, phase, phase_history_json) VALUES (1, 1, ?, ?, ?, ?, 'replace', '[]', ?, '{"steps":[]}', 'bad', '{}', 'prepared', '[]')`,
  ).run(manifest().schema_hash, v2.schema_version, v2.schema_hash, JSON.stringify(v2), PLAN_FORMAT);
  db.close();
  const again = SynchroClient.open({ path, clientId: 'journal-1', transport: offline });
  assert.equal(again.life.state, 'error');
  assert.equal((again.status().failure as { code: string }).code, 'migration_journal_inconsistent');
  again.close();
});

test('a server schema change is installed through the journal and keeps queued intent with its authored schema', async () => {
  const server = await new FakeServer(manifest()).start();
  try {
    const c = openClient(server, 'journal-2', { path: tempDb() });
    assert.equal((await c.syncNow()).completion, 'idle');
    c.execute("INSERT INTO orders(id, title) VALUES ('kept', 'v1')");
    const queued = c.inspectMutations()[0];
    const v2 = manifest(2, true);
    server.setManifest(v2);
    assert.equal((await c.syncNow()).completion, 'idle');
    assert.equal(c.inspectScopes().schema?.hash, v2.schema_hash);
    const after = c.inspectMutations()[0];
    assert.equal(after?.mutationId, queued?.mutationId);
    assert.deepEqual(after?.authoredSchema, queued?.authoredSchema);
    assert.equal(after?.status, 'accepted');
    c.execute("UPDATE orders SET zone = 'north' WHERE id = 'kept'");
    assert.equal((await c.syncNow()).completion, 'idle');
    assert.equal(server.rows.get('tbl_orders')?.get('kept')?.row.fld_orders_zone, 'north');
    assert.match(c.life.log.join(' '), /connecting schema_applying ready/);
    c.close();
  } finally {
    await server.stop();
  }
});
