/**
 * SYNC-CAP-013 Reset Baseline Fence Coverage: pushes left pending behind a
 * quarantine and pushes after the candidate slot exists, carried across the
 * operator's stream reset. Coverage is read through server inspection (the
 * reset's per-fence coverage records, the staged baseline, the projection and
 * pull effects) and on the wire (capture_pending, rebuild contents and
 * versions). The reset is driven through the adapter's phased `capture.reset`
 * control; the steps that start, hold and poison come from the durable reset
 * lifecycle's steps (SYNC-CAP-007).
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { inspectRows, tableIdOf } from '../support/capture/inspection.ts';
import {
  activatedReset,
  coverageOfReset,
  coverageOfVersion,
  fenceVersionOf,
  keyList,
  materializedEvents,
  noteFence,
  pushedMutations,
  pushedOutcome,
  stagedRows,
  thatFence,
} from '../support/reset-coverage/coverage.ts';
import { rebuiltRecord } from '../support/rebuilt-rows.ts';
import { activePointer, noteOutcome, phasedReset, resetRecord, resetState, startedResetId, startHeld } from '../support/stream-reset/operator.ts';
import { versionLabels } from '../support/version-labels.ts';
import type { SyncWorld } from '../support/world.ts';

Given('the harness has committed on the source database:', async function (this: SyncWorld, sql: string) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source transactions`);
  await server.sourceSql.query(sql);
});

Then('the push outcome of mutation {string} is {string} with a server version recorded as {string}', function (this: SyncWorld, mutationId: string, status: string, label: string) {
  const outcome = pushedOutcome(this, mutationId);
  this.assert.equal(outcome.status, status, `outcome status of ${mutationId}`);
  this.assert.ok(typeof outcome.server_version === 'string' && outcome.server_version !== '', `mutation ${mutationId} was answered with a server version: ${JSON.stringify(outcome)}`);
  versionLabels(this).set(label, outcome.server_version as string);
});

Given('the harness records the version of the last fence of row {string} as {string}', async function (this: SyncWorld, pk: string, label: string) {
  // The row's fence record in the source database: its latest fence wrote the version it now has.
  const tableId = await tableIdOf(this, 'tasks');
  const rows = await inspectRows<{ v: string }>(this, 'SELECT server_version AS v FROM synchro.row_versions WHERE table_id = $1 AND pk_text = $2', [tableId, pk]);
  if (rows.length !== 1 || rows[0] === undefined) throw new Error(`server inspection shows ${rows.length} fence records of row ${pk}`);
  versionLabels(this).set(label, rows[0].v);
});

When('the operator starts an authorized stream reset, stages its baseline and aborts it', async function (this: SyncWorld) {
  const held = await startHeld(this, 'baseline_staged');
  if (held === 'skipped') return held;
  const control = await phasedReset(this);
  if (control === 'skipped') return control;
  await control.abort();
  const record = await resetRecord(this, startedResetId(this));
  if (record.lifecycle !== 'aborted') throw new Error(`the operator's reset is "${record.lifecycle}" after the abort, not aborted`);
  return undefined;
});

/** Asks the reset in flight to go on through activation; a refusal is recorded for the Then steps to judge. */
async function askActivation(world: SyncWorld): Promise<'skipped' | undefined> {
  const control = await phasedReset(world);
  if (control === 'skipped') return control;
  noteOutcome(world, await control.continue());
  return undefined;
}

When('the operator asks the stream reset to activate before catch-up reaches the second push', async function (this: SyncWorld) {
  return askActivation(this);
});

When('the operator lets the stream reset activate unless it already has', async function (this: SyncWorld) {
  // A reset the scenario already saw activated has nothing left to do.
  if (resetState(this).last?.progress?.lifecycle === 'activated') return undefined;
  return askActivation(this);
});

Then(
  /^server inspection shows the fence of mutation "([^"]+)" with coverage "reset_baseline" bound to its fence ID, the reset ID, the candidate slot, the snapshot boundary and the new stream generation$/,
  async function (this: SyncWorld, mutationId: string) {
    const version = fenceVersionOf(this, mutationId);
    noteFence(this, mutationId, version);
    const reset = await activatedReset(this);
    const pointer = await activePointer(this);
    const records = await coverageOfVersion(this, version);
    this.assert.equal(
      records.map((r) => ({ reset: r.reset_id, coverage: r.coverage, slot: r.candidate_slot_name, boundary: r.snapshot_boundary, generation: r.target_generation, verified: r.verified, visible: r.visible_in_snapshot })),
      [{ reset: reset.reset_id, coverage: 'reset_baseline', slot: reset.candidate_slot_name, boundary: reset.snapshot_boundary, generation: pointer.generation, verified: true, visible: true }],
      `coverage records of the fence of mutation ${mutationId} (version ${version})`,
    );
    const fenceId = records[0]?.fence_id ?? '';
    this.assert.match(fenceId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'the coverage record names the fence ID');
    this.assert.equal(await materializedEvents(this, version), 0, `events the old stream materialized for the fence of mutation ${mutationId}`);
  },
);

Then('server inspection shows the fence of mutation {string} with coverage {string} from the candidate slot', async function (this: SyncWorld, mutationId: string, coverage: string) {
  const version = fenceVersionOf(this, mutationId);
  noteFence(this, mutationId, version);
  const reset = await activatedReset(this);
  const records = (await coverageOfVersion(this, version)).filter((r) => r.coverage === coverage);
  this.assert.equal(
    records.map((r) => ({ reset: r.reset_id, slot: r.candidate_slot_name, generation: r.target_generation })),
    [{ reset: reset.reset_id, slot: reset.candidate_slot_name, generation: reset.target_generation }],
    `"${coverage}" coverage records of the fence of mutation ${mutationId} (version ${version})`,
  );
  // Applied from the candidate slot: after its consistent point, at or before the activation barrier.
  const within = await inspectRows<{ ok: boolean }>(this, 'SELECT $1::pg_lsn >= $2::pg_lsn AND $1::pg_lsn <= $3::pg_lsn AS ok', [records[0]?.source_commit_lsn, reset.consistent_point, reset.activation_barrier]);
  this.assert.equal(within[0]?.ok, true, `the fence's commit ${records[0]?.source_commit_lsn} lies between the consistent point ${reset.consistent_point} and the barrier ${reset.activation_barrier}`);
});

Then('server inspection shows no {string} coverage record for that fence', async function (this: SyncWorld, coverage: string) {
  const fence = thatFence(this);
  const records = (await coverageOfVersion(this, fence.version)).filter((r) => r.coverage === coverage);
  this.assert.equal(records.length, 0, `"${coverage}" coverage records of the fence of mutation ${fence.mutationId}`);
});

Then('the activation waits or is refused until catch-up has materialized the second push', async function (this: SyncWorld) {
  const second = pushedMutations(this)[1];
  if (second === undefined) throw new Error('the scenario pushed no second mutation');
  const version = fenceVersionOf(this, second);
  const last = resetState(this).last;
  if (last?.refused !== undefined) {
    // Refused: nothing was activated, and the reset is still in flight to be let through later.
    const record = await resetRecord(this, startedResetId(this));
    this.assert.ok(['baseline_staged', 'catching_up'].includes(record.lifecycle), `a refused activation left the reset ${record.lifecycle}`);
    return;
  }
  this.assert.equal(last?.progress?.lifecycle, 'activated', `the activation request ended ${JSON.stringify(last)}`);
  const reset = await activatedReset(this);
  const applied = (await coverageOfVersion(this, version)).filter((r) => r.coverage === 'materialized' && r.reset_id === reset.reset_id);
  this.assert.equal(applied.length, 1, `catch-up coverage of the second push (version ${version}) when the reset activated`);
  const before = await inspectRows<{ ok: boolean }>(this, 'SELECT $1::pg_lsn <= $2::pg_lsn AS ok', [applied[0]?.source_commit_lsn, reset.activation_barrier]);
  this.assert.equal(before[0]?.ok, true, 'the second push was caught up through the activation barrier');
});

Then('server inspection shows every accepted fence up to the activation barrier with exactly one of coverage {string} or {string}', async function (this: SyncWorld, baseline: string, materialized: string) {
  const reset = await activatedReset(this);
  const mutations = pushedMutations(this);
  if (mutations.length === 0) throw new Error('the scenario pushed nothing');
  for (const mutationId of mutations) {
    const version = fenceVersionOf(this, mutationId);
    const records = await coverageOfVersion(this, version);
    const modes = [...records.filter((r) => r.reset_id === reset.reset_id).map((r) => r.coverage), ...Array.from({ length: await materializedEvents(this, version) }, () => 'materialized by the old stream')];
    this.assert.equal(modes.length, 1, `coverage modes of the fence of mutation ${mutationId}: ${JSON.stringify(modes)}`);
    this.assert.ok([baseline, materialized, 'materialized by the old stream'].includes(modes[0] as string), `the fence of mutation ${mutationId} is covered as ${modes[0]}`);
  }
  // Every record of the reset is through the barrier, and a baseline record only for a fence in the snapshot.
  for (const r of await coverageOfReset(this, reset.reset_id)) {
    const [placed] = await inspectRows<{ through: boolean; before_cp: boolean }>(this, 'SELECT $1::pg_lsn <= $2::pg_lsn AS through, $1::pg_lsn < $3::pg_lsn AS before_cp', [
      r.source_commit_lsn,
      reset.activation_barrier,
      reset.consistent_point,
    ]);
    this.assert.equal(placed?.through, true, `coverage record of fence ${r.fence_id} lies through the activation barrier`);
    if (r.coverage === baseline) this.assert.equal(placed?.before_cp, true, `baseline coverage of fence ${r.fence_id} is for a transaction before the consistent point`);
  }
});

Then('the rebuild pages hold row {string} of table {string} with title {string} and server version {string}', async function (this: SyncWorld, pk: string, table: string, title: string, label: string) {
  const version = versionLabels(this).get(label);
  if (version === undefined) throw new Error(`no server version was recorded as "${label}" earlier in this scenario`);
  const record = await rebuiltRecord(this, table, pk);
  this.assert.equal(record, { title, version }, `the rebuilt ${table} row ${pk}`);
});

Then('server inspection shows {int} historical coverage records for row {string} kept apart from its projected state', async function (this: SyncWorld, count: number, pk: string) {
  const reset = await activatedReset(this);
  const tableId = await tableIdOf(this, 'tasks');
  const history = await coverageOfReset(this, reset.reset_id, { tableId, pk });
  this.assert.equal(history.length, count, `coverage records of row ${pk} in the reset`);
  this.assert.equal(new Set(history.map((r) => r.fence_id)).size, count, `distinct fences among the coverage records of row ${pk}`);
  this.assert.equal(new Set(history.map((r) => r.server_version)).size, count, `distinct versions among the coverage records of row ${pk}`);
  // One projected row, with the version of the last covered fence; the history stays beside it.
  const projected = await inspectRows<{ v: string }>(this, 'SELECT server_version AS v FROM synchro.projections WHERE table_id = $1 AND pk_text = $2', [tableId, pk]);
  this.assert.equal(projected.map((p) => p.v), [history.at(-1)?.server_version], `projected versions of row ${pk}`);
  const staged = await stagedRows(this, reset.reset_id, tableId, [pk]);
  this.assert.equal(staged.map((s) => s.server_version), [history.at(-1)?.server_version], `staged versions of row ${pk}`);
});

Then('server inspection shows no projected row and no live version for rows {string} of table {string} in the new generation', async function (this: SyncWorld, keys: string, table: string) {
  const reset = await activatedReset(this);
  const tableId = await tableIdOf(this, table);
  const pks = keyList(keys);
  const projected = await inspectRows<{ pk_text: string }>(this, 'SELECT pk_text FROM synchro.projections WHERE table_id = $1 AND pk_text = ANY($2::text[])', [tableId, pks]);
  this.assert.equal(projected.map((p) => p.pk_text), [], `projected rows among ${keys}`);
  const live = (await stagedRows(this, reset.reset_id, tableId, pks)).filter((s) => s.state === 'live');
  this.assert.equal(live.map((s) => s.pk_text), [], `rows among ${keys} staged live by the reset`);
  // The baseline did stage the snapshot's other rows: an empty stage would show nothing.
  const [others] = await inspectRows<{ n: number }>(this, 'SELECT count(*)::int AS n FROM synchro.reset_staged_rows WHERE reset_id = $1::uuid AND table_id = $2', [reset.reset_id, tableId]);
  this.assert.ok((others?.n ?? 0) > 0, `the reset staged rows of table ${table}`);
});

Then('server inspection shows no pull effect and no deletion version for rows {string} created by the reset', async function (this: SyncWorld, keys: string) {
  const reset = await activatedReset(this);
  const tableId = await tableIdOf(this, 'tasks');
  const pks = keyList(keys);
  const effects = await inspectRows<{ pk_text: string; op: string }>(this, 'SELECT pk_text, op FROM synchro.scope_effects WHERE stream_generation = $1 AND table_id = $2 AND pk_text = ANY($3::text[])', [
    reset.target_generation,
    tableId,
    pks,
  ]);
  this.assert.equal(effects, [], `pull effects of the new generation for rows ${keys}`);
  const deleted = (await stagedRows(this, reset.reset_id, tableId, pks)).filter((s) => s.state === 'deleted');
  this.assert.equal(deleted.map((s) => s.pk_text), [], `deletion versions the reset staged for rows ${keys}`);
});

Then('server inspection shows the staged version of row {string} of table {string} equal to {string}', async function (this: SyncWorld, pk: string, table: string, label: string) {
  const version = versionLabels(this).get(label);
  if (version === undefined) throw new Error(`no server version was recorded as "${label}" earlier in this scenario`);
  const reset = await activatedReset(this);
  const staged = await stagedRows(this, reset.reset_id, await tableIdOf(this, table), [pk]);
  this.assert.equal(staged.map((s) => ({ version: s.server_version, state: s.state })), [{ version, state: 'deleted' }], `staged versions of ${table} row ${pk}`);
});

Then('server inspection shows no pull effect in the new stream generation at or before its generation start', async function (this: SyncWorld) {
  const reset = await activatedReset(this);
  // The baseline sits at the generation start; only WAL after it may leave effects.
  const effects = await inspectRows<{ pk_text: string }>(
    this,
    'SELECT e.pk_text FROM synchro.scope_effects e JOIN synchro.wal_progress p ON p.stream_generation = e.stream_generation WHERE e.commit_lsn <= p.generation_start_lsn',
  );
  this.assert.equal(effects.map((e) => e.pk_text), [], `pull effects of generation ${reset.target_generation} at or before its generation start`);
});

Then("server inspection shows every {string} coverage record bound to a fence that was visible in the candidate slot's snapshot", async function (this: SyncWorld, coverage: string) {
  const reset = await activatedReset(this);
  const records = (await coverageOfReset(this, reset.reset_id)).filter((r) => r.coverage === coverage);
  this.assert.ok(records.length > 0, `the reset holds "${coverage}" coverage records`);
  for (const r of records) {
    this.assert.equal(
      { boundary: r.snapshot_boundary, visible: r.visible_in_snapshot, slot: r.candidate_slot_name, point: r.consistent_point },
      { boundary: reset.snapshot_boundary, visible: true, slot: reset.candidate_slot_name, point: reset.consistent_point },
      `"${coverage}" coverage of fence ${r.fence_id}`,
    );
  }
});
