/**
 * Capture-store faults, for certification only (`capture.store-fault`,
 * `capture.store-restore`; SYNC-PULL-004): an operator's damage to what the
 * capture worker stored for one effect, and its repair.
 *
 * - `projection_missing`: the effect's captured row is gone. The reference
 *   keeps an effect's projection in its own row (`scope_effects.row_wire`,
 *   which a CHECK keeps from being SQL NULL for an upsert), so the damage is a
 *   JSON null in its place; the digest guard of 027 drops the stored digest
 *   with it, as it does for any write that changes the row.
 * - `digest_overwritten`: the stored row digest is replaced by other bytes of
 *   the same length, the row and its digest tag left as they were.
 *
 * The effect damaged is the latest one of the row's key in the scope, in the
 * current stream generation. What it held is kept in this process until
 * `capture.store-restore` writes it back, exactly, and forgets it.
 */
import type { Pool, PoolClient } from 'pg';

export const STORE_FAULTS = ['projection_missing', 'digest_overwritten'] as const;
export type StoreFault = (typeof STORE_FAULTS)[number];

/** The effect a fault was injected into, and what it held before. */
interface SavedEffect {
  scope_id: string;
  stream_generation: string;
  commit_lsn: string;
  event_ordinal: string;
  effect_ordinal: number;
  row_text: string | null;
  row_digest: Buffer | null;
  digest_tag: string | null;
}

/** A fault that cannot be injected as asked (no such effect, nothing to damage). */
export class StoreFaultRefused extends Error {}

const saved = new WeakMap<Pool, SavedEffect[]>();

async function asOwner<T>(pool: Pool, work: (db: PoolClient) => Promise<T>): Promise<T> {
  const db = await pool.connect();
  try {
    await db.query('BEGIN; SET LOCAL ROLE synchro_owner');
    const out = await work(db);
    await db.query('COMMIT');
    return out;
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    db.release();
  }
}

const EFFECT_KEY = 'scope_id = $1 AND stream_generation = $2 AND commit_lsn = $3::pg_lsn AND event_ordinal = $4 AND effect_ordinal = $5';
const keyOf = (e: SavedEffect) => [e.scope_id, e.stream_generation, e.commit_lsn, e.event_ordinal, e.effect_ordinal];

/** Damages the latest captured effect of key `pk` of table `tableId` in `scope`; answers its position. */
export async function injectStoreFault(pool: Pool, request: { fault: StoreFault; tableId: string; scope: string; pk: string }): Promise<{ commit_lsn: string; event_ordinal: number; effect_ordinal: number }> {
  const effect = await asOwner(pool, async (db) => {
    const { rows } = await db.query<SavedEffect & { op: string }>(
      `SELECT scope_id, stream_generation, commit_lsn::text AS commit_lsn, event_ordinal::text AS event_ordinal, effect_ordinal, op, row_wire::text AS row_text, row_digest, digest_tag
         FROM synchro.scope_effects
        WHERE scope_id = $1 AND table_id = $2 AND pk_text = $3 AND stream_generation = (SELECT stream_generation FROM synchro.wal_progress)
        ORDER BY commit_lsn DESC, event_ordinal DESC, effect_ordinal DESC
        LIMIT 1 FOR UPDATE`,
      [request.scope, request.tableId, request.pk],
    );
    const found = rows[0];
    if (found === undefined) throw new StoreFaultRefused('no captured effect of that row in that scope');
    if (request.fault === 'projection_missing') {
      if (found.row_text === null || found.row_text === 'null') throw new StoreFaultRefused('the latest effect of that row carries no projection to delete');
      await db.query(`UPDATE synchro.scope_effects SET row_wire = 'null'::jsonb WHERE ${EFFECT_KEY}`, keyOf(found));
    } else {
      if (found.row_digest === null) throw new StoreFaultRefused('the latest effect of that row has no stored row digest to overwrite');
      // Other bytes of the same length: the digest of the digest.
      await db.query(`UPDATE synchro.scope_effects SET row_digest = sha256(row_digest) WHERE ${EFFECT_KEY}`, keyOf(found));
    }
    return found;
  });
  const list = saved.get(pool) ?? [];
  list.push(effect);
  saved.set(pool, list);
  return { commit_lsn: effect.commit_lsn, event_ordinal: Number(effect.event_ordinal), effect_ordinal: effect.effect_ordinal };
}

/** Writes back what every injected fault damaged, the latest first; answers how many effects were restored. */
export async function restoreStoreFaults(pool: Pool): Promise<number> {
  const list = saved.get(pool) ?? [];
  await asOwner(pool, async (db) => {
    for (const e of [...list].reverse()) {
      await db.query(`UPDATE synchro.scope_effects SET row_wire = $6::jsonb, row_digest = $7, digest_tag = $8 WHERE ${EFFECT_KEY}`, [...keyOf(e), e.row_text, e.row_digest, e.digest_tag]);
    }
  });
  saved.delete(pool);
  return list.length;
}
