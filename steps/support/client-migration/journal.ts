/**
 * The client under test around a local schema migration: what the harness
 * recorded before it (queued intent, local-only rows, the source manifest),
 * the proxy switch that refuses every request of a restarted client, restarts
 * that leave recovery to an explicit call, and the adapter's view of the
 * migration journal and of the physical columns of a synced table.
 */
import { ClientRpcError } from '../../../harness/adapters/client-process.ts';
import type { SchemaManifest } from '../../../harness/wire/generated.ts';
import { queueState } from '../mutations/state.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { ProcessClient, ScenarioClient, SyncWorld } from '../world.ts';

export interface SchemaRef {
  version: number;
  hash: string;
}

export interface Journal {
  sourceSchema: { version: unknown; hash: unknown } | null;
  targetSchema: { version: unknown; hash: unknown } | null;
  targetManifest: unknown;
  action: unknown;
  affectedScopes: unknown;
  planFormat: unknown;
  plan: unknown;
  planHash: unknown;
  phase: unknown;
  phaseHistory: { phase: string; atMs: number }[];
}

export interface Migration {
  activeSchema: SchemaRef | null;
  journal: Journal | null;
}

/** What a client held before its migration, compared after recovery. */
export interface Kept {
  mutations: unknown[];
  localRows: unknown[];
}

interface State {
  kept: Map<string, Kept>;
  localTable: Map<string, string>;
  /** The manifest the server served when the client's state was recorded: the migration's source. */
  source: Map<string, SchemaManifest>;
  /** Clients whose requests the proxy refuses while set; the rule stays installed, the switch turns it off. */
  refusing: Set<string>;
  refusalInstalled: Set<string>;
  restartMark: Map<string, number>;
  forwardMark: Map<string, number>;
  columnsBeforeRestart: Map<string, string[]>;
  /** A second client opened on a copy of another's database, by name. */
  copies: Map<string, ScenarioClient>;
  plans: Map<string, { plan: unknown; planHash: unknown }>;
}

const states = new WeakMap<SyncWorld, State>();

export function migrationState(world: SyncWorld): State {
  let state = states.get(world);
  if (state === undefined) {
    state = {
      kept: new Map(),
      localTable: new Map(),
      source: new Map(),
      refusing: new Set(),
      refusalInstalled: new Set(),
      restartMark: new Map(),
      forwardMark: new Map(),
      columnsBeforeRestart: new Map(),
      copies: new Map(),
      plans: new Map(),
    };
    states.set(world, state);
  }
  return state;
}

/** The client's queued mutations and the rows of its local-only table, as it reports them now. */
export async function keptNow(world: SyncWorld, name: string): Promise<Kept> {
  const client = await world.process(name);
  const table = migrationState(world).localTable.get(name);
  if (table === undefined) throw new Error(`client "${name}" was given no local-only table in this scenario`);
  const { mutations } = await client.call<{ mutations: unknown[] }>('inspectMutations');
  const { rows } = await client.call<{ rows: unknown[] }>('query', { sql: `SELECT * FROM "${table}" ORDER BY 1` });
  return { mutations, localRows: rows };
}

export function recordedKept(world: SyncWorld, name: string, label: string): Kept {
  const kept = migrationState(world).kept.get(`${name}\u0000${label}`);
  if (kept === undefined) throw new Error(`the harness recorded nothing of client "${name}" as "${label}"`);
  return kept;
}

export function sourceManifest(world: SyncWorld, name: string): SchemaManifest {
  const manifest = migrationState(world).source.get(name);
  if (manifest === undefined) throw new Error(`the harness recorded no source manifest for client "${name}"`);
  return manifest;
}

/** Column names of a manifest's table, lower-cased and sorted. */
export function manifestColumns(manifest: SchemaManifest, table: string): string[] {
  const found = manifest.tables.find((t) => t.name.toLowerCase() === table.toLowerCase());
  if (found === undefined) throw new Error(`manifest ${manifest.schema_version} has no table "${table}"`);
  return found.fields.map((f) => f.name.toLowerCase()).sort();
}

/** Column names of a table as the client's SQLite file has it, read through application SQL. */
export async function physicalColumns(call: ProcessClient['call'], table: string): Promise<string[]> {
  const { rows } = await call<{ rows: { name: string }[] }>('query', { sql: 'SELECT name FROM pragma_table_info(?)', params: [table] });
  return rows.map((r) => r.name.toLowerCase()).sort();
}

/** An optional adapter control (recover, inspectMigration, tamperMigration) the client adapter does not offer. */
export class MissingControl extends Error {}

/** Calls an optional control; an adapter answering "method not found" makes the scenario undetermined. */
export async function optionalControl<T>(call: ProcessClient['call'], method: 'recover' | 'inspectMigration' | 'tamperMigration', params: Record<string, unknown> = {}): Promise<T> {
  try {
    return await call<T>(method, params);
  } catch (error) {
    if (error instanceof ClientRpcError && error.code === -32601) throw new MissingControl(`the client adapter offers no ${method} control`);
    throw error;
  }
}

/** Runs a step body; a missing optional control ends it undetermined, with the control named. */
export async function orUndetermined(world: SyncWorld, body: () => Promise<unknown>): Promise<'skipped' | undefined> {
  try {
    const result = await body();
    return result === 'skipped' ? 'skipped' : undefined;
  } catch (error) {
    if (error instanceof MissingControl) return undeterminedWithout(world, error.message);
    throw error;
  }
}

export async function migrationOf(call: ProcessClient['call']): Promise<Migration> {
  return await optionalControl<Migration>(call, 'inspectMigration');
}

/** Installs (once) the proxy rule that answers 503 to every request of the client while it is switched on, and switches it on. */
export async function refuseRequestsOf(world: SyncWorld, name: string, clientId: string): Promise<void> {
  const state = migrationState(world);
  state.refusing.add(name);
  if (state.refusalInstalled.has(name)) return;
  state.refusalInstalled.add(name);
  const proxy = await world.proxy();
  proxy.inject({
    times: Number.POSITIVE_INFINITY,
    when: (request) => state.refusing.has(name) && (request as { client_id?: unknown } | undefined)?.client_id === clientId,
    fault: { kind: 'status', status: 503, retryAfter: '60' },
  });
}

/**
 * Kills the process if it still runs (an armed crash point must have ended
 * it already) and starts it again on the same data directory, opened with
 * recovery deferred so the harness can look before the client acts.
 */
export async function restartDeferred(world: SyncWorld, client: ScenarioClient, userId: string, extra: Record<string, unknown> = {}): Promise<void> {
  const armed = queueState(world).crashArmed;
  if (armed.has(client.name)) {
    if (client.process.alive) throw new Error(`client "${client.name}" never reached the armed crash point "${armed.get(client.name)}": its process is still running`);
    armed.delete(client.name);
  }
  await client.process.kill();
  client.process.start();
  await client.process.call('open', { ...(await world.openParams(client, userId)), ...extra, deferRecovery: true });
}
