/**
 * What the capture worker reads before each peek, in one round trip: the
 * active quarantine (if any), whether the acknowledgement boundary was
 * cleared, the schema hash row digests are stored under, the decode row
 * limit, how much WAL the next peek has to decode from the slot's restart
 * point, and the WAL flush position the first peek reads up to (after a
 * message that forces the flush: see wal-flush.ts). Every round trip
 * of a poll is latency between a commit and its pull visibility, so the reads
 * that used to be six statements are one.
 */
import type pg from 'pg';
import { named } from '../core/named-statements.ts';
import { FLUSH_MESSAGE_CTE } from './wal-flush.ts';

export interface PollStart {
  poison: { id: string; retry: boolean; commitLsn: string } | undefined;
  /** The acknowledgement boundary was cleared (readiness reports it; only an operator puts it back). */
  ackCleared: boolean;
  /** The newest published manifest's schema hash (what digestSchemaHash in materialize.ts reads). */
  digestHash: string | null;
  /** synchro.capture_limits.decode_row_limit, or undefined when the limits row is missing. */
  rowLimit: number | undefined;
  /** Bytes of WAL from the slot's restart point to the current insert position (0 when unknown). */
  decodeWindow: number;
  /** The WAL flushed so far, read after forcing a flush of everything written before this read. */
  flush: string;
}

export async function readPollStart(db: pg.ClientBase, slot: string): Promise<PollStart> {
  const { rows } = await db.query<{ poison_id: string | null; retry: boolean | null; poison_lsn: string | null; ack_cleared: boolean; h: string | null; n: number | null; window: string | null; flush: string }>(
    named(
      // The flush position is read in a scalar subquery over the materialized message, so after it is emitted.
      `${FLUSH_MESSAGE_CTE}
       SELECT (SELECT pg_current_wal_flush_lsn()::text FROM m) AS flush,
              q.id::text AS poison_id, q.retry_requested_at IS NOT NULL AS retry, q.commit_lsn::text AS poison_lsn,
              EXISTS (SELECT 1 FROM synchro.wal_progress WHERE acknowledged_end_lsn IS NULL) AS ack_cleared,
              (SELECT schema_hash FROM synchro.manifests ORDER BY schema_version DESC LIMIT 1) AS h,
              (SELECT decode_row_limit FROM synchro.capture_limits) AS n,
              (SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), restart_lsn)::text FROM pg_replication_slots WHERE slot_name = $1) AS window
         FROM (SELECT 1) one LEFT JOIN (SELECT * FROM synchro.wal_poison WHERE lifecycle = 'active' LIMIT 1) q ON true`,
      [slot],
    ),
  );
  const r = rows[0];
  if (r === undefined) throw new Error('the poll-start read returned no row');
  return {
    poison: r.poison_id === null ? undefined : { id: r.poison_id, retry: r.retry === true, commitLsn: r.poison_lsn as string },
    ackCleared: r.ack_cleared,
    digestHash: r.h,
    rowLimit: r.n ?? undefined,
    decodeWindow: r.window === null ? 0 : Number(r.window),
    flush: r.flush,
  };
}
