/**
 * The snapshot a pull or rebuild reads: one repeatable-read transaction under
 * a per-client lock, whose first read is the materialization progress row
 * (boundary B and stream generation). Everything read after it is the
 * captured state through B. Connect reads the boundary the same way when it
 * carries cursors over to a new schema.
 */
import type { Pool, PoolClient } from 'pg';
import { temporarilyUnavailable } from './errors.ts';
import { fault } from './faults.ts';
import { parseLsn } from './lsn.ts';
import { named } from './named-statements.ts';
import { boundaryOf, type Position } from './position.ts';

/** Boundary and lineage of the materialized state; the first read of the snapshot. */
export async function readBoundary(db: PoolClient): Promise<{ boundary: Position; streamGeneration: string }> {
  const { rows } = await db.query<{ stream_generation: string; m: string | null }>(named('SELECT stream_generation, materialized_commit_lsn::text AS m FROM synchro.wal_progress'));
  const p = rows[0];
  if (p === undefined) throw temporarilyUnavailable('capture has not started');
  if (fault('cap003-boundary-at-processed-wal-end')) return { boundary: { kind: 'transaction_end', lsn: parseLsn((await db.query<{ e: string }>('SELECT processed_end_lsn::text AS e FROM synchro.wal_progress')).rows[0]?.e as string) }, streamGeneration: p.stream_generation }; // fault: server:cap003-boundary-at-processed-wal-end
  return { boundary: boundaryOf(p.m), streamGeneration: p.stream_generation };
}

/** Reads remembered for the life of one snapshot, per connection (snapshotRead). */
const snapshots = new WeakMap<object, Map<string, unknown>>();

/**
 * A read that gives the same answer for the whole snapshot (repeatable read,
 * and nothing in the snapshot's own transaction writes what it reads) is done
 * once per snapshot; outside a snapshot it is done every time. An undefined
 * answer is not remembered, since the caller may then write what it looks for.
 */
export async function snapshotRead<T>(db: object, key: string, read: () => Promise<T | undefined>): Promise<T | undefined> {
  const memo = snapshots.get(db);
  if (memo === undefined) return await read();
  if (memo.has(key)) return memo.get(key) as T;
  const value = await read();
  if (value !== undefined) memo.set(key, value);
  return value;
}

/** Ends a snapshot's transaction: a plain COMMIT, unless the caller ends it through its entry point (entry-points.ts). */
async function commitPlain<T, R>(db: PoolClient, out: T): Promise<R> {
  await db.query('COMMIT');
  return out as unknown as R;
}

/**
 * Runs `fn` in a repeatable-read transaction under a per-client session lock
 * taken before the snapshot, then `commit` ends the transaction with fn's
 * result and gives the answer.
 */
export async function withClientSnapshot<T, R = T>(pool: Pool, lockKey: string, fn: (db: PoolClient) => Promise<T>, commit: (db: PoolClient, out: T) => Promise<R> = commitPlain): Promise<R> {
  const db = await pool.connect();
  try {
    await db.query(named('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lockKey]));
    try {
      await db.query("BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL ROLE synchro_owner; SET LOCAL lock_timeout = '5s'");
      snapshots.set(db, new Map());
      return await commit(db, await fn(db));
    } catch (e) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      snapshots.delete(db);
      await db.query(named('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockKey])).catch(() => undefined);
    }
  } finally {
    db.release();
  }
}
