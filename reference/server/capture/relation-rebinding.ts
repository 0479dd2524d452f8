/**
 * What the capture worker does about a controlled rebinding (SYNC-CAP-009,
 * sql/079, decision 330). An operator renamed or moved a registered relation;
 * capture saw drift and stopped; then the operator bound the registration to
 * the relation as it now stands. The row events written between the drift
 * and the rebinding stand in the stream before its activation message, so
 * they are read under the old registration and name the relation
 * differently. They are covered, not lost: the rebinding re-baselined every
 * row of that object after its activation. Only events of the same object
 * (OID) and table, read under a generation older than a committed
 * rebinding's, are covered; anything else that differs is drift and
 * quarantines as before.
 *
 * The re-baseline places rows where no client saw them: every scope whose
 * contents it changes gets a new membership generation in the same
 * materialization, so its clients rebuild instead of reading a partial change
 * history.
 */
import type pg from 'pg';
import { fault } from '../core/faults.ts';
import type { TransactionRegistry } from './registry-generations.ts';
import { CaptureFailure, type RebindingCover, type RelationInfo, type RowEvent, rowEvents, type SourceTransaction, type TableLookup } from './transaction.ts';

/** Rebindings committed with a generation newer than `generation`. */
async function rebindingsAfter(db: pg.ClientBase, generation: number): Promise<RebindingCover & { size: number }> {
  const { rows } = await db.query<{ table_id: string; oid: number; g: string }>(
    'SELECT table_id, relation_oid::int8 AS oid, registry_generation::text AS g FROM synchro.relation_rebindings WHERE registry_generation > $1',
    [generation],
  );
  return {
    size: rows.length,
    covers: (tableId, relationOid, eventGeneration) => rows.some((r) => r.table_id === tableId && Number(r.oid) === relationOid && Number(r.g) > eventGeneration),
  };
}

/**
 * The transaction's row events. Rebindings are looked up only when an event
 * differs from its registration, so an ordinary transaction costs nothing more.
 */
export async function readRowEvents(db: pg.ClientBase, tx: SourceTransaction, relations: Map<number, RelationInfo>, registry: TransactionRegistry): Promise<RowEvent[]> {
  const lookup: TableLookup = registry.initial.lookup;
  try {
    return rowEvents(tx, lookup, relations, registry);
  } catch (e) {
    if (!(e instanceof CaptureFailure) || e.failureClass !== 'registered_relation_drift') throw e;
    const rebound = await rebindingsAfter(db, registry.initial.generation);
    if (rebound.size === 0) throw e;
    return rowEvents(tx, lookup, relations, registry, rebound);
  }
}

/**
 * Inside the materialization transaction of a transaction that activates a
 * rebinding: a new membership generation for every scope that gained or lost
 * a row of the rebound table in it.
 */
export async function forceRebuildOfRebaselinedScopes(db: pg.ClientBase, streamGeneration: string, commit: string, registry: TransactionRegistry): Promise<void> {
  if (registry.activated.length === 0 || fault('cap009-rebinding-keeps-scope-generations')) return; // fault: server:cap009-rebinding-keeps-scope-generations
  await db.query(
    `INSERT INTO synchro.scope_state (scope_id, membership_generation)
     SELECT DISTINCT e.scope_id, 2 FROM synchro.scope_effects e
       JOIN synchro.relation_rebindings b ON b.table_id = e.table_id AND b.registry_generation = ANY ($3::int8[])
      WHERE e.stream_generation = $1 AND e.commit_lsn = $2::pg_lsn
     ON CONFLICT (scope_id) DO UPDATE SET membership_generation = synchro.scope_state.membership_generation + 1`,
    [streamGeneration, commit, registry.activated],
  );
}
