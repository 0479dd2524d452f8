/**
 * Client expiry (004 sheet, "Explicit client generation and expiry"): a
 * client whose last cursor acknowledgement (or, before any, its creation) is
 * older than the stale-client interval is marked expired. Its next push, pull
 * or rebuild is `409 client_generation_expired`; its next connect renews the
 * generation. Ledgers are never touched: expiry is not retirement.
 *
 * The sweep and the operator's "expire this client" run the same statement;
 * the latter only moves the cutoff past any activity.
 */
import type { Pool } from 'pg';
import { fault } from '../core/faults.ts';

export interface ExpiredClient {
  user_id: string;
  client_id: string;
  client_generation: number;
}

async function markExpired(pool: Pool, cutoff: Date | 'infinity', only?: { userId: string; clientId: string }): Promise<ExpiredClient[]> {
  const db = await pool.connect();
  try {
    await db.query("BEGIN; SET LOCAL ROLE synchro_owner; SET LOCAL lock_timeout = '5s'");
    const params: unknown[] = [cutoff === 'infinity' ? 'infinity' : cutoff.toISOString()];
    let filter = '';
    if (only !== undefined) {
      params.push(only.userId, only.clientId);
      filter = ' AND user_id = $2 AND client_id = $3';
    }
    const { rows } = await db.query<{ user_id: string; client_id: string; client_generation: string }>(
      `UPDATE synchro.clients SET expired = true
        WHERE NOT expired AND coalesce(last_acknowledged_at, created_at) < $1::timestamptz${filter}
        RETURNING user_id, client_id, client_generation`,
      params,
    );
    if (fault('expiry-drops-ledger')) await db.query('WITH m AS (DELETE FROM synchro.push_mutations WHERE (user_id, client_id) IN (SELECT user_id, client_id FROM synchro.clients WHERE expired)) DELETE FROM synchro.push_batches WHERE (user_id, client_id) IN (SELECT user_id, client_id FROM synchro.clients WHERE expired)'); // fault: server:expiry-drops-ledger
    await db.query('COMMIT');
    return rows.map((r) => ({ user_id: r.user_id, client_id: r.client_id, client_generation: Number(r.client_generation) }));
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    db.release();
  }
}

/** Expires every client idle for longer than the interval at `now`. */
export function expireStaleClients(pool: Pool, now: Date, intervalMs: number): Promise<ExpiredClient[]> {
  return markExpired(pool, new Date(now.getTime() - intervalMs));
}

/** Expires one client whatever its age; `undefined` when the server has no record of it. */
export async function expireClient(pool: Pool, userId: string, clientId: string): Promise<{ client_generation: number } | undefined> {
  const [done] = await markExpired(pool, 'infinity', { userId, clientId });
  if (done !== undefined) return { client_generation: done.client_generation };
  // Already expired counts as done; an unknown client is reported.
  const { rows } = await pool.query<{ client_generation: string }>('SELECT client_generation FROM synchro.clients WHERE user_id = $1 AND client_id = $2', [userId, clientId]);
  const row = rows[0];
  return row === undefined ? undefined : { client_generation: Number(row.client_generation) };
}
