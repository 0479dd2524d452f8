/**
 * SYNC-CAP-007 Durable Reset Slot Lifecycle: the operator's reset driven phase
 * by phase through the adapter's `capture.reset` control, with the reset
 * record, the active-slot pointer and PostgreSQL's slot catalog read through
 * server inspection. Kills are real: the operator session's backends are
 * terminated, and the replication connection that created the candidate slot
 * is terminated from the harness's own session.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import type { DataTable } from '@cucumber/cucumber';
import { inspectRows } from '../support/capture/inspection.ts';
import { databaseCrashPhrase } from '../support/database-crash/index.ts';
import { invalidateIdleSlot, slotInOtherDatabase } from '../support/stream-reset/bad-slots.ts';
import { activatedRecord, activePointer, holdPhase, noteOutcome, phasedReset, resetRecord, resetState, startedResetId, startHeld, waitUntil } from '../support/stream-reset/operator.ts';
import type { SyncWorld } from '../support/world.ts';

async function sourceSql(world: SyncWorld) {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source transactions`);
  return server.sourceSql;
}

/**
 * A TRUNCATE that bypasses the registered relation's guard (a maintenance
 * session with triggers off, as `session_replication_role = replica` gives a
 * superuser): the worker meets it in the WAL and quarantines it, which
 * blocks the stream until an operator resets it.
 */
Given('the harness has committed on the source database, blocking the stream with a truncate poison:', async function (this: SyncWorld, sql: string) {
  const source = await sourceSql(this);
  await source.query(`SET session_replication_role = replica; ${sql}; RESET session_replication_role`);
  await waitUntil(this, 'the capture worker quarantines the truncate', async () => (await inspectRows(this, "SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active'")).length > 0);
});

When('the operator starts an authorized stream reset and holds it after the candidate slot is created', async function (this: SyncWorld) {
  return startHeld(this, 'preparing');
});

Given('the operator starts an authorized stream reset and holds it at phase {string}', async function (this: SyncWorld, phase: string) {
  return startHeld(this, holdPhase(phase));
});

/** Slots and everything else in shared memory are written to disk by a checkpoint; an immediate shutdown after it keeps them. */
When('the source database completes a checkpoint', async function (this: SyncWorld) {
  await (await sourceSql(this)).query('CHECKPOINT');
});

When('the harness closes the replication connection that created the candidate slot', async function (this: SyncWorld) {
  const source = await sourceSql(this);
  // The only replication connection of the server's database while the reset holds is the one that created the slot.
  const found = await source.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE backend_type = 'walsender' AND datname = current_database()");
  if (found.length === 0) throw new Error('no replication connection of the server database was open to close');
  const pids = found.map((r) => r.pid);
  // Selected first, terminated after: a filter beside the terminate call may be evaluated after it.
  await source.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
  await waitUntil(this, 'the replication connection has ended', async () => (await source.query('SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1::int[])', [pids])).length === 0);
});

When('the operator lets the stream reset continue', async function (this: SyncWorld) {
  const control = await phasedReset(this);
  if (control === 'skipped') return control;
  noteOutcome(this, await control.continue());
  return undefined;
});

When('the operator asks the stream reset to activate', async function (this: SyncWorld) {
  const control = await phasedReset(this);
  if (control === 'skipped') return control;
  noteOutcome(this, await control.continue());
  return undefined;
});

When('the operator session is killed', async function (this: SyncWorld) {
  const control = await phasedReset(this);
  if (control === 'skipped') return control;
  const ended = await control.killOperator();
  if (ended === 0) throw new Error('the operator reset had no session to kill');
  return undefined;
});

When('the operator resumes or restarts the stream reset and runs it to completion', async function (this: SyncWorld) {
  const control = await phasedReset(this);
  if (control === 'skipped') return control;
  let outcome = noteOutcome(this, await control.continue());
  // A reset that lost its snapshot before staging ends aborted: the operator starts a new one.
  if (outcome.progress?.lifecycle === 'aborted') outcome = noteOutcome(this, await control.start());
  if (outcome.progress?.lifecycle !== 'activated') throw new Error(`the operator's reset did not run to completion: ${JSON.stringify(outcome)}`);
  return undefined;
});

Given('the harness records the reset record as {string}', async function (this: SyncWorld, label: string) {
  resetState(this).records.set(label, await resetRecord(this, startedResetId(this)));
});

Given('the harness records the active slot pointer as {string}', async function (this: SyncWorld, label: string) {
  resetState(this).pointers.set(label, await activePointer(this));
});

When(/^the harness replaces the candidate slot with (a temporary logical slot of the same name|nothing, dropping the candidate slot|a permanent slot of the same name using plugin "test_decoding"|the same slot advanced past a committed transaction that catch-up has not materialized)$/, async function (this: SyncWorld, replacement: string) {
  const source = await sourceSql(this);
  const slot = (await resetRecord(this, startedResetId(this))).candidate_slot_name;
  if (replacement.startsWith('the same slot advanced')) {
    await source.query("INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-gap', 'alice', 'skipped by the advanced slot')");
    const [committed] = await source.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l');
    // A slot advances no further than the flushed WAL: flush it past the commit first (the message's flush flag).
    await source.query("SELECT pg_logical_emit_message(false, 'harness_flush', '', true)");
    const [moved] = await source.query<{ past: boolean }>('SELECT end_lsn >= $2::pg_lsn AS past FROM pg_replication_slot_advance($1, pg_current_wal_flush_lsn())', [slot, committed?.l]);
    if (moved?.past !== true) throw new Error(`the candidate slot ${slot} did not advance past the committed transaction at ${committed?.l}`);
    return;
  }
  await source.query('SELECT pg_drop_replication_slot($1)', [slot]);
  if (replacement.startsWith('nothing')) return;
  if (replacement.startsWith('a permanent slot')) {
    await source.query("SELECT pg_create_logical_replication_slot($1, 'test_decoding')", [slot]);
    return;
  }
  // A temporary slot lives as long as the session that created it: the session stays open until the scenario's server closes.
  if (!source.session) throw new Error('the server adapter offers no further source session to hold a temporary slot');
  const session = await source.session();
  await session.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput', true)", [slot]);
});

// Both replacements change what the whole cluster holds (a second database, a slot timeout): the scenario gets a cluster of its own.
databaseCrashPhrase(/^the harness replaces the candidate slot with a permanent pgoutput slot of the same name in another database$/);
databaseCrashPhrase(/^the harness replaces the candidate slot with a slot of the same name that PostgreSQL reports as invalidated \("lost"\)$/);

When('the harness replaces the candidate slot with a permanent pgoutput slot of the same name in another database', async function (this: SyncWorld) {
  return slotInOtherDatabase(this, (await resetRecord(this, startedResetId(this))).candidate_slot_name);
});

When(/^the harness replaces the candidate slot with a slot of the same name that PostgreSQL reports as invalidated \("lost"\)$/, async function (this: SyncWorld) {
  return invalidateIdleSlot(this, (await resetRecord(this, startedResetId(this))).candidate_slot_name);
});

Then('server inspection shows the active slot with:', async function (this: SyncWorld, table: DataTable) {
  const expected = table.hashes()[0];
  if (expected === undefined) throw new Error('the table names no slot');
  const rows = await inspectRows<{ slot_type: string; plugin: string; temporary: boolean; database: string; configured: string }>(
    this,
    `SELECT s.slot_type, s.plugin, s.temporary, s.database, current_database() AS configured
       FROM synchro.wal_progress p JOIN pg_replication_slots s ON s.slot_name = p.slot_name`,
  );
  const slot = rows[0];
  this.assert.equal(rows.length, 1, 'the active-slot pointer names a slot that exists');
  if (slot === undefined) return;
  this.assert.equal(slot.slot_type, expected.slot_type, 'slot type');
  this.assert.equal(slot.plugin, expected.plugin, 'plugin');
  this.assert.equal(String(slot.temporary), expected.temporary, 'temporary');
  this.assert.equal(slot.database, expected.database === 'the configured database' ? slot.configured : expected.database, 'database');
});

Then('server inspection shows the reset record names that slot as its candidate slot', async function (this: SyncWorld) {
  const pointer = await activePointer(this);
  const record = await activatedRecord(this);
  this.assert.ok(record !== undefined, `no activated reset record names the active generation ${pointer.generation}`);
  this.assert.equal(record?.candidate_slot_name, pointer.slot, 'the activated reset record names the active slot as its candidate');
});

Then('server inspection shows the candidate slot was created by a replication-protocol command that exported a snapshot', async function (this: SyncWorld) {
  const record = await activatedRecord(this);
  this.assert.ok(record !== undefined, 'an activated reset record names the active generation');
  if (record === undefined) return;
  const command = new RegExp(`^CREATE_REPLICATION_SLOT "?${record.candidate_slot_name}"? LOGICAL pgoutput \\(SNAPSHOT 'export'\\)$`);
  this.assert.match(record.slot_created_by ?? '', command, 'the command the reset record says created the candidate slot');
  this.assert.ok((record.exported_snapshot_name ?? '') !== '', 'the reset record names the exported snapshot');
});

Then('the stream reset ends in lifecycle {string} or stays before {string}', async function (this: SyncWorld, ended: string, before: string) {
  const record = await resetRecord(this, startedResetId(this));
  const earlier = ['preparing', 'baseline_staged', 'catching_up'];
  const allowed = [ended, ...earlier.slice(0, earlier.indexOf(before))];
  this.assert.ok(allowed.includes(record.lifecycle), `the reset record's lifecycle is "${record.lifecycle}", not one of ${allowed.join(', ')}`);
});

Then('server inspection shows the active slot pointer unchanged', async function (this: SyncWorld) {
  const before = resetState(this).pointerBefore;
  if (before === undefined) throw new Error('no active-slot pointer was recorded before the reset started');
  this.assert.equal(await activePointer(this), before, 'the active-slot pointer');
});

Then('server inspection shows the active slot pointer equal to {string}', async function (this: SyncWorld, label: string) {
  const before = resetState(this).pointers.get(label);
  if (before === undefined) throw new Error(`no active-slot pointer was recorded as "${label}"`);
  this.assert.equal(await activePointer(this), before, 'the active-slot pointer');
});

Then('server inspection shows the old stream still blocked by its quarantine record', async function (this: SyncWorld) {
  const pointer = await activePointer(this);
  const before = resetState(this).pointerBefore;
  const active = await inspectRows<{ stream_generation: string }>(this, "SELECT stream_generation FROM synchro.wal_poison WHERE lifecycle = 'active'");
  this.assert.equal(active.length, 1, 'one active quarantine record');
  this.assert.equal(active[0]?.stream_generation, before?.generation ?? pointer.generation, 'the quarantine belongs to the old stream generation');
  this.assert.equal(pointer.generation, before?.generation ?? pointer.generation, 'capture still runs the old stream generation');
});

Then(
  /^server inspection shows the reset record with a reset ID, the candidate slot name, the database, plugin "pgoutput", the consistent point, the snapshot boundary and lifecycle "([a-z_]+)"$/,
  async function (this: SyncWorld, phase: string) {
    const record = await resetRecord(this, startedResetId(this));
    const slots = await inspectRows<{ plugin: string; database: string; temporary: boolean; confirmed: string | null; configured: string }>(
      this,
      'SELECT plugin, database, temporary, confirmed_flush_lsn::text AS confirmed, current_database() AS configured FROM pg_replication_slots WHERE slot_name = $1',
      [record.candidate_slot_name],
    );
    const slot = slots[0];
    this.assert.match(record.reset_id, /^[0-9a-f-]{36}$/, 'reset ID');
    this.assert.ok(slot !== undefined, `the candidate slot ${record.candidate_slot_name} exists`);
    this.assert.equal(record.database_name, slot?.configured, 'the database the record names');
    this.assert.equal(slot?.database, record.database_name, 'the candidate slot lives in the database the record names');
    this.assert.equal(record.plugin, 'pgoutput', 'the plugin the record names');
    this.assert.equal(slot?.plugin, 'pgoutput', 'the candidate slot plugin');
    this.assert.equal(slot?.temporary, false, 'the candidate slot is permanent');
    // Nothing has consumed the candidate slot before activation: it still starts at the recorded consistent point.
    this.assert.equal(slot?.confirmed, record.consistent_point, 'the consistent point the record names is where the candidate slot starts');
    this.assert.match(record.snapshot_boundary ?? '', /^\d+:\d+:[\d,]*$/, 'the snapshot boundary (xmin:xmax:xip of the exported snapshot)');
    this.assert.equal(record.lifecycle, phase, 'lifecycle');
  },
);

Then('the activated reset used either the candidate slot and consistent point of {string} or a new candidate slot whose reset record is complete', async function (this: SyncWorld, label: string) {
  const before = resetState(this).records.get(label);
  if (before === undefined) throw new Error(`no reset record was recorded as "${label}"`);
  const record = await activatedRecord(this);
  this.assert.ok(record !== undefined, 'an activated reset record names the active generation');
  if (record === undefined) return;
  const pointer = await activePointer(this);
  this.assert.equal(pointer.slot, record.candidate_slot_name, 'the active slot is the activated reset record candidate');
  if (record.reset_id === before.reset_id) {
    this.assert.equal(record.candidate_slot_name, before.candidate_slot_name, 'the resumed reset kept its candidate slot');
    this.assert.equal(record.consistent_point, before.consistent_point, 'the resumed reset kept its consistent point');
    return;
  }
  for (const field of ['consistent_point', 'exported_snapshot_name', 'snapshot_boundary', 'slot_created_by', 'activation_barrier', 'database_name'] as const) {
    this.assert.ok((record[field] ?? '') !== '', `the new reset record names its ${field}`);
  }
  this.assert.notEqual(record.candidate_slot_name, before.candidate_slot_name, 'the restarted reset created a new candidate slot');
  this.assert.equal((await resetRecord(this, before.reset_id)).lifecycle, 'aborted', 'the reset it replaced is marked aborted');
});

Then('no slot that a reset record marks as aborted is the active slot', async function (this: SyncWorld) {
  const rows = await inspectRows<{ aborted: number; activated: number }>(
    this,
    `SELECT count(*) FILTER (WHERE r.lifecycle = 'aborted')::int AS aborted, count(*) FILTER (WHERE r.lifecycle = 'activated')::int AS activated
       FROM synchro.wal_progress p JOIN synchro.stream_resets r ON r.candidate_slot_name = p.slot_name`,
  );
  this.assert.equal(rows[0]?.aborted, 0, 'aborted reset records naming the active slot');
  this.assert.equal(rows[0]?.activated, 1, 'activated reset records naming the active slot');
});

Then('the activation is refused', async function (this: SyncWorld) {
  const last = resetState(this).last;
  this.assert.ok(last?.refused !== undefined, `the activation was not refused: ${JSON.stringify(last)}`);
  if (last?.refused !== undefined) this.attach(`the server refused the activation: ${last.refused}`, 'text/plain');
  const record = await resetRecord(this, startedResetId(this));
  this.assert.notEqual(record.lifecycle, 'activated', 'the reset record lifecycle');
});

Then('server inspection shows the capture worker reading the slot that the active-slot pointer names', async function (this: SyncWorld) {
  const server = await this.readyServer();
  const source = await sourceSql(this);
  const [mark] = await source.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l');
  if (!server.capture) throw new Error(`server adapter "${server.id}" has no capture control to wait for the worker`);
  await server.capture.awaitMaterialized(this.deadlineMs);
  const rows = await inspectRows<{ reads: boolean }>(
    this,
    'SELECT s.confirmed_flush_lsn >= $1::pg_lsn AS reads FROM synchro.wal_progress p JOIN pg_replication_slots s ON s.slot_name = p.slot_name',
    [mark?.l],
  );
  this.assert.equal(rows[0]?.reads, true, `the slot the pointer names has been read and acknowledged past ${mark?.l}`);
});
