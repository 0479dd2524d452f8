/**
 * What server inspection holds for one source transaction of a harness
 * table, for the replay checks of SYNC-CAP-004. "That transaction" is the
 * last one that wrote rows of the table: the rows whose xmin is the newest
 * on the source table (the harness's own relation), and, once
 * materialized, the transaction record whose source_xid is that xmin.
 */
import type { SyncWorld } from '../world.ts';
import { inspectRows, tableIdOf } from './inspection.ts';

export interface SourceTransactionRows {
  xid: string;
  tableId: string;
  keys: string[];
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The rows of `table` written by its newest source transaction. */
export async function lastSourceTransaction(world: SyncWorld, table: string): Promise<SourceTransactionRows> {
  const key = ident(world.model.keyColumn(table).name);
  const rows = await inspectRows<{ xid: string; keys: string[] }>(
    world,
    `WITH written AS (SELECT xmin::text::int8 AS xid, ${key}::text AS k FROM public.${ident(table)})
     SELECT xid::text AS xid, array_agg(k ORDER BY k) AS keys FROM written WHERE xid = (SELECT max(xid) FROM written) GROUP BY xid`,
  );
  const last = rows[0];
  if (last === undefined) throw new Error(`no source transaction has written rows of table "${table}"`);
  return { xid: last.xid, tableId: await tableIdOf(world, table), keys: last.keys };
}

export interface TransactionFootprint {
  /** Transaction records with this source xid: generation and commit position. */
  transactions: Array<{ generation: string; commit: string; end: string }>;
  /** Event identities (generation, commit, ordinal) of those records. */
  events: string[];
  /** Event records naming one of the rows. */
  rowEvents: number;
  /** Projection records (the materialized row versions) of the rows. */
  projections: Array<{ key: string; version: string }>;
  edges: Array<{ key: string; scope: string }>;
  /** Pull effects of the rows, each as scope|generation|commit|event|effect ordinal. */
  effects: string[];
  fences: Array<{ key: string; version: string }>;
}

export async function footprint(world: SyncWorld, tx: SourceTransactionRows): Promise<TransactionFootprint> {
  const transactions = await inspectRows<{ generation: string; commit: string; end: string }>(
    world,
    'SELECT stream_generation AS generation, commit_lsn::text AS commit, end_lsn::text AS "end" FROM synchro.wal_transactions WHERE source_xid = $1::int8 ORDER BY commit_lsn',
    [tx.xid],
  );
  const events = await inspectRows<{ id: string }>(
    world,
    `SELECT e.stream_generation || '|' || e.commit_lsn::text || '|' || e.event_ordinal AS id
       FROM synchro.wal_events e JOIN synchro.wal_transactions t USING (stream_generation, commit_lsn)
      WHERE t.source_xid = $1::int8 ORDER BY e.commit_lsn, e.event_ordinal`,
    [tx.xid],
  );
  const byRow = [tx.tableId, tx.keys] as const;
  const [rowEvents] = await inspectRows<{ n: string }>(world, 'SELECT count(*)::text AS n FROM synchro.wal_events WHERE table_id = $1 AND pk_text = ANY ($2::text[])', [...byRow]);
  const projections = await inspectRows<{ key: string; version: string }>(
    world,
    'SELECT pk_text AS key, server_version AS version FROM synchro.projections WHERE table_id = $1 AND pk_text = ANY ($2::text[]) ORDER BY 1',
    [...byRow],
  );
  const edges = await inspectRows<{ key: string; scope: string }>(
    world,
    'SELECT pk_text AS key, scope_id AS scope FROM synchro.membership_edges WHERE table_id = $1 AND pk_text = ANY ($2::text[]) ORDER BY 1, 2',
    [...byRow],
  );
  const effects = await inspectRows<{ id: string }>(
    world,
    `SELECT scope_id || '|' || stream_generation || '|' || commit_lsn::text || '|' || event_ordinal || '|' || effect_ordinal AS id
       FROM synchro.scope_effects WHERE table_id = $1 AND pk_text = ANY ($2::text[]) ORDER BY 1`,
    [...byRow],
  );
  const fences = await inspectRows<{ key: string; version: string }>(
    world,
    "SELECT pk_text AS key, server_version AS version FROM synchro.row_versions WHERE table_id = $1 AND pk_text = ANY ($2::text[]) AND state <> 'reserved' ORDER BY 1",
    [...byRow],
  );
  return {
    transactions,
    events: events.map((e) => e.id),
    rowEvents: Number(rowEvents?.n ?? 0),
    projections,
    edges,
    effects: effects.map((e) => e.id),
    fences,
  };
}

/** What a step recorded about a transaction before a kill, compared after the restart. */
export interface ReplayRecord {
  tx: SourceTransactionRows;
  before: TransactionFootprint;
}

const records = new WeakMap<SyncWorld, ReplayRecord>();

export function remember(world: SyncWorld, record: ReplayRecord): void {
  records.set(world, record);
}

export function remembered(world: SyncWorld): ReplayRecord {
  const record = records.get(world);
  if (record === undefined) throw new Error('nothing was recorded about a transaction earlier in this scenario');
  return record;
}
