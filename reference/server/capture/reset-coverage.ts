/**
 * Per-fence coverage of a stream reset (SYNC-CAP-013, SQL 081). Every accepted
 * fence up to the activation barrier reaches the new stream in exactly one
 * way, and the reset records which:
 *
 * - `reset_baseline`: the fence's transaction committed before the candidate
 *   slot's consistent point (so it is visible in the exported snapshot) but
 *   capture never materialized it, typically a push accepted behind a
 *   quarantine. Such fences exist only in the old slot's WAL that capture has
 *   not consumed; they are read from there (peeked, the old slot keeps them)
 *   when the baseline is staged. The staged row of a covered row takes its
 *   version from the last of its covered fences; the record is verified when
 *   the staged row holds a covered fence's version (or the snapshot has no
 *   such row at all).
 * - `materialized`: the fence's transaction came after the consistent point
 *   and catch-up applied it from the candidate slot's WAL.
 *
 * Activation refuses a reset whose coverage is incomplete or double, binds
 * every record to the new generation, and from then on the records are
 * immutable (a trigger of 081).
 *
 * Approximation (docs/decisions.md): the reference keeps no table of accepted
 * fences; an old slot that is lost, dropped or replaced takes its unconsumed
 * fences with it, and such a reset stages the snapshot's rows without coverage
 * records for them.
 */
import pg from 'pg';
import { fault } from '../core/faults.ts';
import { formatLsn, parseLsn } from '../core/lsn.ts';
import { type Fence, readFence } from './fence-correlation.ts';
import type { RegisteredTable } from './registered-table.ts';
import { groupTransactions, type RowEvent, type SourceTransaction } from './transaction.ts';
import { flushWal } from './wal-flush.ts';

const PUBLICATION = 'synchro_capture';

/** The part of the reset record coverage needs. */
export interface CoveredReset {
  resetId: string;
  slot: string;
  consistentPoint: string | null;
}

/** An accepted fence visible in the snapshot and not materialized by the old stream. */
export interface PendingFence {
  fence: Fence;
  xid: number;
  commitLsn: bigint;
}

/** The fences a decoded transaction carries; a message that is not a readable fence is left out (its row is still in the snapshot). */
function fencesOf(tx: SourceTransaction): Fence[] {
  const out: Fence[] = [];
  for (const m of tx.messages) {
    if (m.tag !== 'message' || !m.transactional || m.prefix !== 'synchro_fence') continue;
    try {
      out.push(readFence(m.content, null));
    } catch {
      // An unreadable fence is the quarantined transaction's own defect: it has no fence ID to cover.
    }
  }
  return out;
}

/**
 * The accepted fences that committed before the consistent point and that the
 * old stream never materialized, read from the old slot without consuming it.
 * Empty when the old slot is gone, invalidated or no longer a pgoutput slot of
 * this database (see the module's note).
 */
export async function pendingFencesInSnapshot(db: pg.ClientBase, consistentPoint: string): Promise<PendingFence[]> {
  const old = (await db.query<{ s: string; usable: boolean }>(
    `SELECT p.slot_name AS s, (r.slot_name IS NOT NULL AND r.plugin = 'pgoutput' AND r.database = current_database() AND r.wal_status IS DISTINCT FROM 'lost' AND r.invalidation_reason IS NULL AND NOT r.active) AS usable
       FROM synchro.wal_progress p LEFT JOIN pg_replication_slots r ON r.slot_name = p.slot_name`,
  )).rows[0];
  if (old === undefined || !old.usable) return [];
  // The fences of transactions visible in the snapshot: those that committed before the consistent point.
  // Decoding reads flushed WAL only, and commits need not flush at once: flush past the consistent point first.
  const flushed = await flushWal(db);
  const upTo = fault('cap013-baseline-coverage-past-snapshot') ? flushed : consistentPoint; // fault: server:cap013-baseline-coverage-past-snapshot
  const raw = (await db.query<{ data: Buffer }>(
    `SELECT data FROM pg_logical_slot_peek_binary_changes($1, $2::pg_lsn, NULL, 'proto_version', '1', 'publication_names', '${PUBLICATION}', 'messages', 'true')`,
    [old.s, upTo],
  )).rows.map((r) => r.data);
  const limit = parseLsn(upTo);
  const found: PendingFence[] = [];
  for (const tx of groupTransactions(raw)) {
    if (tx.commitLsn >= limit) continue;
    for (const fence of fencesOf(tx)) found.push({ fence, xid: tx.xid, commitLsn: tx.commitLsn });
  }
  if (found.length === 0) return found;
  // A transaction materialized but not yet acknowledged is still in the slot: its fences are covered already.
  const done = new Set(
    (await db.query<{ id: string }>('SELECT fence_id::text AS id FROM synchro.wal_events WHERE fence_id = ANY ($1::uuid[])', [found.map((p) => p.fence.fenceId)])).rows.map((r) => r.id),
  );
  if (fault('cap013-baseline-skips-pending-fences')) return []; // fault: server:cap013-baseline-skips-pending-fences
  return found.filter((p) => !done.has(p.fence.fenceId));
}

type StagedRow = { tableId: string; k: string; row: Record<string, unknown>; v: string; s: 'live' | 'deleted' };

/**
 * The snapshot's rows plus its deletion versions: an identity deleted in the
 * snapshot has no source row, but its deletion version stays staged (a
 * soft-deleted row is a source row already, with its deletion state). A live
 * version without a source row (a truncated row) stages nothing. Runs inside
 * the transaction that imported the snapshot.
 */
export async function withDeletionVersions(db: pg.ClientBase, tables: Map<string, RegisteredTable>, rows: StagedRow[]): Promise<StagedRow[]> {
  const out = [...rows];
  for (const t of [...tables.values()].sort((a, b) => (a.def.tableId < b.def.tableId ? -1 : 1))) {
    const source = `${pg.escapeIdentifier(t.schema)}.${pg.escapeIdentifier(t.name)}`;
    const states = fault('cap013-truncated-rows-staged-as-deleted') ? "('deleted', 'live')" : "('deleted')"; // fault: server:cap013-truncated-rows-staged-as-deleted
    const { rows: gone } = await db.query<{ k: string; v: string }>(
      `SELECT rv.pk_text AS k, rv.server_version AS v FROM synchro.row_versions rv
        WHERE rv.table_id = $1 AND rv.state IN ${states} AND NOT EXISTS (SELECT 1 FROM ${source} t WHERE to_jsonb(t) ->> $2 = rv.pk_text)
        ORDER BY rv.pk_text COLLATE "C"`,
      [t.def.tableId, t.def.pkColumn],
    );
    for (const g of gone) out.push({ tableId: t.def.tableId, k: g.k, row: {}, v: g.v, s: 'deleted' });
  }
  if (fault('cap013-deletion-versions-not-staged')) return out.filter((r) => r.s === 'live'); // fault: server:cap013-deletion-versions-not-staged
  return out;
}

const INSERT_COVERAGE = `INSERT INTO synchro.reset_fence_coverage (reset_id, fence_id, coverage, table_id, pk_text, server_version, row_state, dml_ordinal, registration_kind,
    source_xid, source_commit_lsn, candidate_slot_name, consistent_point, snapshot_boundary)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, r.candidate_slot_name, r.consistent_point, CASE WHEN $3 = 'reset_baseline' THEN r.snapshot_boundary END
    FROM synchro.stream_resets r WHERE r.reset_id = $1
  ON CONFLICT (reset_id, fence_id) DO NOTHING`;

/**
 * Writes the baseline coverage of the pending fences, gives each covered row
 * the version of its last covered fence, and marks verified the records whose
 * row now holds a covered fence's version or is not in the snapshot at all.
 * Runs in the commit that stages the baseline.
 */
export async function recordBaselineCoverage(db: pg.ClientBase, reset: CoveredReset, pending: PendingFence[]): Promise<void> {
  const lastOfRow = new Map<string, PendingFence>();
  for (const p of pending) {
    const f = p.fence;
    const key = `${f.tableId ?? f.relationId}\u0000${f.newKey ?? f.oldKey}`;
    await db.query(INSERT_COVERAGE, [reset.resetId, f.fenceId, 'reset_baseline', f.tableId ?? f.relationId, f.newKey ?? f.oldKey, f.version, f.state, f.ordinal, f.kind, p.xid, formatLsn(p.commitLsn)]);
    if (f.kind !== 'synced') continue;
    const seen = lastOfRow.get(key);
    const later = seen === undefined || p.commitLsn > seen.commitLsn || (p.commitLsn === seen.commitLsn && f.ordinal > seen.fence.ordinal);
    if (fault('cap013-baseline-version-from-first-covered-fence') ? seen === undefined : later) lastOfRow.set(key, p); // fault: server:cap013-baseline-version-from-first-covered-fence
  }
  // The final source-owned version of a row with a pending fence comes from its last covered fence.
  for (const p of lastOfRow.values()) {
    await db.query('UPDATE synchro.reset_staged_rows SET server_version = $4 WHERE reset_id = $1 AND table_id = $2 AND pk_text = $3', [
      reset.resetId,
      p.fence.tableId,
      p.fence.newKey ?? p.fence.oldKey,
      p.fence.version,
    ]);
  }
  await db.query(
    `UPDATE synchro.reset_fence_coverage c SET verified_at = clock_timestamp()
      WHERE c.reset_id = $1 AND c.coverage = 'reset_baseline' AND (
        c.registration_kind = 'capture_dependency'
        OR NOT EXISTS (SELECT 1 FROM synchro.reset_staged_rows s WHERE s.reset_id = c.reset_id AND s.table_id = c.table_id AND s.pk_text = c.pk_text)
        OR EXISTS (SELECT 1 FROM synchro.reset_staged_rows s JOIN synchro.reset_fence_coverage o ON o.reset_id = s.reset_id AND o.table_id = s.table_id AND o.pk_text = s.pk_text AND o.server_version = s.server_version
                    WHERE s.reset_id = c.reset_id AND s.table_id = c.table_id AND s.pk_text = c.pk_text AND o.coverage = 'reset_baseline'))`,
    [reset.resetId],
  );
}

/** Records the fences of one candidate-slot transaction that catch-up applied. Runs in that transaction's commit. */
export async function recordCatchUpCoverage(db: pg.ClientBase, reset: CoveredReset, tx: SourceTransaction, events: RowEvent[]): Promise<void> {
  for (const ev of events) {
    const f = ev.fence;
    if (f.fenceId === undefined || ev.tableId === null) continue;
    await db.query(INSERT_COVERAGE, [reset.resetId, f.fenceId, 'materialized', ev.tableId, ev.pkText, f.version, f.state, f.ordinal, f.kind, tx.xid, formatLsn(tx.commitLsn)]);
  }
}

/**
 * Why the reset's coverage does not allow activation at `barrier`, or
 * undefined when every recorded fence has exactly one verified coverage mode.
 * Runs inside the activation transaction.
 */
export async function coverageRefusal(db: pg.ClientBase, reset: CoveredReset, barrier: string): Promise<string | undefined> {
  const { rows } = await db.query<{ unverified: boolean; unseen: boolean; twice: boolean; late: boolean }>(
    `SELECT
       EXISTS (SELECT 1 FROM synchro.reset_fence_coverage WHERE reset_id = $1 AND coverage = 'reset_baseline' AND verified_at IS NULL) AS unverified,
       EXISTS (SELECT 1 FROM synchro.reset_fence_coverage WHERE reset_id = $1 AND coverage = 'reset_baseline' AND source_commit_lsn >= consistent_point) AS unseen,
       EXISTS (SELECT 1 FROM synchro.reset_fence_coverage c JOIN synchro.wal_events e ON e.fence_id = c.fence_id WHERE c.reset_id = $1) AS twice,
       EXISTS (SELECT 1 FROM synchro.reset_fence_coverage WHERE reset_id = $1 AND source_commit_lsn > $2::pg_lsn) AS late`,
    [reset.resetId, barrier],
  );
  const r = rows[0];
  if (r?.unverified) return 'a baseline-covered fence has no verified projected row and version';
  if (r?.unseen) return 'a fence committed after the snapshot has baseline coverage';
  if (r?.twice) return 'a covered fence was also materialized by the old stream';
  if (r?.late) return 'a covered fence lies past the activation barrier';
  return undefined;
}

/** Binds every coverage record of the reset to the generation it activates (in the activation commit). */
export async function bindCoverage(db: pg.ClientBase, reset: CoveredReset, generation: string): Promise<void> {
  await db.query('UPDATE synchro.reset_fence_coverage SET target_generation = $2 WHERE reset_id = $1', [reset.resetId, generation]);
}

