/**
 * What the commit-ordered registry activation scenarios (SYNC-CAP-008) keep
 * and read: the registry changes they commit (each recorded under a label
 * beside the generation the Background records), the source transaction of
 * mixed steps, and the registry generation server inspection shows each row
 * event captured under (the reference's synchro.wal_events).
 */
import type { SourceSqlControl, SourceSqlSession } from '../../../harness/adapters/server.ts';
import { inspectRows } from '../capture/inspection.ts';
import { contractState, recorded } from '../scopes/function-contract.ts';
import type { SyncWorld } from '../world.ts';

interface ActivationState {
  /** Scope template of each membership rule a generation label introduced. */
  templates: Map<string, string>;
  /** The mixed transaction: its source xid and the steps that wrote a row, in order. */
  mixed?: { xid: string; rowSteps: number[] };
}

const states = new WeakMap<SyncWorld, ActivationState>();

export function activationState(world: SyncWorld): ActivationState {
  let state = states.get(world);
  if (!state) {
    state = { templates: new Map() };
    states.set(world, state);
  }
  return state;
}

export async function sourceSql(world: SyncWorld): Promise<SourceSqlControl> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source transactions`);
  return server.sourceSql;
}

export async function sourceSession(world: SyncWorld): Promise<SourceSqlSession> {
  const sql = await sourceSql(world);
  if (!sql.session) throw new Error('the sourceSql capability offers no session of its own to hold one source transaction');
  return sql.session();
}

/** Records a generation number under a scenario label, in the map the Background's label lives in. */
export function recordGeneration(world: SyncWorld, label: string, generation: string): void {
  const generations = contractState(world).generations;
  if (generations.has(label)) throw new Error(`a registry generation was already recorded as "${label}"`);
  generations.set(label, generation);
}

export function generationOf(world: SyncWorld, label: string): string {
  return recorded(contractState(world).generations, label, 'registry generation');
}

const quoted = (text: string) => `'${text.replace(/'/g, "''")}'`;

/**
 * A membership function placing each row of `table` in the scope its
 * template names, `{column}` read from the capture's projection of the row.
 */
export function membershipFunctionSql(table: string, key: string, template: string, name: string): string {
  const parts = template.split(/(\{[a-z_][a-z0-9_]*\})/).filter((part) => part !== '');
  const expression = parts.map((part) => (part.startsWith('{') ? `r.${part.slice(1, -1)}::text` : quoted(part))).join(' || ');
  return `CREATE FUNCTION ${name}(p_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT ${expression} FROM synchro_projection.${table} r WHERE r.${key} = p_key;
END;`;
}

/** A scope template filled from a row (`user:{owner_id}`). */
export function fillTemplate(template: string, row: Record<string, unknown>): string {
  return template.replace(/\{([a-z_][a-z0-9_]*)\}/g, (_, column: string) => {
    const value = row[column];
    if (value === undefined || value === null) throw new Error(`row has no value for "${column}" of scope template "${template}"`);
    return String(value);
  });
}

/** The registry generation the newest registry change visible to `session` opened. */
export async function newestGeneration(session: { query: SourceSqlSession['query'] }): Promise<string> {
  const [row] = await session.query<{ g: string | null }>('SELECT max(generation)::text AS g FROM synchro.registry_generations');
  if (!row?.g) throw new Error('server inspection shows no registry generation');
  return row.g;
}

/** The row events of the source transaction with `xid` and the generation each was captured under, in event order. */
export async function eventGenerations(world: SyncWorld, xid: string): Promise<Array<{ ordinal: number; generation: string | null }>> {
  const rows = await inspectRows<{ ordinal: string; generation: string | null }>(
    world,
    `SELECT e.event_ordinal::text AS ordinal, e.registry_generation::text AS generation
       FROM synchro.wal_transactions t JOIN synchro.wal_progress p ON p.stream_generation = t.stream_generation
       JOIN synchro.wal_events e ON e.stream_generation = t.stream_generation AND e.commit_lsn = t.commit_lsn
      WHERE t.source_xid = $1::int8 ORDER BY e.event_ordinal`,
    [xid],
  );
  return rows.map((row) => ({ ordinal: Number(row.ordinal), generation: row.generation }));
}

/** The update events of the transactions committed between two WAL positions, with their generation. */
export async function updateGenerationsBetween(world: SyncWorld, before: string, after: string): Promise<Array<string | null>> {
  const rows = await inspectRows<{ generation: string | null }>(
    world,
    `SELECT e.registry_generation::text AS generation FROM synchro.wal_events e JOIN synchro.wal_progress p ON p.stream_generation = e.stream_generation
      WHERE e.commit_lsn > $1::pg_lsn AND e.commit_lsn <= $2::pg_lsn AND e.operation = 'update' ORDER BY e.commit_lsn, e.event_ordinal`,
    [before, after],
  );
  return rows.map((row) => row.generation);
}
