/**
 * The client under test's side of push outcomes: which mutations a local
 * statement captured ("that mutation"), the outcome the proxy delivered for
 * one of them ("that outcome"), the row versions the client stores and its
 * local rows compared with a server row.
 */
import { exchangesOf, deliveredOf, bodyOf } from '../exchanges.ts';
import { tableNamed, type ManifestTable } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';
import type { Obj } from './state.ts';

export interface Capture {
  sql: string;
  /** Mutation IDs the statement added to the client's queue, in local order. */
  ids: string[];
  /** When the harness ran the statement (epoch ms). */
  at: number;
}

export interface InspectedMutation {
  id: string;
  table: string;
  op: string;
  status: string;
  recordId?: string;
  columns?: Record<string, unknown>;
  baseVersion?: string | null;
  links?: Record<string, unknown>;
}

interface ClientOutcomeState {
  captures: Map<string, Capture[]>;
  /** The outcome a "delivered ... for that mutation" step found, by client. */
  outcomes: Map<string, Obj>;
}

const states = new WeakMap<SyncWorld, ClientOutcomeState>();

export function clientOutcomeState(world: SyncWorld): ClientOutcomeState {
  let state = states.get(world);
  if (state === undefined) {
    state = { captures: new Map(), outcomes: new Map() };
    states.set(world, state);
  }
  return state;
}

export async function inspectMutations(world: SyncWorld, name: string): Promise<InspectedMutation[]> {
  return (await (await world.process(name)).call<{ mutations: InspectedMutation[] }>('inspectMutations')).mutations;
}

/** Runs one statement on client `name` and notes the mutations it captured. */
export async function executeCapturing(world: SyncWorld, name: string, sql: string): Promise<Capture> {
  const client = await world.process(name);
  const before = new Set((await inspectMutations(world, name)).map((m) => m.id));
  const at = Date.now();
  await client.call('execute', { sql });
  const ids = (await inspectMutations(world, name)).map((m) => m.id).filter((id) => !before.has(id));
  const capture = { sql, ids, at };
  const state = clientOutcomeState(world);
  state.captures.set(name, [...(state.captures.get(name) ?? []), capture]);
  return capture;
}

export function captures(world: SyncWorld, name: string): Capture[] {
  return clientOutcomeState(world).captures.get(name) ?? [];
}

/** The one mutation the last statement of client `name` captured. */
export function thatMutationOf(world: SyncWorld, name: string): string {
  const last = captures(world, name).at(-1);
  if (last === undefined) throw new Error(`client "${name}" executed no statement in this scenario`);
  if (last.ids.length !== 1) throw new Error(`the last statement of client "${name}" captured ${last.ids.length} mutations, not one: ${last.sql}`);
  return last.ids[0] as string;
}

/** The mutation captured by the statement of client `name` whose SQL matches `pattern`. */
export function capturedBy(world: SyncWorld, name: string, pattern: RegExp): string {
  const found = captures(world, name).filter((c) => pattern.test(c.sql));
  if (found.length !== 1 || found[0]?.ids.length !== 1) throw new Error(`no single statement of client "${name}" matching ${pattern} captured one mutation`);
  return found[0].ids[0] as string;
}

/** Push exchanges of client `name`, in order, with their request bodies and what the client was given. */
export async function pushesOf(world: SyncWorld, name: string): Promise<{ request: Obj; delivered: Obj | undefined; status: number | undefined }[]> {
  const pushes = await exchangesOf(world, name, { endpoints: ['push'] });
  return pushes.map((e) => {
    const answer = deliveredOf(e);
    return { request: (bodyOf(e.requestBody) ?? {}) as Obj, delivered: answer === undefined ? undefined : (bodyOf(answer.body) as Obj | undefined), status: answer?.status };
  });
}

/** Every outcome the proxy delivered to client `name` for `mutationId`, oldest first. */
export async function deliveredOutcomes(world: SyncWorld, name: string, mutationId: string): Promise<Obj[]> {
  const out: Obj[] = [];
  for (const push of await pushesOf(world, name)) {
    if (push.status !== 200 || push.delivered === undefined) continue;
    const outcomes = [...((push.delivered.accepted ?? []) as Obj[]), ...((push.delivered.rejected ?? []) as Obj[])];
    out.push(...outcomes.filter((o) => o.mutation_id === mutationId));
  }
  return out;
}

export interface StoredVersion {
  table: string;
  recordId: string;
  serverVersion: string;
}

export async function storedVersions(world: SyncWorld, name: string): Promise<StoredVersion[]> {
  return (await (await world.process(name)).call<{ versions: StoredVersion[] }>('inspectRowVersions')).versions;
}

/** The version client `name` stores for a row, or undefined when it stores none. */
export async function storedVersion(world: SyncWorld, name: string, table: string, pk: string): Promise<string | undefined> {
  const tableId = (await tableNamed(world, table)).table_id;
  return (await storedVersions(world, name)).find((v) => (v.table === tableId || v.table === table) && v.recordId === pk)?.serverVersion;
}

export async function localRows(world: SyncWorld, name: string, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  return (await (await world.process(name)).call<{ rows: Record<string, unknown>[] }>('query', { sql, params })).rows;
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

export async function localRow(world: SyncWorld, name: string, table: string, pk: string): Promise<Record<string, unknown> | undefined> {
  const key = world.model.keyColumn(table).name;
  const rows = await localRows(world, name, `SELECT * FROM ${ident(table)} WHERE CAST(${ident(key)} AS TEXT) = ?`, [pk]);
  return rows[0];
}

/** True when a local SQLite value stands for a wire value (booleans as 0/1, numbers and decimals by their text). */
export function sameValue(wire: unknown, local: unknown): boolean {
  if (wire === null || wire === undefined) return local === null || local === undefined;
  if (typeof wire === 'boolean') return local === (wire ? 1 : 0) || local === wire;
  return String(wire) === String(local);
}

/** The fields of a wire row (keyed by field id) whose local value differs, by column name. */
export function rowDifferences(table: ManifestTable, wireRow: Obj, local: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const field of table.fields) {
    const wire = wireRow[field.field_id];
    if (!sameValue(wire, local[field.name])) out.push(`${field.name}: server ${JSON.stringify(wire)}, local ${JSON.stringify(local[field.name])}`);
  }
  return out;
}
