/**
 * Behaviour only the sensitivity run reaches (SYNC-PULL-003): a capture
 * worker that takes the effect ordinal for part of the WAL replay identity.
 * Replaying a transaction whose materialization is already durable, it does
 * not recognise the effects it derives again as the ones it stored, and
 * appends them after them at new ordinals, so a client is sent them twice.
 * And (SYNC-CAP-004) one that does the same with the transaction's event
 * records: the replay writes each row transition again under a new event
 * ordinal, so one transition carries two event identities.
 */
import type { ClientBase } from 'pg';
import { supersede } from './effects.ts';

export async function appendReplayedEffects(db: ClientBase, generation: string, commit: string): Promise<void> {
  const { rows } = await db.query<{ scope_id: string; table_id: string; pk_bytes: Buffer }>(
    'SELECT DISTINCT scope_id, table_id, pk_bytes FROM synchro.scope_effects WHERE stream_generation = $1 AND commit_lsn = $2::pg_lsn',
    [generation, commit],
  );
  await supersede(db, generation, rows.map((r) => ({ scope_id: r.scope_id, table_id: r.table_id, pk_bytes: r.pk_bytes.toString('hex') })));
  await db.query(
    `INSERT INTO synchro.scope_effects (scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal, table_id, pk_text, pk_bytes, op_rank, op, server_version, row_wire, row_digest, digest_tag)
     SELECT e.scope_id, e.stream_generation, e.commit_lsn, e.event_ordinal,
            e.effect_ordinal + 1 + (SELECT max(m.effect_ordinal) FROM synchro.scope_effects m
                                     WHERE m.scope_id = e.scope_id AND m.stream_generation = e.stream_generation AND m.commit_lsn = e.commit_lsn AND m.event_ordinal = e.event_ordinal),
            e.table_id, e.pk_text, e.pk_bytes, e.op_rank, e.op, e.server_version, e.row_wire, e.row_digest, e.digest_tag
       FROM synchro.scope_effects e WHERE e.stream_generation = $1 AND e.commit_lsn = $2::pg_lsn`,
    [generation, commit],
  );
}

export async function appendReplayedEvents(db: ClientBase, generation: string, commit: string): Promise<void> {
  await db.query(
    `INSERT INTO synchro.wal_events (stream_generation, commit_lsn, event_ordinal, table_id, pk_text, operation, server_version)
     SELECT e.stream_generation, e.commit_lsn, e.event_ordinal + (SELECT count(*) FROM synchro.wal_events c WHERE c.stream_generation = $1 AND c.commit_lsn = $2::pg_lsn),
            e.table_id, e.pk_text, e.operation, e.server_version
       FROM synchro.wal_events e WHERE e.stream_generation = $1 AND e.commit_lsn = $2::pg_lsn`,
    [generation, commit],
  );
}
