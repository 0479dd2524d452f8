/**
 * SYNC-OPS-004 Finite Capture Lag: readiness holds only while heartbeat age,
 * WAL lag bytes and the age of the oldest unmaterialized commit are known,
 * finite, nonnegative and within finite positive maxima. The harness makes
 * capture fall behind for real (worker controls, committed writes, the
 * server clock) and reads the server's own observations and answers.
 */
import { Then, When } from '@cucumber/cucumber';
import { activeQuarantineAppears, activeSlot, control, dropSlot, holdWorkerInPoll, qualified, writeOneTask } from '../support/capture-readiness/breaks.ts';
import { configureLimits, serverWithSql } from '../support/capture-readiness/limits.ts';
import { healthDetail } from '../support/capture-readiness/readiness.ts';
import type { SyncWorld } from '../support/world.ts';

When(
  'the server is configured with heartbeat age maximum {int} seconds, WAL lag maximum {int} bytes and commit age maximum {int} seconds',
  async function (this: SyncWorld, heartbeat: number, walBytes: number, commitAge: number) {
    await configureLimits(this, { 'heartbeat age': String(heartbeat), 'WAL lag': String(walBytes), 'commit age': String(commitAge) });
  },
);

When(/^the server is reconfigured with the (heartbeat age|WAL lag|commit age) maximum (?:unset|"(.*)")$/, async function (this: SyncWorld, limit: string, value: string | undefined) {
  await configureLimits(this, { [limit]: value ?? null });
});

Then('server inspection shows the observations {string}, {string} and {string} as finite numbers of at least 0', async function (this: SyncWorld, a: string, b: string, c: string) {
  const observations = (await healthDetail(this)).observations ?? {};
  for (const name of [a, b, c]) {
    const value = observations[name];
    this.assert.ok(typeof value === 'number' && Number.isFinite(value) && value >= 0, `observation "${name}" is a finite number of at least 0: ${JSON.stringify(observations)}`);
  }
});

Then(
  'server inspection shows {string} at most {int}, {string} at most {int} and {string} at most {int}',
  async function (this: SyncWorld, a: string, maxA: number, b: string, maxB: number, c: string, maxC: number) {
    const observations = (await healthDetail(this)).observations ?? {};
    for (const [name, max] of [[a, maxA], [b, maxB], [c, maxC]] as const) {
      const value = observations[name];
      this.assert.ok(typeof value === 'number' && value <= max, `observation "${name}" is at most ${max}: ${JSON.stringify(observations)}`);
    }
  },
);

Then('server inspection shows the observation {string} as null', async function (this: SyncWorld, name: string) {
  const observations = (await healthDetail(this)).observations ?? {};
  this.assert.ok(Object.hasOwn(observations, name), `the health detail reports observation "${name}": ${JSON.stringify(observations)}`);
  this.assert.equal(observations[name], null, `observation "${name}" (unknown must be null, never a number): ${JSON.stringify(observations)}`);
});

Then('server inspection reports the capture check {string} as {string} or {string}', async function (this: SyncWorld, check: string, first: string, second: string) {
  const detail = await healthDetail(this);
  const state = detail.checks?.[check]?.state;
  this.assert.ok(state === first || state === second, `health detail check "${check}" is "${first}" or "${second}": ${JSON.stringify(detail.checks?.[check])}`);
});

When('the capture worker is stopped and the server clock advances by {int} seconds', async function (this: SyncWorld, seconds: number) {
  const { server } = await serverWithSql(this);
  if (!server.clock) throw new Error(`server adapter "${server.id}" offers no clock control`);
  await control(server, 'stopWorker')();
  await server.clock.advance(seconds * 1000);
});

/** The worker is held inside a poll first: a running worker would stamp a fresh heartbeat over the harness's within seconds. */
When('the harness sets the worker heartbeat {int} seconds ahead of the database clock', async function (this: SyncWorld, seconds: number) {
  const { server, sql } = await serverWithSql(this);
  if ((await holdWorkerInPoll(this, server, sql, 'to keep the worker from stamping a fresh heartbeat')) === 'skipped') return 'skipped';
  await sql.query('UPDATE synchro.wal_worker_state SET heartbeat_at = clock_timestamp() + make_interval(secs => $1)', [seconds]);
  return undefined;
});

When('the harness deletes the worker heartbeat record', async function (this: SyncWorld) {
  const { sql } = await serverWithSql(this);
  await sql.query('DELETE FROM synchro.wal_worker_state');
});

/**
 * Rows of random hexadecimal text, about a megabyte each: PostgreSQL stores
 * them uncompressed, so the WAL written is at least `bytes`.
 */
When('the capture worker is paused and the harness commits {int} bytes of writes to {string}', async function (this: SyncWorld, bytes: number, relation: string) {
  const { server, sql } = await serverWithSql(this);
  await control(server, 'stopWorker')();
  const rowBytes = 1_000_000;
  const rows = Math.ceil(bytes / rowBytes);
  await sql.query(
    `INSERT INTO ${qualified(relation)} (id, owner_id)
     SELECT 'bulk-' || g, (SELECT string_agg(md5(random()::text || g || i), '') FROM generate_series(1, $2::int / 32) AS i)
       FROM generate_series(1, $1::int) AS g`,
    [rows, rowBytes],
  );
});

When('the harness drops the active replication slot', async function (this: SyncWorld) {
  const { sql } = await serverWithSql(this);
  await dropSlot(this, sql, await activeSlot(sql));
});

When('the capture worker is paused, the harness commits one write to {string} and the server clock advances by {int} seconds', async function (this: SyncWorld, relation: string, seconds: number) {
  const { server, sql } = await serverWithSql(this);
  if (!server.clock) throw new Error(`server adapter "${server.id}" offers no clock control`);
  await control(server, 'stopWorker')();
  await writeOneTask(sql, relation);
  await server.clock.advance(seconds * 1000);
});

When('the harness injects a poison transaction', async function (this: SyncWorld) {
  const { server, sql } = await serverWithSql(this);
  await control(server, 'injectPoison')();
  await writeOneTask(sql);
  await activeQuarantineAppears(this, sql);
});
