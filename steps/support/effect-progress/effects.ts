/**
 * The pull effects server inspection holds for "that transaction": the
 * newest source transaction that wrote rows of a table (its xmin on the
 * source relation), located in the durable transaction records by its
 * source xid. Effects are read for one scope at and after that commit, so an
 * effect the server wrote at some other position shows up as one.
 */
import { inspectRows } from '../capture/inspection.ts';
import { lastSourceTransaction } from '../capture/replay-records.ts';
import { tableNamed } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

export interface InspectedEffect {
  generation: string;
  commit: string;
  event: number;
  effect: number;
  table: string;
  pk: string;
  op: string;
  serverVersion: string;
}

export interface TransactionEffects {
  scope: string;
  /** The commit position of the transaction's durable record. */
  commit: string;
  generation: string;
  effects: InspectedEffect[];
}

const remembered = new WeakMap<SyncWorld, TransactionEffects>();

/** Effects of `scope` at and after the commit of the newest transaction that wrote `table`, in stream order. */
export async function effectsOfLastTransaction(world: SyncWorld, table: string, scope: string): Promise<TransactionEffects> {
  const tx = await lastSourceTransaction(world, table);
  const records = await inspectRows<{ generation: string; commit: string }>(
    world,
    `SELECT t.stream_generation AS generation, t.commit_lsn::text AS commit FROM synchro.wal_transactions t
       JOIN synchro.wal_progress p USING (stream_generation) WHERE t.source_xid = $1::int8`,
    [tx.xid],
  );
  world.assert.equal(records.length, 1, `durable transaction records of source transaction ${tx.xid}: ${JSON.stringify(records)}`);
  const { generation, commit } = records[0] as { generation: string; commit: string };
  const effects = await effectsFrom(world, scope, generation, commit);
  const found = { scope, commit, generation, effects };
  remembered.set(world, found);
  return found;
}

export async function effectsFrom(world: SyncWorld, scope: string, generation: string, commit: string): Promise<InspectedEffect[]> {
  const rows = await inspectRows<{ generation: string; commit: string; event: string; effect: number; table_id: string; pk: string; op: string; version: string }>(
    world,
    `SELECT stream_generation AS generation, commit_lsn::text AS commit, event_ordinal::text AS event, effect_ordinal AS effect, table_id, pk_text AS pk, op, server_version AS version
       FROM synchro.scope_effects WHERE scope_id = $1 AND stream_generation = $2 AND commit_lsn >= $3::pg_lsn
      ORDER BY commit_lsn, event_ordinal, effect_ordinal`,
    [scope, generation, commit],
  );
  const out: InspectedEffect[] = [];
  for (const r of rows) {
    const table = (await tableNamed(world, r.table_id)).name;
    out.push({ generation: r.generation, commit: r.commit, event: Number(r.event), effect: r.effect, table, pk: r.pk, op: r.op, serverVersion: r.version });
  }
  return out;
}

export function rememberedEffects(world: SyncWorld): TransactionEffects {
  const found = remembered.get(world);
  if (found === undefined) throw new Error('server inspection has not shown the pull effects of a transaction earlier in this scenario');
  return found;
}

/** Every string value anywhere in a JSON value. */
export function stringsIn(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) stringsIn(item, out);
  else if (typeof value === 'object' && value !== null) for (const item of Object.values(value)) stringsIn(item, out);
  return out;
}
