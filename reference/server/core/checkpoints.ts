/**
 * The per-client, per-scope checkpoint: the position a client proved it
 * holds by presenting a valid cursor in a successful pull. Compaction reads
 * it as the oldest position the client may still resume from, so it is
 * written only from presented cursors and only in the transaction that
 * answers the pull (a refused request rolls it back with everything else).
 */
import type { ClientBase } from 'pg';
import { named } from './named-statements.ts';
import { type Position, triple } from './position.ts';

export interface Acknowledgement {
  userId: string;
  clientId: string;
  streamGeneration: string;
  /** Scope -> the position of the cursor presented for it. */
  positions: ReadonlyMap<string, Position>;
}

/**
 * Records the presented positions. `forwardOnly` keeps the checkpoint where it
 * is when the presented position is older in the same stream generation (a
 * client may replay from an older cursor; that proves nothing new); it is
 * false only under a sensitivity fault.
 */
export async function acknowledge(db: ClientBase, ack: Acknowledgement, forwardOnly = true): Promise<void> {
  if (ack.positions.size === 0) return;
  const rows = [...ack.positions].map(([scope, position]) => {
    const [lsn, event, effect] = triple(position);
    return { scope_id: scope, commit_lsn: lsn, event_ordinal: event, effect_ordinal: effect };
  });
  const guard = forwardOnly
    ? `WHERE synchro.checkpoints.stream_generation <> excluded.stream_generation
          OR (synchro.checkpoints.commit_lsn, synchro.checkpoints.event_ordinal, synchro.checkpoints.effect_ordinal)
           < (excluded.commit_lsn, excluded.event_ordinal, excluded.effect_ordinal)`
    : '';
  await db.query(
    named(
      `INSERT INTO synchro.checkpoints (user_id, client_id, scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal)
       SELECT $1, $2, x.scope_id, $3, x.commit_lsn::pg_lsn, x.event_ordinal::int8, x.effect_ordinal
         FROM jsonb_to_recordset($4::jsonb) AS x(scope_id text, commit_lsn text, event_ordinal text, effect_ordinal int4)
       ON CONFLICT (user_id, client_id, scope_id) DO UPDATE SET
         stream_generation = excluded.stream_generation, commit_lsn = excluded.commit_lsn, event_ordinal = excluded.event_ordinal,
         effect_ordinal = excluded.effect_ordinal, acknowledged_at = now()
       ${guard}`,
      [ack.userId, ack.clientId, ack.streamGeneration, JSON.stringify(rows)],
    ),
  );
}

