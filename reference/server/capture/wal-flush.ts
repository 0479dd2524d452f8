/**
 * The WAL flush position past every commit before the call. Decoding reads
 * only flushed WAL, and with asynchronous commit a notified commit may not be
 * flushed yet: a non-transactional logical message with flush forces it. The
 * message is emitted in a materialized CTE, so the position read after it in
 * the same statement is one round trip.
 */
import type pg from 'pg';

/** Emits the flushing message as the CTE `m`; a statement reads the flush position from `m` to read it after. */
export const FLUSH_MESSAGE_CTE = "WITH m AS MATERIALIZED (SELECT pg_logical_emit_message(false, 'synchro_flush', '', true))";

export async function flushWal(db: pg.ClientBase): Promise<string> {
  return (await db.query<{ l: string }>(`${FLUSH_MESSAGE_CTE} SELECT pg_current_wal_flush_lsn()::text AS l FROM m`)).rows[0]?.l as string;
}
