/**
 * The capture worker running as its own login (SYNC-OPS-002, decision 350):
 * LOGIN REPLICATION NOINHERIT, member of synchro_worker only. Its SQL sessions
 * hold the group's table privileges only after `SET ROLE synchro_worker`; the
 * slot is used on a session of the login itself.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { startServer } from '../../reference/server/app.ts';
import { SECRET, useEnv } from './helpers.ts';

const env = useEnv();
const TEMPLATE = 'tpl_reference_server';

const SETUP = `
CREATE TABLE public.notes (id text PRIMARY KEY, body text NOT NULL DEFAULT '', updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz);
INSERT INTO public.notes (id, body) VALUES ('before', 'present at registration');
SELECT synchro.synchro_register_table('public.notes', updated_at_col => 'updated_at', deleted_at_col => 'deleted_at');
`;

/** A URL of `url`'s database as `user`. */
function asUser(url: string, user: string, password: string): string {
  const u = new URL(url);
  u.username = user;
  u.password = password;
  return u.toString();
}

/** A database of its own with the registered table and a worker login that has a password, dropped afterwards. */
async function withWorkerDatabase(name: string, fn: (h: { sql: pg.Client; login: string; url: string; workerUrl: string }) => Promise<void>): Promise<void> {
  const { cluster } = env();
  await cluster.cloneDatabase(TEMPLATE, name);
  const { workerLogin } = await cluster.provisionRoles(name);
  const url = cluster.urlFor(name);
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    await sql.query(`ALTER ROLE "${workerLogin}" PASSWORD 'worker-secret'`);
    await sql.query(SETUP);
    await fn({ sql, login: workerLogin, url, workerUrl: asUser(url, workerLogin, 'worker-secret') });
  } finally {
    await sql.end();
    await cluster.dropDatabase(name);
  }
}

async function withWorkerLogin(name: string, fn: (h: { sql: pg.Client; login: string; workerUrl: string; server: Awaited<ReturnType<typeof startServer>> }) => Promise<void>): Promise<void> {
  await withWorkerDatabase(name, async ({ sql, login, url, workerUrl }) => {
    const server = await startServer({ databaseUrl: url, workerDatabaseUrl: workerUrl, jwtSecret: SECRET, capture: true, log: () => undefined });
    try {
      await fn({ sql, login, workerUrl, server });
    } finally {
      await server.close();
    }
  });
}

test('capture runs every session as the worker login and materializes what it decodes', async () => {
  await withWorkerLogin(`wl_${process.pid}_a`, async ({ sql, login, server }) => {
    await sql.query(`INSERT INTO public.notes (id, body) VALUES ('a', 'first')`);
    await sql.query(`UPDATE public.notes SET body = 'second' WHERE id = 'a'`);
    await sql.query(`DELETE FROM public.notes WHERE id = 'before'`);
    await server.capture?.catchUp(10_000);
    const sessions = await sql.query<{ usename: string; application_name: string }>(
      "SELECT usename, application_name FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'synchro-capture%' ORDER BY application_name",
    );
    assert.deepEqual(
      sessions.rows.map((r) => [r.application_name, r.usename]),
      [
        ['synchro-capture', login],
        ['synchro-capture-listen', login],
        ['synchro-capture-slot', login],
      ],
    );
    const projected = await sql.query<{ id: string; body: string }>('SELECT id, body FROM synchro_projection.notes ORDER BY id');
    assert.deepEqual(projected.rows, [{ id: 'a', body: 'second' }]);
    const progress = await sql.query<{ caught_up: boolean; poisoned: boolean }>(
      "SELECT acknowledged_end_lsn >= materialized_commit_lsn AS caught_up, EXISTS (SELECT 1 FROM synchro.wal_poison) AS poisoned FROM synchro.wal_progress",
    );
    assert.deepEqual(progress.rows, [{ caught_up: true, poisoned: false }]);
    const ready = await fetch(`${server.url}/ready`);
    assert.equal(ready.status, 200);
  });
});

test('the worker login analyzes the projection it fills, so key lookups of membership functions have statistics', async () => {
  await withWorkerLogin(`wl_${process.pid}_s`, async ({ sql, server }) => {
    // A projection never analyzed has reltuples -1; one transaction of more rows than the worker's first analysis waits for.
    await sql.query(`INSERT INTO public.notes (id, body) SELECT 'n' || g, 'bulk' FROM generate_series(1, 2500) g`);
    await server.capture?.catchUp(30_000);
    const { rows } = await sql.query<{ projection: number; store: number }>(
      "SELECT (SELECT reltuples FROM pg_class WHERE oid = 'synchro_projection.notes'::regclass) AS projection, (SELECT reltuples FROM pg_class WHERE oid = 'synchro.projections'::regclass) AS store",
    );
    assert.ok((rows[0]?.projection ?? -1) >= 2500, `synchro_projection.notes reltuples ${rows[0]?.projection}`);
    assert.ok((rows[0]?.store ?? -1) >= 2500, `synchro.projections reltuples ${rows[0]?.store}`);
  });
});

test('the worker login reaches the worker tables only through SET ROLE, and the group executes no Synchro function', async () => {
  await withWorkerLogin(`wl_${process.pid}_b`, async ({ workerUrl }) => {
    const worker = new pg.Client({ connectionString: workerUrl });
    await worker.connect();
    try {
      await assert.rejects(worker.query('SELECT count(*) FROM synchro.wal_progress'), { code: '42501' });
      await worker.query('SET ROLE synchro_worker');
      const { rows } = await worker.query<{ n: string }>('SELECT count(*)::text AS n FROM synchro.wal_progress');
      assert.deepEqual(rows, [{ n: '1' }]);
      await assert.rejects(worker.query('SELECT synchro.synchro_readiness()'), { code: '42501' });
      const executable = await worker.query<{ n: string }>(
        "SELECT count(*)::text AS n FROM pg_proc WHERE pronamespace = 'synchro'::regnamespace AND has_function_privilege('synchro_worker', oid, 'EXECUTE')",
      );
      assert.deepEqual(executable.rows, [{ n: '0' }]);
    } finally {
      await worker.end();
    }
  });
});

/** The worker check of the detailed health, read as the installer. */
async function workerCheck(sql: pg.Client): Promise<unknown> {
  const { rows } = await sql.query<{ check: unknown }>("SELECT synchro.synchro_health_detail() -> 'checks' -> 'worker' AS check");
  return rows[0]?.check;
}

test('readiness fails the worker check while the worker principal is not the sole, well-formed configured login', async () => {
  await withWorkerLogin(`wl_${process.pid}_c`, async ({ sql, login, server }) => {
    const ok = { state: 'ok', reason: 'ok' };
    const broken = { state: 'failed', reason: 'worker_identity_invalid' };
    const ready = async () => (await fetch(`${server.url}/ready`)).status;
    assert.deepEqual(await workerCheck(sql), ok);
    const extra = `${login.slice(0, 40)}_extra`;
    // Another login that may replicate, configured nowhere: a second principal.
    await sql.query(`CREATE ROLE "${extra}" LOGIN REPLICATION`);
    try {
      assert.deepEqual(await workerCheck(sql), broken);
      assert.equal(await ready(), 503);
    } finally {
      await sql.query(`DROP ROLE "${extra}"`);
    }
    assert.deepEqual(await workerCheck(sql), ok);
    assert.equal(await ready(), 200);
    for (const [change, undo] of [
      [`ALTER ROLE "${login}" INHERIT`, `ALTER ROLE "${login}" NOINHERIT`],
      [`GRANT synchro_adapter TO "${login}"`, `REVOKE synchro_adapter FROM "${login}"`],
      [`ALTER ROLE "${login}" NOREPLICATION`, `ALTER ROLE "${login}" REPLICATION`],
    ] as const) {
      await sql.query(change);
      assert.deepEqual(await workerCheck(sql), broken, change);
      await sql.query(undo);
      assert.deepEqual(await workerCheck(sql), ok, undo);
    }
  });
});

test('a login another database names as its worker login is not a second principal of this one', async () => {
  await withWorkerLogin(`wl_${process.pid}_d`, async ({ sql }) => {
    const { cluster } = env();
    const other = `wl_${process.pid}_d_other`;
    await cluster.cloneDatabase(TEMPLATE, other);
    try {
      await cluster.provisionRoles(other);
      assert.deepEqual(await workerCheck(sql), { state: 'ok', reason: 'ok' });
    } finally {
      await cluster.dropDatabase(other);
    }
  });
});

test('a capture start that fails leaves no session of the server or the worker open', async () => {
  await withWorkerDatabase(`wl_${process.pid}_c`, async ({ sql, login, url, workerUrl }) => {
    // Without the group the worker's first statement (SET ROLE synchro_worker) fails, after its session and the server's pool are open.
    await sql.query(`REVOKE synchro_worker FROM "${login}"`);
    await assert.rejects(startServer({ databaseUrl: url, workerDatabaseUrl: workerUrl, jwtSecret: SECRET, capture: true, log: () => undefined }), /synchro_worker/);
    const others = async () =>
      (await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')).rows[0]?.n;
    // A session's backend leaves pg_stat_activity shortly after its client closed the socket.
    const deadline = Date.now() + 5000;
    while ((await others()) !== 0 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(await others(), 0, 'every session opened for the refused start has ended');
    const state = await sql.query('SELECT state FROM synchro.wal_worker_state');
    assert.deepEqual(state.rows, [], 'a start refused before it ran records no worker state');
  });
});
