/**
 * The crash-safe local schema migration: what the journal holds before any
 * DDL, recovery from each phase without the network, the checks that turn a
 * damaged journal or table into an explicit schema error that changes
 * nothing, and completion only once the affected scopes are rebuilt.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SynchroClient } from '../../reference/client/client.ts';
import { inspectMigration } from '../../reference/client/journal/inspect.ts';
import { migrate, settleMigration } from '../../reference/client/journal/migration.ts';
import { buildPlan, PLAN_FORMAT, physicalShape, planTables } from '../../reference/client/journal/plan.ts';
import { type Tamper, tamperMigration } from '../../reference/client/journal/tamper.ts';
import { localSchema } from '../../reference/client/local/manifest.ts';
import { manifest, tempDb } from './fixtures.ts';

const offline = async (): Promise<never> => assert.fail('recovery must not use the network');

class Killed extends Error {}

/** A v1 client with a queued write and a local-only table, killed at `point` while migrating to v2. */
function killedWhileMigrating(point: string, affectedScopes: string[] = []): { path: string; v2: ReturnType<typeof manifest> } {
  const path = tempDb();
  const c = SynchroClient.open({ path, clientId: 'mig-1', transport: offline, bundledManifest: manifest() });
  c.execute("INSERT INTO orders(id, title) VALUES ('queued', 'kept')");
  c.transaction((tx) => {
    tx.execute('CREATE TABLE drafts (id TEXT PRIMARY KEY, body TEXT)');
    tx.execute("INSERT INTO drafts VALUES ('d-1', 'local only')");
  });
  for (const scope of affectedScopes) c.ctx.db.prepare('INSERT INTO _synchro_scopes(scope_id, cursor, rebuild_required) VALUES (?, ?, 0)').run(scope, 'c1');
  const v2 = manifest(2, true);
  c.ctx.crash = (reached) => {
    if (reached === point) throw new Killed(point);
  };
  assert.throws(() => migrate(c.ctx, v2, { action: affectedScopes.length > 0 ? 'rebuild_local' : 'replace', affectedScopes, cursorUpdates: {} }), Killed);
  c.close();
  return { path, v2 };
}

function reopen(path: string): SynchroClient {
  return SynchroClient.open({ path, clientId: 'mig-1', transport: offline, deferRecovery: true });
}

function columns(c: SynchroClient, table: string): string[] {
  return (c.query(`SELECT name FROM pragma_table_info('${table}') ORDER BY name`) as { name: string }[]).map((r) => r.name);
}

function kept(c: SynchroClient): unknown {
  return { mutations: c.inspectMutations(), drafts: c.query('SELECT * FROM drafts ORDER BY id') };
}

test('before any DDL the journal holds the verified target, a typed bound plan and the prepared phase; the tables and active schema are still the source', () => {
  const { path, v2 } = killedWhileMigrating('migration_prepared');
  const c = reopen(path);
  assert.equal(c.life.state, 'uninitialized');
  const { activeSchema, journal } = inspectMigration(c.ctx.db);
  assert.deepEqual(activeSchema, { version: 1, hash: manifest().schema_hash });
  assert.deepEqual(journal?.targetManifest, v2);
  assert.deepEqual(journal?.sourceSchema, { version: 1, hash: manifest().schema_hash });
  assert.deepEqual(journal?.targetSchema, { version: 2, hash: v2.schema_hash });
  assert.equal(journal?.planFormat, PLAN_FORMAT);
  assert.equal(journal?.phase, 'prepared');
  const plan = journal?.plan as { steps: Record<string, unknown>[] };
  assert.ok(plan.steps.length > 0 && plan.steps.every((s) => typeof s.kind === 'string' && !('sql' in s)));
  assert.ok(!columns(c, 'orders').includes('zone'));
  c.close();
});

for (const point of ['migration_prepared', 'migration_ddl_applied']) {
  test(`killed at ${point}: recovery finishes offline, commits the DDL once and keeps queue and local-only rows`, () => {
    const { path, v2 } = killedWhileMigrating(point);
    const c = reopen(path);
    const before = kept(c);
    assert.equal(c.recover().state, 'local_ready');
    const { activeSchema, journal } = inspectMigration(c.ctx.db);
    assert.deepEqual(activeSchema, { version: 2, hash: v2.schema_hash });
    assert.equal(journal?.phaseHistory.filter((p) => p.phase === 'ddl_applied').length, 1);
    assert.equal(journal?.phase, 'completed');
    assert.ok(columns(c, 'orders').includes('zone'));
    assert.deepEqual(kept(c), before);
    c.close();
  });
}

/** Each defect with the reason recovery must give for refusing it (so one check cannot stand in for another). */
const DEFECTS: [Tamper, RegExp][] = [
  [{ defect: 'target_body_byte' }, /target manifest does not verify/],
  [{ defect: 'plan_step_changed' }, /plan does not match its hash/],
  [{ defect: 'source_version', sourceVersion: 99 }, /source schema 99\/.* is not installed/],
  [{ defect: 'unknown_phase' }, /unknown phase/],
  [{ defect: 'target_removed' }, /has no target manifest/],
  [{ defect: 'raw_sql_step', sql: 'DROP TABLE drafts' }, /not a typed step/],
  [{ defect: 'physical_column', table: 'orders', column: 'rogue', sqlType: 'TEXT' }, /match neither the source nor the target/],
];

for (const [tamper, reason] of DEFECTS) {
  test(`a journal damaged by ${tamper.defect} ends in a non-retryable schema error that changes nothing`, () => {
    const { path } = killedWhileMigrating('migration_prepared');
    tamperMigration(path, tamper);
    const c = reopen(path);
    const before = { kept: kept(c), orders: columns(c, 'orders'), journal: inspectMigration(c.ctx.db) };
    assert.equal(c.recover().state, 'error');
    const failure = c.status().failure as { operation: string; retryable: boolean; code: string; message: string };
    assert.match(failure.message, reason);
    assert.equal(failure.operation, 'schema');
    assert.equal(failure.retryable, false);
    assert.match(failure.code, tamper.defect === 'physical_column' ? /^migration_physical_mismatch$/ : /^migration_journal_inconsistent$/);
    assert.deepEqual({ kept: kept(c), orders: columns(c, 'orders'), journal: inspectMigration(c.ctx.db) }, before);
    c.close();
  });
}

test('the plan is a function of the two manifests, the action, the scopes and the physical shape', () => {
  const path = tempDb();
  const c = SynchroClient.open({ path, clientId: 'mig-2', transport: offline, bundledManifest: manifest() });
  const source = localSchema(manifest());
  const target = localSchema(manifest(2, true));
  const shape = physicalShape(c.ctx, planTables(source, target));
  const one = JSON.stringify(buildPlan(source, target, 'rebuild_local', ['b', 'a'], shape));
  const two = JSON.stringify(buildPlan(source, target, 'rebuild_local', ['a', 'b'], shape));
  assert.equal(one, two);
  assert.notEqual(JSON.stringify(buildPlan(source, target, 'replace', ['a', 'b'], shape)), one);
  c.close();
});

test('a migration with affected scopes stays applied until every one is rebuilt, then completes', () => {
  const { path } = killedWhileMigrating('migration_ddl_applied', ['user:alice']);
  const c = reopen(path);
  assert.equal(c.recover().state, 'local_ready');
  assert.equal(inspectMigration(c.ctx.db).journal?.phase, 'applied');
  const scope = c.inspectScopes().scopes.find((s) => s.scopeId === 'user:alice');
  assert.deepEqual({ cursor: scope?.cursor, rebuildRequired: scope?.rebuildRequired }, { cursor: null, rebuildRequired: true });
  c.ctx.db.transaction(() => {
    c.ctx.db.prepare("UPDATE _synchro_scopes SET rebuild_required = 0, cursor = 'c2' WHERE scope_id = 'user:alice'").run();
    settleMigration(c.ctx);
  })();
  assert.equal(inspectMigration(c.ctx.db).journal?.phase, 'completed');
  c.close();
});
