/**
 * Operator stream reset: the way out of a quarantine that no retry can clear
 * (a TRUNCATE, a transaction that will never decode), and of a lost slot.
 *
 * The reset runs as durable phases, each one a commit of its record in
 * `synchro.stream_resets` (SQL 061), so an operator session that dies between
 * them leaves a record that says how to go on:
 *
 * - `preparing`: a permanent candidate slot is created over the replication
 *   protocol with an exported snapshot; its consistent point, the snapshot
 *   name and the snapshot's boundary are recorded. The snapshot lives only
 *   while that replication connection stays open and idle.
 * - `baseline_staged`: a transaction importing the snapshot copies every
 *   registered row and its fence version into `synchro.reset_staged_rows`,
 *   apart from the live projection, which still serves the old stream.
 * - `catching_up`: the candidate slot's transactions after the consistent
 *   point are decoded and applied to the staged rows; the slot itself is only
 *   peeked, so it still holds everything not yet activated.
 * - activation: the candidate slot is verified (permanent, logical, pgoutput,
 *   this database, not invalidated, not advanced past what catch-up applied),
 *   catch-up runs to the WAL flushed now, and one commit replaces the
 *   projected state with the staged rows and points `synchro.wal_progress` at
 *   the candidate slot with a new stream generation. The worker then reads the
 *   candidate slot after the activation barrier.
 *
 * A reset whose snapshot was lost while still `preparing` cannot stage that
 * snapshot any more: it is aborted and its candidate slot dropped; the
 * operator starts another. A staged or catching-up reset resumes with the
 * same candidate slot and consistent point.
 *
 * Approximations of this small reference (see docs/decisions.md): the phases
 * run inside the server process, driven by test controls (the operator's
 * session is a database connection the server opens for them), the capture
 * worker is paused from the first phase until activation or abort, and the
 * old stream's effects are dropped at activation instead of being retained
 * for audit.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { ResetPhase, ResetProgress, StreamResetResult } from '../core/capture-control.ts';
import { fault } from '../core/faults.ts';
import { formatLsn, parseLsn } from '../core/lsn.ts';
import { CandidateSession, dropCandidateSlot, peekCandidate, terminateSessions } from './candidate-slot.ts';
import { materializeTransaction } from './materialize.ts';
import type { RegisteredTable } from './registered-table.ts';
import { bindCoverage, coverageRefusal, pendingFencesInSnapshot, recordBaselineCoverage, recordCatchUpCoverage, withDeletionVersions } from './reset-coverage.ts';
import { groupTransactions, type RelationInfo, type RowEvent, rowEvents, type TableLookup, UNCHANGED } from './transaction.ts';
import { flushWal } from './wal-flush.ts';

export class StreamResetFailed extends Error {}
/** Activation was refused: the candidate slot cannot carry the new stream. Nothing was activated; the reset stays resumable. */
export class ActivationRefused extends Error {}

/** Every connection of the operator's reset carries this name, so the operator session can be found (and killed). */
export const OPERATOR_APPLICATION = 'synchro-reset-operator';

interface Registry {
  lookup: TableLookup;
  tables: Map<string, RegisteredTable>;
}

interface ResetRecord {
  resetId: string;
  slot: string;
  lifecycle: ResetPhase | 'activated' | 'aborted';
  consistentPoint: string | null;
  snapshotName: string | null;
  caughtUpEnd: string | null;
  previousGeneration: string | null;
}

async function inFlight(db: pg.ClientBase): Promise<ResetRecord | undefined> {
  const r = (await db.query<{ reset_id: string; candidate_slot_name: string; lifecycle: ResetRecord['lifecycle']; cp: string | null; snap: string | null; caught: string | null; prev: string | null }>(
    `SELECT reset_id::text, candidate_slot_name, lifecycle, consistent_point::text AS cp, exported_snapshot_name AS snap, caught_up_end_lsn::text AS caught, previous_generation AS prev
       FROM synchro.stream_resets WHERE lifecycle IN ('preparing', 'baseline_staged', 'catching_up')`,
  )).rows[0];
  if (r === undefined) return undefined;
  return { resetId: r.reset_id, slot: r.candidate_slot_name, lifecycle: r.lifecycle, consistentPoint: r.cp, snapshotName: r.snap, caughtUpEnd: r.caught, previousGeneration: r.prev };
}

/**
 * Phase `preparing`: the record, then the candidate slot and its exported
 * snapshot, recorded with their boundary. The operator's session (a
 * CandidateSession, as the projection bootstrap's coordinator has) keeps the
 * replication connection that created the slot open, because the exported
 * snapshot lives only as long as it does, and is kept between held phases, as
 * an operator's psql would be.
 */
async function prepare(session: CandidateSession): Promise<ResetRecord> {
  const db = await session.connection();
  const previous = (await db.query<{ g: string }>('SELECT stream_generation AS g FROM synchro.wal_progress')).rows[0];
  if (previous === undefined) throw new StreamResetFailed('capture has never started, so there is no stream to reset');
  const resetId = randomUUID();
  const slot = `synchro_reset_${resetId.replaceAll('-', '').slice(0, 24)}`;
  // Refused while another reset is in flight (unique index), before any slot exists.
  await db.query("INSERT INTO synchro.stream_resets (reset_id, candidate_slot_name, previous_generation, lifecycle, database_name) VALUES ($1, $2, $3, 'preparing', current_database())", [resetId, slot, previous.g]);
  const created = await session.createSlot(slot);
  await db.query('UPDATE synchro.stream_resets SET consistent_point = $2, exported_snapshot_name = $3, snapshot_boundary = $4, slot_created_by = $5 WHERE reset_id = $1', [
    resetId,
    created.consistentPoint,
    created.snapshotName,
    fault('cap007-snapshot-boundary-not-persisted') ? null : created.snapshotBoundary, // fault: server:cap007-snapshot-boundary-not-persisted
    created.command,
  ]);
  return { resetId, slot, lifecycle: 'preparing', consistentPoint: created.consistentPoint, snapshotName: created.snapshotName, caughtUpEnd: null, previousGeneration: previous.g };
}

/** Every registered row as the snapshot sees it, with the version of its latest fence. */
async function snapshotRows(db: pg.ClientBase, tables: Map<string, RegisteredTable>): Promise<{ tableId: string; k: string; row: Record<string, unknown>; v: string; s: 'live' | 'deleted' }[]> {
  const out: { tableId: string; k: string; row: Record<string, unknown>; v: string; s: 'live' | 'deleted' }[] = [];
  for (const t of [...tables.values()].sort((a, b) => (a.def.tableId < b.def.tableId ? -1 : 1))) {
    const source = `${pg.escapeIdentifier(t.schema)}.${pg.escapeIdentifier(t.name)}`;
    // Same join as the first-start baseline: a row enters with the version its latest fence gave it.
    const { rows } = await db.query<{ k: string; row: Record<string, unknown>; v: string; s: 'live' | 'deleted' }>(
      `SELECT to_jsonb(t) ->> $2 AS k, to_jsonb(t) AS row, rv.server_version AS v, rv.state AS s
         FROM ${source} t JOIN synchro.row_versions rv ON rv.table_id = $1 AND rv.pk_text = to_jsonb(t) ->> $2
        ORDER BY (to_jsonb(t) ->> $2) COLLATE "C"`,
      [t.def.tableId, t.def.pkColumn],
    );
    for (const r of rows) out.push({ tableId: t.def.tableId, ...r });
  }
  return out;
}

/**
 * Phase `baseline_staged`: imports the exported snapshot (which fails once the
 * creating connection is gone: the reset is then aborted) and stages its rows.
 */
async function stageBaseline(session: CandidateSession, record: ResetRecord, registry: Registry): Promise<void> {
  const db = await session.connection();
  let rows: Awaited<ReturnType<typeof snapshotRows>>;
  // The accepted fences the snapshot holds and the old stream never materialized (SYNC-CAP-013).
  const pending = await pendingFencesInSnapshot(db, record.consistentPoint as string);
  await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  try {
    await db.query(fault('cap007-stage-without-exported-snapshot') ? 'SELECT 1' : `SET TRANSACTION SNAPSHOT '${record.snapshotName}'`); // fault: server:cap007-stage-without-exported-snapshot
    rows = await withDeletionVersions(db, registry.tables, await snapshotRows(db, registry.tables));
    await db.query('COMMIT');
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
  // Written outside the snapshot (the record changed after it was taken), in one commit with the phase.
  await db.query('BEGIN');
  try {
    await db.query('DELETE FROM synchro.reset_staged_rows WHERE reset_id = $1', [record.resetId]);
    for (const r of rows) {
      // The snapshot columns keep the baseline as staged; catch-up changes only the others.
      await db.query(
        "INSERT INTO synchro.reset_staged_rows (reset_id, table_id, pk_text, row_image, server_version, state, staged_from, snapshot_image, snapshot_version, snapshot_state) VALUES ($1, $2, $3, $4, $5, $6, 'snapshot', $4, $5, $6)",
        [record.resetId, r.tableId, r.k, r.s === 'live' ? r.row : null, r.v, r.s],
      );
    }
    await recordBaselineCoverage(db, record, pending);
    await db.query("UPDATE synchro.stream_resets SET lifecycle = 'baseline_staged' WHERE reset_id = $1 AND lifecycle = 'preparing'", [record.resetId]);
    await db.query('COMMIT');
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
  // The snapshot has served its purpose; the candidate slot is permanent and stays.
  await session.closeReplication();
  record.lifecycle = 'baseline_staged';
}

/** Applies one decoded row event to the staged rows: the final image and the version of its fence. */
async function stageEvent(db: pg.ClientBase, resetId: string, ev: RowEvent, commit: string): Promise<void> {
  if (ev.tableId === null) return;
  if (ev.op === 'delete' || ev.image === null) {
    await db.query(
      `INSERT INTO synchro.reset_staged_rows (reset_id, table_id, pk_text, row_image, server_version, state, staged_from) VALUES ($1, $2, $3, NULL, $4, 'deleted', $5)
       ON CONFLICT (reset_id, table_id, pk_text) DO UPDATE SET row_image = NULL, server_version = excluded.server_version, state = 'deleted', staged_from = excluded.staged_from`,
      [resetId, ev.tableId, ev.pkText, ev.fence.version, commit],
    );
    return;
  }
  const changed: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(ev.image)) if (value !== UNCHANGED) changed[column] = value;
  // Unchanged (TOASTed) columns keep what the staged row had.
  await db.query(
    `INSERT INTO synchro.reset_staged_rows (reset_id, table_id, pk_text, row_image, server_version, state, staged_from) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (reset_id, table_id, pk_text) DO UPDATE SET row_image = coalesce(synchro.reset_staged_rows.row_image, '{}'::jsonb) || excluded.row_image,
       server_version = excluded.server_version, state = excluded.state, staged_from = excluded.staged_from`,
    [resetId, ev.tableId, ev.pkText, changed, ev.fence.version, ev.fence.state, commit],
  );
}

/**
 * Phase `catching_up`: decodes the candidate slot from its consistent point up
 * to the WAL flushed now and applies every transaction not yet applied to the
 * staged rows, one commit per transaction with the record's catch-up
 * position. The slot is only peeked: it keeps everything for the worker.
 */
async function catchUp(session: CandidateSession, record: ResetRecord, registry: Registry): Promise<void> {
  const db = await session.connection();
  if (record.lifecycle === 'baseline_staged') {
    await db.query("UPDATE synchro.stream_resets SET lifecycle = 'catching_up', caught_up_end_lsn = consistent_point WHERE reset_id = $1", [record.resetId]);
    record.lifecycle = 'catching_up';
    record.caughtUpEnd = record.consistentPoint;
  }
  const flush = await flushWal(db);
  const raw = await peekCandidate(db, record.slot, flush, fault('cap007-catch-up-consumes-candidate-slot') ? 'consume' : 'peek'); // fault: server:cap007-catch-up-consumes-candidate-slot
  const relations = new Map<number, RelationInfo>();
  const applied = parseLsn(record.caughtUpEnd as string);
  for (const tx of groupTransactions(raw)) {
    // Relations are learnt from every transaction, applied or not, so later events can be read.
    const events = rowEvents(tx, registry.lookup, relations);
    if (tx.endLsn <= applied) continue;
    const commit = formatLsn(tx.commitLsn);
    await db.query('BEGIN');
    try {
      for (const ev of events) await stageEvent(db, record.resetId, ev, commit);
      await recordCatchUpCoverage(db, record, tx, events);
      await db.query('UPDATE synchro.stream_resets SET caught_up_end_lsn = $2 WHERE reset_id = $1', [record.resetId, formatLsn(tx.endLsn)]);
      await db.query('COMMIT');
    } catch (e) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
    record.caughtUpEnd = formatLsn(tx.endLsn);
  }
  // Everything committed before the flush position is applied.
  if (parseLsn(flush) > parseLsn(record.caughtUpEnd as string)) {
    await db.query('UPDATE synchro.stream_resets SET caught_up_end_lsn = $2 WHERE reset_id = $1', [record.resetId, flush]);
    record.caughtUpEnd = flush;
  }
}

/** Why the candidate slot cannot carry the new stream, or undefined when it can. */
async function slotRefusal(db: pg.ClientBase, record: ResetRecord): Promise<string | undefined> {
  if (fault('cap007-activation-skips-slot-verification')) return undefined; // fault: server:cap007-activation-skips-slot-verification
  const s = (await db.query<{ slot_type: string; plugin: string | null; temporary: boolean; same_db: boolean; wal_status: string | null; invalidation_reason: string | null; confirmed: string | null }>(
    `SELECT slot_type, plugin, temporary, database IS NOT DISTINCT FROM current_database() AS same_db, wal_status, invalidation_reason, confirmed_flush_lsn::text AS confirmed
       FROM pg_replication_slots WHERE slot_name = $1`,
    [record.slot],
  )).rows[0];
  if (s === undefined) return 'the candidate slot is missing';
  if (s.slot_type !== 'logical') return 'the candidate slot is not a logical slot';
  if (s.temporary) return 'the candidate slot is temporary';
  if (!s.same_db) return 'the candidate slot belongs to another database';
  if (s.plugin !== 'pgoutput') return `the candidate slot uses plugin ${s.plugin}, not pgoutput`;
  if (s.wal_status === 'lost' || s.invalidation_reason !== null) return 'the candidate slot is invalidated';
  if (s.confirmed === null) return 'the candidate slot has no confirmed position';
  const confirmed = parseLsn(s.confirmed);
  // Before the consistent point it is not the slot the snapshot ends at; past what catch-up applied, WAL nobody staged is gone.
  if (confirmed < parseLsn(record.consistentPoint as string)) return 'the candidate slot starts before the consistent point';
  if (confirmed > parseLsn(record.caughtUpEnd as string)) return 'the candidate slot was advanced past what catch-up applied';
  return undefined;
}

async function refuse(db: pg.ClientBase, record: ResetRecord, reason: string): Promise<never> {
  await db.query('UPDATE synchro.stream_resets SET last_refusal = $2 WHERE reset_id = $1', [record.resetId, reason]);
  throw new ActivationRefused(reason);
}

/**
 * Activation: verified, caught up to now, verified again under the record's
 * lock, then one commit that installs the staged baseline and points the
 * durable progress at the candidate slot with a new generation.
 */
async function activate(session: CandidateSession, record: ResetRecord, registry: Registry): Promise<StreamResetResult> {
  const db = await session.connection();
  // Checked before catching up: a slot advanced past what was applied would otherwise look caught up.
  const early = await slotRefusal(db, record);
  if (early !== undefined) await refuse(db, record, early);
  if (fault('cap007-activate-past-uncaught-wal')) record.caughtUpEnd = await flushWal(db); // fault: server:cap007-activate-past-uncaught-wal
  await catchUp(session, record, registry);
  const generation = randomUUID();
  const barrier = record.caughtUpEnd as string;
  const old = (await db.query<{ s: string }>('SELECT slot_name AS s FROM synchro.wal_progress')).rows[0]?.s as string;
  await db.query('BEGIN');
  try {
    await db.query('SELECT 1 FROM synchro.stream_resets WHERE reset_id = $1 FOR UPDATE', [record.resetId]);
    const late = await slotRefusal(db, record);
    if (late !== undefined) {
      await db.query('ROLLBACK');
      await refuse(db, record, late);
    }
    const uncovered = await coverageRefusal(db, record, barrier);
    if (uncovered !== undefined) {
      await db.query('ROLLBACK');
      await refuse(db, record, uncovered);
    }
    const staged = await db.query<{ table_id: string; pk_text: string; row_image: Record<string, unknown>; server_version: string }>(
      `SELECT table_id, pk_text, row_image, server_version FROM synchro.reset_staged_rows WHERE reset_id = $1 AND state = 'live'
        ORDER BY table_id COLLATE "C", pk_text COLLATE "C"`,
      [record.resetId],
    );
    const events: RowEvent[] = staged.rows.map((r, i) => ({ ordinal: i, relationOid: null, tableId: r.table_id, op: 'baseline', pkText: r.pk_text, image: r.row_image, fence: { version: r.server_version, state: 'live' } }));
    // The projected state of the old stream is not reused: every table starts empty.
    await db.query('DELETE FROM synchro.projections; DELETE FROM synchro.membership_edges; DELETE FROM synchro.scope_rows; DELETE FROM synchro.scope_effects');
    for (const t of registry.tables.values()) await db.query(`DELETE FROM synchro_projection.${pg.escapeIdentifier(t.name)}`);
    const at = parseLsn(record.consistentPoint as string);
    // The ordinary materialization path places the baseline, so versions, membership and scope rows follow its rules.
    await materializeTransaction(db, generation, { xid: 0, commitLsn: at, endLsn: at, messages: [], contentHash: Buffer.alloc(32) }, events, registry.tables);
    // A baseline reaches clients only through rebuild: no effect or transaction record of it stays behind.
    if (!fault('cap013-baseline-keeps-incremental-effects')) await db.query('DELETE FROM synchro.scope_effects WHERE stream_generation = $1', [generation]); // fault: server:cap013-baseline-keeps-incremental-effects
    await db.query('DELETE FROM synchro.wal_events WHERE stream_generation = $1', [generation]);
    await db.query('DELETE FROM synchro.wal_transactions WHERE stream_generation = $1', [generation]);
    // The worker goes on after the barrier: everything before it is in the baseline. Its start advances the slot there.
    await db.query(
      `UPDATE synchro.wal_progress SET stream_generation = $1, slot_name = $2, generation_start_lsn = $3, processed_end_lsn = $4,
         materialized_commit_lsn = NULL, materialized_end_lsn = NULL, acknowledged_end_lsn = $4`,
      [generation, fault('cap007-reset-keeps-old-slot') ? old : record.slot, record.consistentPoint, barrier], // fault: server:cap007-reset-keeps-old-slot
    );
    if (fault('cap003-empty-generation-as-transaction-end')) await db.query('UPDATE synchro.wal_progress SET materialized_commit_lsn = generation_start_lsn, materialized_end_lsn = generation_start_lsn'); // fault: server:cap003-empty-generation-as-transaction-end
    // Floors belong to the old lineage; the new one starts at generation_start.
    await db.query('UPDATE synchro.scope_state SET floor_commit_lsn = NULL, floor_event_ordinal = NULL, floor_effect_ordinal = NULL');
    await db.query("UPDATE synchro.wal_poison SET lifecycle = 'reset', resolved_at = clock_timestamp() WHERE lifecycle = 'active'");
    await bindCoverage(db, record, generation);
    await db.query("UPDATE synchro.stream_resets SET lifecycle = 'activated', activation_barrier = $3, target_generation = $2, last_refusal = NULL, finished_at = clock_timestamp() WHERE reset_id = $1", [
      record.resetId,
      generation,
      barrier,
    ]);
    await db.query('COMMIT');
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
  record.lifecycle = 'activated';
  // The old slot would otherwise hold WAL forever.
  if (old !== record.slot) await db.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1', [old]);
  return { resetId: record.resetId, streamGeneration: generation, slot: record.slot, consistentPoint: record.consistentPoint as string };
}

/** Marks a reset aborted and drops its candidate slot: nothing of it was activated. */
async function abortRecord(db: pg.ClientBase, record: ResetRecord): Promise<void> {
  await db.query("UPDATE synchro.stream_resets SET lifecycle = 'aborted', finished_at = clock_timestamp() WHERE reset_id = $1 AND lifecycle NOT IN ('activated', 'aborted')", [record.resetId]);
  await dropCandidateSlot(db, record.slot);
  record.lifecycle = 'aborted';
}


/**
 * Drives the operator's reset in one server: start or resume the reset in
 * flight and run it phase by phase, stopping once the phase `holdAt` is
 * durable (or running through activation without one).
 */
export class StreamResetOperator {
  private readonly session: CandidateSession;

  constructor(databaseUrl: string) {
    this.session = new CandidateSession(databaseUrl, OPERATOR_APPLICATION);
  }

  /** True while a reset is in flight (not activated, not aborted). */
  async inFlight(): Promise<boolean> {
    return (await inFlight(await this.session.connection())) !== undefined;
  }

  /**
   * Runs the reset in flight (or a new one when `start` and none is) up to
   * `holdAt`, or through activation. A reset whose snapshot is lost before it
   * was staged ends aborted. ActivationRefused leaves it in flight.
   */
  async drive(registry: Registry, options: { start: boolean; holdAt?: ResetPhase }): Promise<ResetProgress> {
    const db = await this.session.connection();
    let record = await inFlight(db);
    if (record === undefined) {
      if (!options.start) throw new StreamResetFailed('no stream reset is in flight');
      try {
        record = await prepare(this.session);
      } catch (e) {
        // Nothing was activated: the old stream stays as it was, and the candidate goes away.
        const half = await inFlight(db).catch(() => undefined);
        await this.session.closeReplication();
        if (half !== undefined) await abortRecord(db, half).catch(() => undefined);
        throw e;
      }
    }
    const held = (phase: ResetPhase) => options.holdAt === phase && record?.lifecycle === phase;
    if (held('preparing')) return this.progress(record);
    if (record.lifecycle === 'preparing') {
      try {
        await stageBaseline(this.session, record, registry);
      } catch (e) {
        // The snapshot is gone (its creating connection closed, or the operator session died): nothing can stage it.
        await this.session.closeReplication();
        await abortRecord(await this.session.connection(), record);
        return { ...this.progress(record), reason: `the exported snapshot could not be imported: ${(e as Error).message}` };
      }
    }
    if (held('baseline_staged')) return this.progress(record);
    // Entering catch-up; a reset already catching up goes to activation, which verifies the slot before reading it again.
    if (record.lifecycle === 'baseline_staged') await catchUp(this.session, record, registry);
    if (held('catching_up')) return this.progress(record);
    const result = await activate(this.session, record, registry);
    return { ...this.progress(record), result };
  }

  /** Aborts the reset in flight, if any. */
  async abort(): Promise<ResetProgress | undefined> {
    await this.session.closeReplication();
    const db = await this.session.connection();
    const record = await inFlight(db);
    if (record === undefined) return undefined;
    await abortRecord(db, record);
    return this.progress(record);
  }

  private progress(record: ResetRecord): ResetProgress {
    return { resetId: record.resetId, lifecycle: record.lifecycle, slot: record.slot };
  }

  async close(): Promise<void> {
    await this.session.close();
  }
}


/**
 * Ends every session of the operator's reset (its SQL session and the
 * replication connection that created the candidate slot), as a crashed
 * operator would leave it, and waits until they are gone. Returns how many
 * backends were terminated.
 */
export async function killOperatorSessions(db: pg.ClientBase): Promise<number> {
  return await terminateSessions(db, OPERATOR_APPLICATION);
}

/**
 * A reset the process died in while `preparing` lost its exported snapshot
 * with the process: it is discarded at the next worker start (marked aborted,
 * its candidate slot dropped). A staged or catching-up reset stays resumable.
 */
export async function discardInterruptedResets(db: pg.ClientBase): Promise<void> {
  const { rows } = await db.query<{ slot: string }>(
    "UPDATE synchro.stream_resets SET lifecycle = 'aborted', finished_at = clock_timestamp() WHERE lifecycle = 'preparing' RETURNING candidate_slot_name AS slot",
  );
  for (const r of rows) await dropCandidateSlot(db, r.slot);
}
