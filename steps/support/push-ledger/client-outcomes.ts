/**
 * The client under test's side of push outcomes: the outcome the proxy
 * delivered for a mutation that a step singled out ("that outcome"), the row
 * versions the client stores and its local rows compared with a server row.
 * Which mutations a write captured is in ../mutations/writes.ts, what the
 * client was delivered in ../mutations/pushes.ts.
 */
import { type ManifestTable, tableNamed } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';
import type { Obj } from './state.ts';

/** The outcome a "delivered ... for that mutation" step found, by client. */
const singledOut = new WeakMap<SyncWorld, Map<string, Obj>>();

export function thatOutcomeOfClient(world: SyncWorld, name: string): Obj {
  const outcome = singledOut.get(world)?.get(name);
  if (outcome === undefined) throw new Error(`no outcome delivered to client "${name}" was singled out by an earlier step`);
  return outcome;
}

export function singleOutOutcome(world: SyncWorld, name: string, outcome: Obj): void {
  const map = singledOut.get(world) ?? new Map<string, Obj>();
  map.set(name, outcome);
  singledOut.set(world, map);
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

/** The rows a query of client `name`'s local database returns. */
export async function localRows(world: SyncWorld, name: string, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  return (await (await world.process(name)).call<{ rows: Record<string, unknown>[] }>('query', { sql, params })).rows;
}

/** The rows of a local query with every cell as text, as the features write them (SQLite hands back numbers and text; null is "null"). */
export async function localRowsAsText(world: SyncWorld, name: string, sql: string): Promise<Record<string, string>[]> {
  return (await localRows(world, name, sql)).map((row) => Object.fromEntries(Object.entries(row).map(([column, value]) => [column, value === null ? 'null' : String(value)])));
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
