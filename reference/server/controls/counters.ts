/**
 * A client-state control: reads, and optionally sets, the two counters the
 * server keeps per client (client_generation and scope_set_version). It lets a
 * scenario put a counter at the top of the portable integer range to see that
 * the next allocation fails instead of overflowing.
 */
import type { Pool } from 'pg';
import { invalidRequest, SyncError } from '../core/errors.ts';

export interface ClientCounters {
  client_generation: number;
  scope_set_version: number;
}

const MEMBERS = { client_generation: 1, scope_set_version: 0 } as const;

/** Validates `set` ({client_generation?, scope_set_version?}), applies it and returns the stored counters. */
export async function clientCounters(pool: Pool, userId: string, clientId: string, set: unknown): Promise<ClientCounters> {
  const changes: [string, number][] = [];
  if (set !== undefined) {
    if (typeof set !== 'object' || set === null || Array.isArray(set)) throw invalidRequest('set must be an object');
    for (const [name, value] of Object.entries(set)) {
      const low = MEMBERS[name as keyof typeof MEMBERS];
      if (low === undefined) throw invalidRequest(`set may hold only ${Object.keys(MEMBERS).join(' and ')}`);
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < low) throw invalidRequest(`${name} must be a safe integer of at least ${low}`);
      changes.push([name, value]);
    }
  }
  const assignments = changes.map(([name], k) => `${name} = $${k + 3}`);
  const sql =
    assignments.length === 0
      ? 'SELECT client_generation::text, scope_set_version::text FROM synchro.clients WHERE user_id = $1 AND client_id = $2'
      : `UPDATE synchro.clients SET ${assignments.join(', ')} WHERE user_id = $1 AND client_id = $2 RETURNING client_generation::text, scope_set_version::text`;
  const { rows } = await pool.query<{ client_generation: string; scope_set_version: string }>(sql, [userId, clientId, ...changes.map(([, v]) => v)]);
  const row = rows[0];
  if (row === undefined) throw new SyncError('invalid_request', 'the server has no record of that client', {}, 404);
  return { client_generation: Number(row.client_generation), scope_set_version: Number(row.scope_set_version) };
}
