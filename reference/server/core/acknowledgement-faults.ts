/**
 * Behaviour only the sensitivity run reaches (SYNC-PULL-007): a server that
 * records the positions a pull presents as soon as the request arrives, in a
 * transaction of their own, before it checks the rest of the request. A
 * request it then refuses has already moved the checkpoint. And a rebuild
 * that acknowledges more than it may.
 */
import type { ClientBase, Pool } from 'pg';
import { acknowledge } from './checkpoints.ts';
import { verifyToken } from './cursor-tokens.ts';
import { type Position, readPosition } from './position.ts';

export async function acknowledgeAhead(pool: Pool, userId: string, value: unknown): Promise<void> {
  const request = value as { client_id?: unknown; scopes?: Record<string, { cursor?: unknown }> };
  if (typeof request?.client_id !== 'string' || typeof request.scopes !== 'object' || request.scopes === null) return;
  const db = await pool.connect();
  try {
    const byGeneration = new Map<string, Map<string, Position>>();
    for (const [scope, entry] of Object.entries(request.scopes)) {
      const token = entry?.cursor;
      const payload = typeof token === 'string' ? await verifyToken(db, 'incremental_cursor', token) : undefined;
      const position = readPosition(payload?.position);
      if (payload === undefined || position === undefined || typeof payload.stream_generation !== 'string') continue;
      const positions = byGeneration.get(payload.stream_generation) ?? new Map<string, Position>();
      byGeneration.set(payload.stream_generation, positions.set(scope, position));
    }
    for (const [streamGeneration, positions] of byGeneration) await acknowledge(db, { userId, clientId: request.client_id, streamGeneration, positions });
  } finally {
    db.release();
  }
}

/** A rebuild that moves every scope of the client to its own boundary (SYNC-PULL-015), as if one scope's snapshot proved the others. */
export async function acknowledgeEveryScopeAt(db: ClientBase, userId: string, clientId: string, streamGeneration: string, boundary: Position): Promise<void> {
  const { rows } = await db.query<{ scope_id: string }>('SELECT scope_id FROM synchro.client_scopes WHERE user_id = $1 AND client_id = $2 AND assigned', [userId, clientId]);
  await acknowledge(db, { userId, clientId, streamGeneration, positions: new Map(rows.map((r) => [r.scope_id, boundary])) }, false);
}
