/**
 * SYNC-CAP-011 Capture Readiness: GET /ready says ready only when every
 * capture check of the configured database is healthy. Breaks act on the
 * server's real state (steps/support/capture-readiness/breaks.ts); the
 * evidence is the server's own answers (GET /ready and the health detail).
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { breakCapture, qualified, restoreCapture } from '../support/capture-readiness/breaks.ts';
import { openOtherDatabase, otherDatabase, workerRunsOn } from '../support/capture-readiness/other-database.ts';
import { healthSettled, REQUIRED_CHECKS, requestReady, stateOf } from '../support/capture-readiness/readiness.ts';
import type { Reply } from '../support/reply.ts';
import type { SyncWorld } from '../support/world.ts';

Then('server inspection reports every required capture check as {string}', async function (this: SyncWorld, state: string) {
  const detail = await healthSettled(this, (d) => REQUIRED_CHECKS.every((name) => stateOf(d, name) === state));
  const states = Object.fromEntries(REQUIRED_CHECKS.map((name) => [name, stateOf(detail, name)]));
  this.assert.equal(states, Object.fromEntries(REQUIRED_CHECKS.map((name) => [name, state])), `health detail checks: ${JSON.stringify(detail.checks)}`);
  this.assert.equal(detail.ready, state === 'ok', `health detail "ready" beside its checks: ${JSON.stringify(detail)}`);
});

/** The sustained-write plan of the scenario, run by the step that asks GET /ready after each commit. */
const writePlans = new WeakMap<SyncWorld, { count: number; relation: string; seconds: number }>();
const sustainedAnswers = new WeakMap<SyncWorld, Reply[]>();

When('the harness commits {int} single-row inserts into {string} over {int} seconds', function (this: SyncWorld, count: number, relation: string, seconds: number) {
  writePlans.set(this, { count, relation, seconds });
});

/**
 * Commit k is due at k/count of the period. Between commits the harness keeps
 * asking GET /ready instead of idling, so the pace costs no sleep and every
 * moment of the period is sampled; at least one answer follows each commit.
 */
When(/^the harness requests GET \/ready after each commit$/, async function (this: SyncWorld) {
  const plan = writePlans.get(this);
  if (plan === undefined) throw new Error('no sustained writes were planned before asking GET /ready after each commit');
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source rows`);
  const answers: Reply[] = [];
  const start = Date.now();
  const periodMs = plan.seconds * 1000;
  for (let k = 1; k <= plan.count; k += 1) {
    await server.sourceSql.query(`INSERT INTO ${qualified(plan.relation)} (id, owner_id, title) VALUES ($1, 'alice', $2)`, [`sustained-${k}`, `write ${k}`]);
    const due = start + (periodMs * k) / plan.count;
    do answers.push(await requestReady(this));
    while (Date.now() < due);
  }
  sustainedAnswers.set(this, answers);
});

Then(/^every readiness response is 200 with body exactly \{"ready":true\}$/, function (this: SyncWorld) {
  const answers = sustainedAnswers.get(this) ?? [];
  this.assert.ok(answers.length > 0, 'GET /ready was asked during the sustained writes');
  const other = answers.filter((a) => a.status !== 200 || a.text !== '{"ready":true}');
  this.assert.equal(
    other.map((a) => `${a.status} ${a.text}`),
    [],
    `of ${answers.length} readiness answers during the writes, these were not 200 {"ready":true}`,
  );
});

When(/^the harness breaks capture by (.+)$/, async function (this: SyncWorld, wording: string) {
  return breakCapture(this, wording);
});

When('the harness restores what it broke', async function (this: SyncWorld) {
  await restoreCapture(this);
});

Given('a freshly installed server whose database is reachable', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to reach its database`);
  const [row] = await server.sourceSql.query<{ one: number }>('SELECT 1 AS one');
  if (row?.one !== 1) throw new Error('the server database did not answer a ping');
});

/**
 * The worker is killed (its sessions cut, nothing recorded on the way out)
 * and the record a running worker leaves is removed, so the database looks
 * as before any worker started: installed and reachable, never captured.
 */
Given('no capture worker has ever run against it', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.killWorker || !server.sourceSql) throw new Error(`server adapter "${server.id}" offers no capture.killWorker() and source SQL to take its worker away`);
  await server.capture.killWorker();
  await server.sourceSql.query('DELETE FROM synchro.wal_worker_state');
});

Given('a second database {string} in the same cluster with its own capture setup', async function (this: SyncWorld, label: string) {
  return openOtherDatabase(this, label);
});

/**
 * Killed rather than paused: its sessions are gone but its last state record
 * still says running with a recent heartbeat, so only a check bound to this
 * database's sessions can tell that no worker serves it.
 */
When('the capture worker of the configured database is stopped', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.killWorker) throw new Error(`server adapter "${server.id}" offers no capture.killWorker()`);
  await server.capture.killWorker();
});

When('a capture worker runs against {string}', async function (this: SyncWorld, label: string) {
  await workerRunsOn(this, otherDatabase(this, label));
});
