/**
 * What server inspection shows about capture: write fences and their
 * coverage, pull effects, membership edges, and the durable transaction and
 * event records an effect's position names. Read through the `inspect`
 * capability (the reference's synchro schema), never through the wire.
 */
import type { InspectControl, Row } from '../../../harness/adapters/server.ts';
import { tableNamed } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

export async function inspection(world: SyncWorld): Promise<InspectControl> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read capture state`);
  return server.inspect;
}

export async function inspectRows<R extends Row>(world: SyncWorld, sql: string, params: readonly unknown[] = []): Promise<R[]> {
  return (await inspection(world)).query<R>(sql, params);
}

/**
 * The logical table id of a table named in the scenario, from the manifests
 * the server published; in a scenario where no client connected, from the
 * registration server inspection shows for the relation of that name.
 */
export async function tableIdOf(world: SyncWorld, name: string): Promise<string> {
  if (world.replies.some((reply) => reply.endpoint === 'connect' && reply.status === 200)) return (await tableNamed(world, name)).table_id;
  const rows = await inspectRows<{ table_id: string }>(world, "SELECT table_id FROM synchro.relations WHERE active AND physical_schema = 'public' AND physical_relation = $1", [name]);
  if (rows.length !== 1) throw new Error(`server inspection shows ${rows.length} active registrations of relation public.${name}, not one`);
  return (rows[0] as { table_id: string }).table_id;
}

export interface FenceCoverage {
  tableId: string;
  pkText: string;
  serverVersion: string;
  /** `materialized` once the commit-ordered projection holds the fence's version, else `pending`. */
  coverage: 'materialized' | 'pending';
}

/** The write fences a push mutation left, each with its coverage. */
export async function fencesOfMutation(world: SyncWorld, mutationId: string): Promise<FenceCoverage[]> {
  const rows = await inspectRows<{ table_id: string; pk_text: string; server_version: string; materialized: boolean }>(
    world,
    `SELECT rv.table_id, rv.pk_text, rv.server_version,
            EXISTS (SELECT 1 FROM synchro.projections p
                     WHERE p.table_id = rv.table_id AND p.pk_text = rv.pk_text AND p.server_version = rv.server_version) AS materialized
       FROM synchro.row_versions rv WHERE rv.mutation_id = $1::uuid AND rv.state <> 'reserved' ORDER BY rv.table_id, rv.pk_text`,
    [mutationId],
  );
  return rows.map((r) => ({ tableId: r.table_id, pkText: r.pk_text, serverVersion: r.server_version, coverage: r.materialized ? 'materialized' : 'pending' }));
}

/** Pull effects stored for one row, in any scope and generation. */
export async function effectsOfRow(world: SyncWorld, tableId: string, pkText: string): Promise<Row[]> {
  return inspectRows(
    world,
    'SELECT scope_id, stream_generation, commit_lsn::text AS commit_lsn, event_ordinal, op FROM synchro.scope_effects WHERE table_id = $1 AND pk_text = $2 ORDER BY 1, 2, 3, 4',
    [tableId, pkText],
  );
}

export async function edgesOfRow(world: SyncWorld, tableId: string, pkText: string): Promise<string[]> {
  const rows = await inspectRows<{ scope_id: string }>(world, 'SELECT scope_id FROM synchro.membership_edges WHERE table_id = $1 AND pk_text = $2 ORDER BY 1', [tableId, pkText]);
  return rows.map((r) => r.scope_id);
}

/** How one pulled change traces back to the stream: its effect's position and the records that position names. */
export interface ChangeTrace {
  change: string;
  effect: { generation: string; commit: string; ordinal: number } | null;
  transactionRecord: boolean;
  /** The event record at the effect's position names the same row and version. */
  eventRecord: boolean;
}

export async function traceChange(world: SyncWorld, change: { scope: string; table: string; pkText: string; serverVersion: string; op: string }): Promise<ChangeTrace> {
  const label = `${change.op} ${change.table}/${change.pkText} in ${change.scope} at ${change.serverVersion}`;
  const [effect] = await inspectRows<{ g: string; c: string; o: string }>(
    world,
    `SELECT stream_generation AS g, commit_lsn::text AS c, event_ordinal::text AS o FROM synchro.scope_effects
      WHERE scope_id = $1 AND table_id = $2 AND pk_text = $3 AND server_version = $4 AND op = $5`,
    [change.scope, change.table, change.pkText, change.serverVersion, change.op],
  );
  if (effect === undefined) return { change: label, effect: null, transactionRecord: false, eventRecord: false };
  const [records] = await inspectRows<{ tx: boolean; ev: boolean }>(
    world,
    `SELECT EXISTS (SELECT 1 FROM synchro.wal_transactions t WHERE t.stream_generation = $1 AND t.commit_lsn = $2::pg_lsn AND $3::int8 < t.event_count) AS tx,
            EXISTS (SELECT 1 FROM synchro.wal_events e WHERE e.stream_generation = $1 AND e.commit_lsn = $2::pg_lsn AND e.event_ordinal = $3::int8
                      AND e.table_id = $4 AND e.pk_text = $5 AND e.server_version = $6) AS ev`,
    [effect.g, effect.c, effect.o, change.table, change.pkText, change.serverVersion],
  );
  return { change: label, effect: { generation: effect.g, commit: effect.c, ordinal: Number(effect.o) }, transactionRecord: records?.tx === true, eventRecord: records?.ev === true };
}
