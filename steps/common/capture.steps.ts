/**
 * Shared steps (used by several requirements).
 * The capture worker as a scenario drives it: pause, resume, kill, restart, a
 * number of polls, a kill armed for a later moment, and the quarantine record
 * server inspection shows.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import type { CaptureControl, CaptureCrashPoint } from '../../harness/adapters/server.ts';
import { inspectRows } from '../support/capture/inspection.ts';
import { armCrashAfterWorkerKill, databaseCrashPhrase } from '../support/database-crash/index.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { dependencyState, positionOf } from '../support/scope-dependencies/state.ts';
import { stillPendingInSlot } from '../support/wal-acknowledgement/pending.ts';
import { acknowledgementState, lsnAtOrBefore, progressSample } from '../support/wal-acknowledgement/progress.ts';
import type { SyncWorld } from '../support/world.ts';

type WorkerControl = 'stopWorker' | 'killWorker' | 'restartWorker' | 'injectPoison';

async function workerControl(world: SyncWorld, control: WorkerControl): Promise<void> {
  const server = await world.readyServer();
  const capture: CaptureControl | undefined = server.capture;
  const act = capture?.[control];
  if (capture === undefined || act === undefined) throw new Error(`server adapter "${server.id}" declares "capture" but offers no capture.${control}()`);
  await act.call(capture);
}

Given('the capture worker is paused', async function (this: SyncWorld) {
  await workerControl(this, 'stopWorker');
});

/**
 * The worker will wait just before the materialization commit of the next
 * transaction with row events: written, not committed. "resumes" lets it
 * commit; "is killed" ends it there.
 */
Given('the capture worker is held before its materialization commit', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.holdBeforeCommit) return undeterminedWithout(this, `server adapter "${server.id}" offers no capture.holdBeforeCommit() to hold the worker before its materialization commit`);
  await server.capture.holdBeforeCommit();
  return undefined;
});

When('the capture worker resumes', async function (this: SyncWorld) {
  await workerControl(this, 'restartWorker');
});

When('the capture worker is killed', async function (this: SyncWorld) {
  await workerControl(this, 'killWorker');
});

When('the capture worker is restarted', async function (this: SyncWorld) {
  await workerControl(this, 'restartWorker');
});

/**
 * Gives the worker `polls` chances to process what was committed. Each wait
 * ends once capture caught up or stopped on a quarantined transaction; a
 * refusal is expected when it is blocked, so it is kept, not thrown: the
 * steps that follow check what the worker did.
 */
When('the capture worker completes {int} polls', async function (this: SyncWorld, polls: number) {
  const server = await this.readyServer();
  const capture = server.capture;
  if (!capture) throw new Error(`server adapter "${server.id}" has no capture capability to let the worker poll`);
  for (let poll = 0; poll < polls; poll += 1) {
    try {
      await capture.awaitMaterialized(this.deadlineMs);
    } catch (error) {
      this.attach(`wait ${poll + 1} for capture ended with: ${(error as Error).message}`, 'text/plain');
    }
  }
});

Then('server inspection shows one active quarantine record with failure class {string}', async function (this: SyncWorld, failureClass: string) {
  const server = await this.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability`);
  const rows = await server.inspect.query<{ failure_class: string }>("SELECT failure_class FROM synchro.wal_poison WHERE lifecycle = 'active' ORDER BY id");
  this.assert.equal(
    rows.map((row) => row.failure_class),
    [failureClass],
    'failure classes of the active quarantine records',
  );
});

/**
 * A crash at an exact point of the worker's cycle, armed through the
 * optional `capture.killWorkerAt` control; without it the scenario is
 * undetermined rather than the crash simulated some other way.
 */
const CRASH_POINTS: Record<string, CaptureCrashPoint> = {
  'after its materialization commit and before the slot advance': 'after-materialization-commit',
  'after the slot advance and before recording the acknowledgement': 'after-slot-advance',
};

/**
 * The worker stopped at this point and the database then shut down
 * immediately (in a cluster of the scenario's own): the step that observes
 * the kill performs the crash (steps/support/database-crash).
 */
const DATABASE_CRASH_POINTS: Record<string, CaptureCrashPoint> = {
  'by an immediate database shutdown right after the acknowledgement': 'after-acknowledgement',
};
databaseCrashPhrase(/^the capture worker is set to be killed by an immediate database shutdown/);

Given(/^the capture worker is set to be killed (.+)$/, async function (this: SyncWorld, wording: string) {
  const server = await this.readyServer();
  const crashPoint = DATABASE_CRASH_POINTS[wording];
  const point = CRASH_POINTS[wording] ?? crashPoint;
  if (point === undefined) return undeterminedWithout(this, `no capture control kills the worker ${wording}; the controls know: ${[...Object.keys(CRASH_POINTS), ...Object.keys(DATABASE_CRASH_POINTS)].join('; ')}`);
  if (!server.capture?.killWorkerAt) return undeterminedWithout(this, `server adapter "${server.id}" offers no capture.killWorkerAt() to kill the worker ${wording}`);
  if (crashPoint !== undefined && server.database === undefined) return undeterminedWithout(this, `server adapter "${server.id}" offers no database.restartImmediately() to shut the database down ${wording}`);
  await server.capture.killWorkerAt(point);
  if (crashPoint !== undefined) armCrashAfterWorkerKill(this);
  return undefined;
});

/**
 * The slot has not passed the transaction recorded as `label`: either it is
 * still at or before the position read before that commit, or (the worker may
 * have acknowledged its own WAL written while the transaction was open) the
 * transaction is still pending in the slot.
 */
Then("server inspection shows the slot's confirmed position at or before position {string}", async function (this: SyncWorld, label: string) {
  const position = dependencyState(this).positions.get(label);
  if (position === undefined) throw new Error(`no source transaction was recorded as "${label}" in this scenario`);
  const [slot] = await inspectRows<{ name: string; confirmed: string | null; ok: boolean | null }>(
    this,
    `SELECT w.slot_name AS name, s.confirmed_flush_lsn::text AS confirmed, s.confirmed_flush_lsn <= $1::pg_lsn AS ok
       FROM synchro.wal_progress w LEFT JOIN pg_replication_slots s ON s.slot_name = w.slot_name`,
    [position.before],
  );
  const held = slot?.ok === true || (slot?.confirmed != null && (await stillPendingInSlot(this, slot.name, position.before, position.after)));
  this.assert.equal(held, true, `the slot confirmed ${slot?.confirmed}, transaction "${label}" began after ${position.before} and is no longer pending in the slot`);
});

When(
  'the harness commits {int} logical messages of {int} bytes with prefix {string} that touch no registered table',
  async function (this: SyncWorld, count: number, bytes: number, prefix: string) {
    const server = await this.readyServer();
    if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source transactions`);
    await server.sourceSql.query(`SELECT count(pg_logical_emit_message(true, $1, repeat('x', $2::int))) FROM generate_series(1, $3::int)`, [prefix, bytes, count]);
    const [end] = await server.sourceSql.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l');
    acknowledgementState(this).idleEnd = end?.l as string;
  },
);

/**
 * As for the slot (decision 221): at or before the position read before the
 * commit, or no further than a slot that still holds the transaction.
 */
Then('server inspection shows the acknowledged boundary at or before position {string}', async function (this: SyncWorld, label: string) {
  const position = positionOf(this, label);
  const sample = await progressSample(this);
  const held =
    (await lsnAtOrBefore(this, sample.acknowledged, position.before)) ||
    (sample.ackLeConfirmed === true && (await stillPendingInSlot(this, sample.slot, position.before, position.after)));
  this.assert.ok(held, `the acknowledged boundary is ${sample.acknowledged} (slot ${sample.confirmed}), transaction "${label}" began after ${position.before} and is no longer pending in the slot`);
});

/** The operator's stream reset, run to its end: resolves once capture runs on the new stream generation. */
When('the operator runs an authorized stream reset to completion', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.resetStream) return undeterminedWithout(this, `server adapter "${server.id}" offers no capture.resetStream() for the operator's stream reset`);
  await server.capture.resetStream();
  return undefined;
});

// SYNC-CAP-008 and SYNC-CAP-012: a transaction that must be captured left no quarantine behind.
Then('server inspection shows no active quarantine record', async function (this: SyncWorld) {
  const rows = await inspectRows<{ failure_class: string }>(this, "SELECT failure_class FROM synchro.wal_poison WHERE lifecycle = 'active'");
  this.assert.equal(rows.map((row) => row.failure_class), [], 'failure classes of the active quarantine records');
});
