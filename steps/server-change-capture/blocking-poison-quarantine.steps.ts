/**
 * Steps of SYNC-CAP-006 Blocking Poison Quarantine: the quarantine record as
 * server inspection shows it (its position, class, names and redaction), the
 * same-identity retry, and the operator's stream reset as the way out of a
 * poison no retry can clear, driven phase by phase where a scenario commits
 * work while the reset holds (the `capture.reset` control). The truncate
 * poison is committed by a session that bypasses the reference's source-side
 * TRUNCATE guard as the table's owner could (decision 269).
 */
import { Then, When } from '@cucumber/cucumber';
import { inspectRows, tableIdOf } from '../support/capture/inspection.ts';
import { activateUnvalidatedGenerationNext, breakMembershipFunctionFor, type QuarantineRow, quarantineAt } from '../support/poison-quarantine/records.ts';
import { noteOutcome, phasedReset, resetRecord, startedResetId, startHeld } from '../support/stream-reset/operator.ts';
import { positionOf } from '../support/scope-dependencies/state.ts';
import { currentStreamOf, recordedStream } from '../support/stream-generations/recorded.ts';
import { captureOf } from '../support/wal-acknowledgement/progress.ts';
import type { SyncWorld } from '../support/world.ts';

Then('server inspection shows one active quarantine record at position {string} with failure class {string}', async function (this: SyncWorld, label: string, failureClass: string) {
  const position = positionOf(this, label);
  // A real wait for the worker to reach the transaction: it ends refused once the worker quarantined it.
  try {
    await captureOf(await this.readyServer()).awaitMaterialized(this.deadlineMs);
  } catch (error) {
    this.attach(`the wait for capture ended with: ${(error as Error).message}`, 'text/plain');
  }
  const active = await inspectRows<{ commit: string; failure_class: string; at: boolean }>(
    this,
    "SELECT commit_lsn::text AS commit, failure_class, commit_lsn > $1::pg_lsn AND commit_lsn <= $2::pg_lsn AS at FROM synchro.wal_poison WHERE lifecycle = 'active' ORDER BY id",
    [position.before, position.after],
  );
  this.assert.equal(
    active.map((r) => ({ atPosition: r.at, failureClass: r.failure_class })),
    [{ atPosition: true, failureClass }],
    `active quarantine records (transaction "${label}" committed between ${position.before} and ${position.after}): ${JSON.stringify(active)}`,
  );
});

Then('the quarantine record names the stream generation and the relation of table {string}', async function (this: SyncWorld, table: string) {
  const record = await quarantineAt(this);
  const [progress] = await inspectRows<{ g: string }>(this, 'SELECT stream_generation AS g FROM synchro.wal_progress');
  this.assert.equal(
    { generation: record.stream_generation, table: record.table_id },
    { generation: progress?.g, table: await tableIdOf(this, table) },
    `the quarantine record ${JSON.stringify(record)}`,
  );
});

/** Every text member of the record, as the database stores it. */
function texts(record: QuarantineRow): Array<[string, string]> {
  return Object.entries(record).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
}

Then('no text of the quarantine record contains {string}', async function (this: SyncWorld, marker: string) {
  const record = await quarantineAt(this);
  const leaking = texts(record)
    .filter(([, text]) => text.includes(marker))
    .map(([member]) => member);
  this.assert.ok(texts(record).length > 0, 'the quarantine record has text members');
  this.assert.equal(leaking, [], `members of the quarantine record holding "${marker}"`);
});

Then('server inspection shows the quarantine record at position {string} no longer active', async function (this: SyncWorld, label: string) {
  const position = positionOf(this, label);
  const records = await inspectRows<{ lifecycle: string }>(this, 'SELECT lifecycle FROM synchro.wal_poison WHERE commit_lsn > $1::pg_lsn AND commit_lsn <= $2::pg_lsn ORDER BY id', [position.before, position.after]);
  this.assert.ok(records.length > 0, `server inspection shows a quarantine record for transaction "${label}"`);
  this.assert.equal(
    records.filter((r) => r.lifecycle === 'active').length,
    0,
    `lifecycles of the quarantine records of "${label}": ${records.map((r) => r.lifecycle).join(', ')}`,
  );
});

Then('server inspection shows the transaction record of row {string} at position {string}', async function (this: SyncWorld, key: string, label: string) {
  const position = positionOf(this, label);
  const rows = await inspectRows<{ commit: string; at: boolean }>(
    this,
    `SELECT e.commit_lsn::text AS commit, e.commit_lsn > $3::pg_lsn AND e.commit_lsn <= $4::pg_lsn AS at
       FROM synchro.wal_events e JOIN synchro.wal_transactions t USING (stream_generation, commit_lsn)
      WHERE e.table_id = $1 AND e.pk_text = $2 AND e.stream_generation = (SELECT stream_generation FROM synchro.wal_progress)`,
    [await tableIdOf(this, 'tasks'), key, position.before, position.after],
  );
  this.assert.equal(
    rows.map((r) => r.at),
    [true],
    `transaction records holding row ${key} (transaction "${label}" committed between ${position.before} and ${position.after}): ${JSON.stringify(rows)}`,
  );
});

When('the harness makes the next source transaction fail with a membership function that returns NULL for row {string} only', async function (this: SyncWorld, key: string) {
  await breakMembershipFunctionFor(this, 'tasks', key);
});

Then('server inspection shows no row version, membership edge or pull effect for row {string} of table {string}', async function (this: SyncWorld, key: string, table: string) {
  const tableId = await tableIdOf(this, table);
  const [found] = await inspectRows<{ versions: number; edges: number; effects: number }>(
    this,
    `SELECT (SELECT count(*) FROM synchro.projections WHERE table_id = $1 AND pk_text = $2)::int AS versions,
            (SELECT count(*) FROM synchro.membership_edges WHERE table_id = $1 AND pk_text = $2)::int AS edges,
            (SELECT count(*) FROM synchro.scope_effects WHERE table_id = $1 AND pk_text = $2)::int AS effects`,
    [tableId, key],
  );
  this.assert.equal(found, { versions: 0, edges: 0, effects: 0 }, `materialized records of row ${key}`);
});

/**
 * The operator asks for a retry of the one active quarantine record under its
 * own identity. Nothing can make a TRUNCATE decodable, so the request is
 * refused (the reference's retry function answers false), and after the
 * worker's next polls the record is unchanged and nothing of it is materialized.
 */
Then('a same-identity retry of the quarantined transaction is refused', async function (this: SyncWorld) {
  const before = await quarantineAt(this);
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to request a retry`);
  const [answer] = await (await captureSql(this)).query<{ accepted: boolean }>('SELECT synchro.synchro_retry_wal_poison() AS accepted');
  for (let poll = 0; poll < 2; poll += 1) await captureOf(server).awaitMaterialized(this.deadlineMs).catch(() => undefined);
  const after = await quarantineAt(this);
  const shape = (q: QuarantineRow) => ({ id: q.id, generation: q.stream_generation, commit: q.commit_lsn, failureClass: q.failure_class, lifecycle: q.lifecycle, retryPending: q.retry_requested_at !== null, attempts: q.attempt_count });
  this.assert.equal({ accepted: answer?.accepted, record: shape(after) }, { accepted: false, record: shape(before) }, 'the retry request and the quarantine record after it');
  const [materialized] = await inspectRows<{ n: string }>(this, 'SELECT count(*)::text AS n FROM synchro.wal_transactions WHERE stream_generation = $1 AND commit_lsn = $2::pg_lsn', [after.stream_generation, after.commit_lsn]);
  this.assert.equal(Number(materialized?.n), 0, 'transaction records at the quarantined position');
});

async function captureSql(world: SyncWorld) {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to request a retry`);
  return server.sourceSql;
}

Then(/^server inspection shows the active slot is a new permanent logical "([^"]+)" slot of the configured database$/, async function (this: SyncWorld, plugin: string) {
  const now = await currentStreamOf(this);
  const old = recordedStream(this, 'old');
  const [slot] = await inspectRows<{ slot_type: string; plugin: string; temporary: boolean; same_database: boolean }>(
    this,
    'SELECT slot_type, plugin, temporary, database = current_database() AS same_database FROM pg_replication_slots WHERE slot_name = $1',
    [now.slot],
  );
  this.assert.notEqual(now.slot, old.slot, 'the active slot, against the one serving the stream generation recorded as "old"');
  this.assert.equal(slot, { slot_type: 'logical', plugin, temporary: false, same_database: true }, `the active slot ${now.slot}`);
});

When('the harness makes the next source transaction fail with a registry activation message for an unvalidated generation', async function (this: SyncWorld) {
  await activateUnvalidatedGenerationNext(this, 'tasks');
});

When('the operator starts an authorized stream reset and holds it after the baseline is staged', async function (this: SyncWorld) {
  return startHeld(this, 'baseline_staged');
});

/** The held reset goes on through catch-up and activation; anything else (a refusal, an abort) ends the scenario here. */
When('the operator lets the stream reset activate', async function (this: SyncWorld) {
  const control = await phasedReset(this);
  if (control === 'skipped') return control;
  const outcome = noteOutcome(this, await control.continue());
  if (outcome.progress?.lifecycle !== 'activated') throw new Error(`the operator's reset did not activate: ${JSON.stringify(outcome)}`);
  return undefined;
});

interface StagedRow {
  snapshot_title: string | null;
  snapshot_version: string | null;
  title: string | null;
  staged_from: string;
  after_consistent_point: boolean | null;
  before_barrier: boolean | null;
}

/** The staged rows of the scenario's reset for one key: what the snapshot held and what catch-up made of it. */
async function stagedRows(world: SyncWorld, table: string, key: string): Promise<StagedRow[]> {
  return inspectRows<StagedRow & Record<string, unknown>>(
    world,
    `SELECT s.snapshot_image ->> 'title' AS snapshot_title, s.snapshot_version, s.row_image ->> 'title' AS title, s.staged_from,
            CASE WHEN s.staged_from <> 'snapshot' THEN s.staged_from::pg_lsn > r.consistent_point END AS after_consistent_point,
            CASE WHEN s.staged_from <> 'snapshot' THEN s.staged_from::pg_lsn <= r.activation_barrier END AS before_barrier
       FROM synchro.reset_staged_rows s JOIN synchro.stream_resets r USING (reset_id)
      WHERE s.reset_id = $1::uuid AND s.table_id = $2 AND s.pk_text = $3`,
    [startedResetId(world), await tableIdOf(world, table), key],
  );
}

Then('server inspection shows the staged baseline row {string} of table {string} with title {string}', async function (this: SyncWorld, key: string, table: string, title: string) {
  const rows = await stagedRows(this, table, key);
  this.assert.equal(
    rows.map((r) => ({ stagedFromSnapshot: r.snapshot_version !== null, title: r.snapshot_title })),
    [{ stagedFromSnapshot: true, title }],
    `the row ${key} as the reset staged it from the candidate slot's exported snapshot`,
  );
});

Then('server inspection shows no staged baseline row {string} of table {string}', async function (this: SyncWorld, key: string, table: string) {
  const rows = await stagedRows(this, table, key);
  this.assert.equal(
    rows.filter((r) => r.snapshot_version !== null),
    [],
    `rows ${key} the reset staged as its baseline`,
  );
});

/** The staged row's last change came from a candidate-slot transaction between the consistent point and the activation barrier. */
Then('server inspection shows the update to {string} materialized from the candidate slot\'s WAL', async function (this: SyncWorld, title: string) {
  const record = await resetRecord(this, startedResetId(this));
  this.assert.equal(record.lifecycle, 'activated', 'the reset record lifecycle');
  const rows = (await inspectRows<{ pk_text: string }>(this, "SELECT pk_text FROM synchro.reset_staged_rows WHERE reset_id = $1::uuid AND row_image ->> 'title' = $2", [startedResetId(this), title])).map((r) => r.pk_text);
  this.assert.equal(rows.length, 1, `staged rows with title "${title}": ${rows.join(', ')}`);
  const [staged] = await stagedRows(this, 'tasks', rows[0] as string);
  this.assert.equal(
    { title: staged?.title, fromWal: staged?.staged_from !== 'snapshot', afterConsistentPoint: staged?.after_consistent_point, beforeBarrier: staged?.before_barrier },
    { title, fromWal: true, afterConsistentPoint: true, beforeBarrier: true },
    `the staged row holding "${title}" (consistent point ${record.consistent_point}, activation barrier ${record.activation_barrier}): ${JSON.stringify(staged)}`,
  );
});
