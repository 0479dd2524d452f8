/**
 * SYNC-BOUND-004 helpers: the row a scenario's application SQL wrote (which
 * table, which key, what its update assigned, which mutation IDs the writes
 * captured), that row as a client and the server source hold it, and a push of
 * one mutation by the harness's own client followed by what a second client's
 * next pull delivers for the same key.
 */

import { queueState } from '../mutations/state.ts';
import type { Reply } from '../reply.ts';
import { cellValue } from '../values.ts';
import { fieldId, tableNamed } from '../wire-values/recorded.ts';
import { SyncWorld } from '../world.ts';

type Obj = Record<string, unknown>;

export interface WrittenRow {
  client: string;
  table: string;
  /** The key as text, as the features and the local SQL name it. */
  key: string;
  /** The columns the application's update assigned, by column name. */
  updated: Obj;
  /** The mutation IDs the writes captured, in write order. */
  captured: string[];
}

/**
 * The row the scenario's application SQL wrote: every write ran on one
 * client, on one row (the scenarios insert, update and delete the same row).
 */
export function rowOfWrites(world: SyncWorld): WrittenRow {
  const state = queueState(world);
  const writers = [...state.writes.entries()].filter(([, writes]) => writes.length > 0);
  if (writers.length !== 1) throw new Error(`expected application SQL on one client, found it on ${writers.length}`);
  const [client, writes] = writers[0] ?? ['', []];
  const seen = state.seen.get(client) ?? new Map();
  const captured = writes.flatMap((w) => w.captured);
  const records = captured.map((id) => seen.get(id));
  const first = records[0];
  if (first === undefined || records.some((r) => r === undefined)) throw new Error(`client "${client}" did not show a record for every mutation its writes captured: ${captured.join(', ')}`);
  if (records.some((r) => r.recordId !== first.recordId)) throw new Error(`the writes of client "${client}" touched more than one row`);
  const update = records.find((r) => r.op === 'update');
  return { client, table: first.table, key: String(first.recordId), updated: { ...(update?.columns ?? {}) }, captured };
}

function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Values as text: an int64 key or value reads the same from SQLite and PostgreSQL that way. */
function asText(row: Obj | undefined): Obj | undefined {
  if (row === undefined) return undefined;
  return Object.fromEntries(Object.entries(row).map(([column, value]) => [column, value === null ? null : String(value)]));
}

/** Columns of a client's application table as the columns of the registered table, by name; keyed by field id when the record carries ids. */
async function columnNames(world: SyncWorld, table: string, values: Obj): Promise<Obj> {
  const shape = await tableNamed(world, table);
  return Object.fromEntries(Object.entries(values).map(([column, value]) => [shape.fields.find((f) => f.field_id === column)?.name ?? column, value]));
}

/** The row as client `name`'s application reads it (every declared column, as text), or undefined. */
export async function localRow(world: SyncWorld, name: string, row: WrittenRow): Promise<Obj | undefined> {
  const spec = world.model.table(row.table);
  const key = world.model.keyColumn(row.table).name;
  const select = spec.columns.map((c) => `CAST(${ident(c.name)} AS TEXT) AS ${ident(c.name)}`).join(', ');
  const { rows } = await (await world.process(name)).call<{ rows: Obj[] }>('query', { sql: `SELECT ${select} FROM ${ident(row.table)} WHERE CAST(${ident(key)} AS TEXT) = ?`, params: [row.key] });
  if (rows.length > 1) throw new Error(`client "${name}" holds ${rows.length} rows with key ${row.key} in ${row.table}`);
  return asText(rows[0]);
}

/** The authored columns of the update, as text and by column name. */
export async function updatedColumns(world: SyncWorld, row: WrittenRow): Promise<Obj> {
  return asText(await columnNames(world, row.table, row.updated)) ?? {};
}

/** The row as the server's source table holds it, or undefined. */
export async function sourceRow(world: SyncWorld, row: WrittenRow): Promise<Obj | undefined> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability`);
  const key = world.model.keyColumn(row.table).name;
  const rows = await server.sourceSql.query(`SELECT * FROM public.${ident(row.table)} WHERE ${ident(key)}::text = $1`, [row.key]);
  return asText(rows[0] as Obj | undefined);
}

/** One mutation the harness's client pushed in a step, remembered for "the next pull ... reflects that". */
export interface PushedMutation {
  table: string;
  key: string;
  op: 'insert' | 'update' | 'delete';
  columns?: Obj;
}

const pushedLast = new WeakMap<SyncWorld, PushedMutation>();

/**
 * Pushes one mutation of wire client `name` on `table`/`key`, with the
 * columns given by name and, when `base` is set, the server version the
 * harness holds for the row as its base version.
 */
export async function pushOneOf(
  world: SyncWorld,
  name: string,
  spec: { op: 'insert' | 'update' | 'delete'; table: string; key: string; columns?: Obj; base?: boolean; mutationId?: string },
): Promise<Reply> {
  const client = world.wire(name);
  const pk = cellValue(world.model.keyColumn(spec.table), spec.key);
  let baseVersion: string | undefined;
  if (spec.base === true) {
    baseVersion = world.heldVersions.get(SyncWorld.rowKey(client.tableId(spec.table), pk));
    if (baseVersion === undefined) throw new Error(`the harness holds no server version of ${spec.table} ${spec.key} to use as base version`);
  }
  const mutation = client.mutation({
    op: spec.op,
    table: spec.table,
    pk,
    ...(spec.mutationId === undefined ? {} : { mutation_id: spec.mutationId }),
    ...(spec.columns === undefined ? {} : { columns: spec.columns }),
    ...(baseVersion === undefined ? {} : { base_version: baseVersion }),
  });
  pushedLast.set(world, { table: spec.table, key: spec.key, op: spec.op, ...(spec.columns === undefined ? {} : { columns: spec.columns }) });
  return client.push([mutation]);
}

/** What wire client `name`'s next pull (every page) delivered for the row the last harness push wrote. */
export async function lastDeliveredChange(world: SyncWorld, name: string, table: string): Promise<{ pushed: PushedMutation; delivered: { op: string; row?: Obj } | undefined; replyText: string }> {
  const pushed = pushedLast.get(world);
  if (pushed === undefined || pushed.table !== table) throw new Error(`the harness pushed no mutation on "${table}" in this scenario`);
  const client = world.wire(name);
  const pages = await client.pullAll();
  const failed = pages.find((p) => p.status !== 200);
  if (failed !== undefined) throw new Error(`the pull of client "${name}" was answered ${failed.status}: ${failed.text.slice(0, 500)}`);
  const shape = await tableNamed(world, table);
  const keyField = fieldId(shape, world.model.keyColumn(table).name);
  const changes = pages.flatMap((p) => (p.json?.changes ?? []) as { table: string; pk: Obj; op: string; row?: Obj }[]);
  const mine = changes.filter((c) => c.table === shape.table_id && String(c.pk[keyField]) === pushed.key);
  const last = mine.at(-1);
  const delivered = last === undefined ? undefined : { op: last.op, ...(last.row === undefined ? {} : { row: client.namedRow(table, last.row) }) };
  return { pushed, delivered, replyText: pages.map((p) => p.text).join('\n') };
}
