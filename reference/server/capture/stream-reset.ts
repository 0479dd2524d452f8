/**
 * Operator stream reset: the way out of a quarantine that no retry can clear
 * (a TRUNCATE, a transaction that will never decode), and of a lost slot.
 *
 * A new permanent candidate slot is created over the replication protocol
 * with an exported snapshot. Its consistent point and that snapshot describe
 * one boundary: every transaction committed before it is in the snapshot,
 * every later one is in the candidate slot. One transaction that imports the
 * snapshot then replaces the projected state with the source state under the
 * snapshot (rows, versions, membership, scope contents; no incremental
 * effect) and, in the same commit, activates a new stream generation whose
 * `generation_start` is the consistent point, on the candidate slot. Every
 * cursor and rebuild session binds the stream generation, so all of them go
 * stale and clients rebuild from the baseline; transactions after the
 * boundary reach them incrementally through the worker on the new slot.
 *
 * Approximations of this small reference (see docs/decisions.md): the
 * activation barrier is the consistent point itself (no catch-up phase before
 * activation), the reset runs inside the server process while its worker is
 * paused rather than as resumable operator SQL steps, and the old stream's
 * effects are dropped at activation instead of being retained for audit.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { StreamResetResult } from '../core/capture-control.ts';
import { fault } from '../core/faults.ts';
import { parseLsn } from '../core/lsn.ts';
import { materializeTransaction } from './materialize.ts';
import type { RegisteredTable } from './registered-table.ts';
import type { RowEvent } from './transaction.ts';

export class StreamResetFailed extends Error {}

/** The replication command's answer: the new slot and the snapshot that ends exactly at its consistent point. */
interface CandidateSlot {
  connection: pg.Client;
  consistentPoint: string;
  snapshotName: string;
}

async function createCandidateSlot(databaseUrl: string, slot: string): Promise<CandidateSlot> {
  // The exported snapshot lives only while this walsender session stays open and idle.
  const connection = new pg.Client({ connectionString: databaseUrl, replication: 'database', application_name: 'synchro-stream-reset' } as pg.ClientConfig);
  await connection.connect();
  connection.on('error', () => undefined);
  try {
    const { rows } = await connection.query<{ consistent_point: string; snapshot_name: string }>(`CREATE_REPLICATION_SLOT ${slot} LOGICAL pgoutput (SNAPSHOT 'export')`);
    const r = rows[0];
    if (r === undefined || typeof r.snapshot_name !== 'string') throw new StreamResetFailed('the candidate slot was created without an exported snapshot');
    return { connection, consistentPoint: r.consistent_point, snapshotName: r.snapshot_name };
  } catch (e) {
    await connection.end().catch(() => undefined);
    throw e;
  }
}

/** Every registered row as the snapshot sees it, with the version of its latest fence, as baseline events in a fixed order. */
async function snapshotRows(db: pg.ClientBase, tables: Map<string, RegisteredTable>): Promise<RowEvent[]> {
  const events: RowEvent[] = [];
  for (const t of [...tables.values()].sort((a, b) => (a.def.tableId < b.def.tableId ? -1 : 1))) {
    const source = `${pg.escapeIdentifier(t.schema)}.${pg.escapeIdentifier(t.name)}`;
    // Same join as the first-start baseline: a row enters with the version its latest fence gave it.
    const { rows } = await db.query<{ k: string; row: Record<string, unknown>; v: string; s: 'live' | 'deleted' }>(
      `SELECT to_jsonb(t) ->> $2 AS k, to_jsonb(t) AS row, rv.server_version AS v, rv.state AS s
         FROM ${source} t JOIN synchro.row_versions rv ON rv.table_id = $1 AND rv.pk_text = to_jsonb(t) ->> $2
        ORDER BY (to_jsonb(t) ->> $2) COLLATE "C"`,
      [t.def.tableId, t.def.pkColumn],
    );
    for (const r of rows) events.push({ ordinal: events.length, relationOid: null, tableId: t.def.tableId, op: 'baseline', pkText: r.k, image: r.row, fence: { version: r.v, state: r.s } });
  }
  return events;
}

/**
 * Runs one reset. The caller guarantees that its capture worker is paused
 * (it reads nothing from either slot meanwhile) and restarts it afterwards
 * from the durable progress, which then names the new slot on success and
 * the old one on failure.
 */
export async function resetStream(databaseUrl: string, tables: Map<string, RegisteredTable>): Promise<StreamResetResult> {
  const admin = new pg.Client({ connectionString: databaseUrl, application_name: 'synchro-stream-reset' });
  await admin.connect();
  const resetId = randomUUID();
  const slot = `synchro_reset_${resetId.replaceAll('-', '').slice(0, 24)}`;
  let candidate: CandidateSlot | undefined;
  try {
    const previous = (await admin.query<{ g: string; s: string }>('SELECT stream_generation AS g, slot_name AS s FROM synchro.wal_progress')).rows[0];
    if (previous === undefined) throw new StreamResetFailed('capture has never started, so there is no stream to reset');
    // Refused while another reset is in flight (unique index), before any slot exists.
    await admin.query("INSERT INTO synchro.stream_resets (reset_id, candidate_slot_name, previous_generation, lifecycle) VALUES ($1, $2, $3, 'preparing')", [resetId, slot, previous.g]);

    candidate = await createCandidateSlot(databaseUrl, slot);
    const generation = randomUUID();
    const db = new pg.Client({ connectionString: databaseUrl, application_name: 'synchro-stream-reset' });
    await db.connect();
    try {
      await db.query("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'iso_8601'; SET extra_float_digits = 3");
      await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await db.query(`SET TRANSACTION SNAPSHOT '${candidate.snapshotName}'`);
      await db.query("UPDATE synchro.stream_resets SET lifecycle = 'baseline_staged', exported_snapshot_name = $2, consistent_point = $3 WHERE reset_id = $1", [
        resetId,
        candidate.snapshotName,
        candidate.consistentPoint,
      ]);
      const events = await snapshotRows(db, tables);
      // The projected state of the old stream is not reused: every table starts empty.
      await db.query('DELETE FROM synchro.projections; DELETE FROM synchro.membership_edges; DELETE FROM synchro.scope_rows; DELETE FROM synchro.scope_effects');
      for (const t of tables.values()) await db.query(`DELETE FROM synchro_projection.${pg.escapeIdentifier(t.name)}`);
      const at = parseLsn(candidate.consistentPoint);
      // The ordinary materialization path places the baseline, so versions, membership and scope rows follow its rules.
      await materializeTransaction(db, generation, { xid: 0, commitLsn: at, endLsn: at, messages: [], contentHash: Buffer.alloc(32) }, events, tables);
      // A baseline reaches clients only through rebuild: no effect or transaction record of it stays behind.
      await db.query('DELETE FROM synchro.scope_effects WHERE stream_generation = $1', [generation]);
      await db.query('DELETE FROM synchro.wal_events WHERE stream_generation = $1', [generation]);
      await db.query('DELETE FROM synchro.wal_transactions WHERE stream_generation = $1', [generation]);
      await db.query(
        `UPDATE synchro.wal_progress SET stream_generation = $1, slot_name = $2, generation_start_lsn = $3, processed_end_lsn = $3,
           materialized_commit_lsn = NULL, materialized_end_lsn = NULL, acknowledged_end_lsn = $3`,
        [generation, slot, candidate.consistentPoint],
      );
      if (fault('cap003-empty-generation-as-transaction-end')) await db.query('UPDATE synchro.wal_progress SET materialized_commit_lsn = generation_start_lsn, materialized_end_lsn = generation_start_lsn'); // fault: server:cap003-empty-generation-as-transaction-end
      // Floors belong to the old lineage; the new one starts at generation_start.
      await db.query('UPDATE synchro.scope_state SET floor_commit_lsn = NULL, floor_event_ordinal = NULL, floor_effect_ordinal = NULL');
      await db.query("UPDATE synchro.wal_poison SET lifecycle = 'reset', resolved_at = clock_timestamp() WHERE lifecycle = 'active'");
      await db.query("UPDATE synchro.stream_resets SET lifecycle = 'activated', activation_barrier = consistent_point, target_generation = $2, finished_at = clock_timestamp() WHERE reset_id = $1", [
        resetId,
        generation,
      ]);
      await db.query('COMMIT');
    } catch (e) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      await db.end();
    }
    await candidate.connection.end().catch(() => undefined);
    candidate = undefined;
    // The old slot would otherwise hold WAL forever.
    await admin.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1', [previous.s]);
    return { resetId, streamGeneration: generation, slot, consistentPoint: (await admin.query<{ l: string }>('SELECT generation_start_lsn::text AS l FROM synchro.wal_progress')).rows[0]?.l as string };
  } catch (e) {
    // Nothing was activated: the old stream stays as it was, and the candidate goes away.
    await candidate?.connection.end().catch(() => undefined);
    await admin.query("UPDATE synchro.stream_resets SET lifecycle = 'aborted', finished_at = clock_timestamp() WHERE reset_id = $1 AND lifecycle <> 'activated'", [resetId]).catch(() => undefined);
    await admin.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1', [slot]).catch(() => undefined);
    throw e;
  } finally {
    await admin.end();
  }
}

/**
 * A reset the process died in never activated (activation is one commit), so
 * it is discarded at the next worker start: marked aborted, its candidate slot
 * dropped. A later reset starts over with a new candidate.
 */
export async function discardInterruptedResets(db: pg.ClientBase): Promise<void> {
  const { rows } = await db.query<{ slot: string }>(
    "UPDATE synchro.stream_resets SET lifecycle = 'aborted', finished_at = clock_timestamp() WHERE lifecycle IN ('preparing', 'baseline_staged') RETURNING candidate_slot_name AS slot",
  );
  for (const r of rows) await db.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active', [r.slot]);
}
