import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { INITDB_CACHE_VARIABLE } from '../../reference/server/db/cluster.ts';
import { type Cluster, startCluster } from '../../reference/server/db/index.ts';

let cluster: Cluster;

before(async () => {
  cluster = await startCluster({});
});
after(async () => {
  await cluster?.stop();
});

async function one<T>(url: string, sql: string): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows[0] as T;
  } finally {
    await client.end();
  }
}

test('the embedded cluster is PostgreSQL 18 with logical WAL', async () => {
  const row = await one<{ v: string; wal: string }>(cluster.adminUrl, "SELECT current_setting('server_version_num') v, current_setting('wal_level') wal");
  assert.equal(Math.floor(Number(row.v) / 10000), 18);
  assert.equal(row.wal, 'logical');
});

test('a template clones twice, each clone has the schema, and a clone takes well under a second', async () => {
  await cluster.createTemplate('tpl_clone');
  const timings: number[] = [];
  for (const name of ['clone_a', 'clone_b']) {
    const t0 = performance.now();
    await cluster.cloneDatabase('tpl_clone', name);
    timings.push(performance.now() - t0);
    const row = await one<{ n: number }>(cluster.urlFor(name), "SELECT count(*)::int n FROM pg_namespace WHERE nspname = 'synchro'");
    assert.equal(row.n, 1);
  }
  for (const ms of timings) assert.ok(ms < 1000, `clone took ${ms.toFixed(0)} ms`);
  // Roles are cluster-wide: a second template installs without tripping over them.
  await cluster.createTemplate('tpl_second');
  await cluster.dropDatabase('clone_a');
  const gone = await one<{ n: number }>(cluster.adminUrl, "SELECT count(*)::int n FROM pg_database WHERE datname = 'clone_a'");
  assert.equal(gone.n, 0);
});

test('the six group roles have no login or special attributes and PUBLIC has no access', async () => {
  await cluster.createTemplate('tpl_roles');
  const url = cluster.urlFor('tpl_roles');
  const roles = await one<{ n: number }>(
    url,
    `SELECT count(*)::int n FROM pg_roles WHERE rolname IN ('synchro_owner','synchro_adapter','synchro_seed','synchro_monitor','synchro_operator','synchro_worker')
       AND NOT (rolcanlogin OR rolsuper OR rolcreatedb OR rolcreaterole OR rolbypassrls OR rolreplication)`,
  );
  assert.equal(roles.n, 6);
  const fns = await one<{ n: number }>(
    url,
    `SELECT count(*)::int n FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'synchro' AND has_function_privilege('public', p.oid, 'EXECUTE')`,
  );
  assert.equal(fns.n, 0);
  const tables = await one<{ n: number }>(
    url,
    `SELECT count(*)::int n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'synchro' AND c.relkind = 'r' AND (has_table_privilege('public', c.oid, 'SELECT')
        OR has_table_privilege('synchro_adapter', c.oid, 'SELECT'))`,
  );
  assert.equal(tables.n, 0);
  const grants = await one<{ adapter: boolean; seed: boolean; monitor: boolean }>(
    url,
    `SELECT has_function_privilege('synchro_adapter', 'synchro.synchro_readiness()', 'EXECUTE') adapter,
            has_function_privilege('synchro_seed', 'synchro.synchro_readiness()', 'EXECUTE') seed,
            has_function_privilege('synchro_monitor', 'synchro.synchro_health_detail()', 'EXECUTE') monitor`,
  );
  assert.deepEqual(grants, { adapter: true, seed: false, monitor: true });
});

test('DATABASE_URL attaches to an existing server after checking it; bad choices fail with a clear message', async () => {
  const attached = await startCluster({ DATABASE_URL: cluster.urlFor('postgres') });
  await attached.createTemplate('tpl_attached');
  await attached.stop(); // an external server is left running
  const row = await one<{ n: number }>(cluster.urlFor('tpl_attached'), "SELECT count(*)::int n FROM pg_namespace WHERE nspname = 'synchro'");
  assert.equal(row.n, 1);
  await assert.rejects(startCluster({ DATABASE_URL: 'postgres://nobody:x@127.0.0.1:1/db' }), /cannot connect to the PostgreSQL server at DATABASE_URL/);
  await assert.rejects(startCluster({ SYNCHRO_DB: 'container' }), /SYNCHRO_DB=container/);
});

test('an immediate restart ends open sessions, recovers what was checkpointed and accepts on the same address again', async () => {
  const restart = cluster.restartImmediately;
  assert.ok(restart !== undefined, 'an embedded cluster offers an immediate restart');
  await cluster.cloneDatabase('postgres', 'crash_probe');
  const url = cluster.urlFor('crash_probe');
  const open = new pg.Client({ connectionString: url });
  const ended = new Promise<Error>((resolve) => open.on('error', resolve));
  await open.connect();
  await open.query('CREATE TABLE kept (id int); INSERT INTO kept VALUES (1)');
  // This cluster commits asynchronously: a checkpoint makes the row durable before the crash.
  await open.query('CHECKPOINT');
  await restart.call(cluster);
  assert.match((await ended).message, /terminat|shut|connection/i);
  await open.end().catch(() => undefined);
  const row = await one<{ n: number; recovered: boolean }>(url, "SELECT count(*)::int AS n, pg_postmaster_start_time() > now() - interval '1 minute' AS recovered FROM kept");
  assert.deepEqual(row, { n: 1, recovered: true });
  await cluster.dropDatabase('crash_probe');
});

test('clusters of a run that names an initdb folder start from one kept copy and are still separate clusters', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'synchro-initdb-test-'));
  const previous = process.env[INITDB_CACHE_VARIABLE];
  process.env[INITDB_CACHE_VARIABLE] = folder;
  const started: Cluster[] = [];
  try {
    started.push(await startCluster({}));
    const kept = readdirSync(folder);
    assert.equal(kept.length, 1, `the first start keeps one copy, found ${kept.join(', ')}`);
    assert.ok(existsSync(join(folder, kept[0] as string, 'PG_VERSION')), 'the kept copy is a whole data directory');
    started.push(await startCluster({}));
    assert.deepEqual(readdirSync(folder), kept, 'the second start copies the kept files and keeps nothing more');
    const [first, second] = started as [Cluster, Cluster];
    await one(first.adminUrl, 'CREATE TABLE only_in_first (id int)');
    const sql = "SELECT system_identifier::text AS id, current_setting('port') AS port, to_regclass('public.only_in_first') IS NOT NULL AS has_table FROM pg_control_system()";
    const [a, b] = [await one<{ id: string; port: string; has_table: boolean }>(first.adminUrl, sql), await one<{ id: string; port: string; has_table: boolean }>(second.adminUrl, sql)];
    assert.equal(a.id, b.id, 'both started from the same initdb files');
    assert.notEqual(a.port, b.port);
    assert.deepEqual([a.has_table, b.has_table], [true, false], 'a change in one cluster is not in the other');
  } finally {
    if (previous === undefined) delete process.env[INITDB_CACHE_VARIABLE];
    else process.env[INITDB_CACHE_VARIABLE] = previous;
    for (const c of started) await c.stop();
    rmSync(folder, { recursive: true, force: true });
  }
});
