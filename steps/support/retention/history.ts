/**
 * Retained change history as the retention scenarios arrange and observe it
 * (SYNC-SCHEMA-004, SYNC-SCHEMA-006): source rows committed one transaction
 * each, cursors recorded at known positions without acknowledging them, pulls
 * presenting recorded cursors, the changes such a pull listed, and the
 * retained effects and resume floor of a scope read through server inspection.
 */
import type { InspectControl } from '../../../harness/adapters/server.ts';
import type { Reply } from '../reply.ts';
import { generationsState } from '../scope-generations/state.ts';
import { awaitCapture } from '../source-schema.ts';
import { keyValue, type Obj } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

/** `"t1"` to `"t5"` → t1, t2, ..., t5: one letter prefix, a numbered range. */
export function idRange(first: string, last: string): string[] {
  const a = /^(.*?)([0-9]+)$/.exec(first);
  const b = /^(.*?)([0-9]+)$/.exec(last);
  if (a === null || b === null || a[1] !== b[1]) throw new Error(`"${first}" to "${last}" is not a numbered range of one prefix`);
  const from = Number(a[2]);
  const to = Number(b[2]);
  if (to < from) throw new Error(`"${first}" to "${last}" runs backwards`);
  return Array.from({ length: to - from + 1 }, (_, i) => `${a[1]}${from + i}`);
}

/** The row ids a step lists: `"x"`, `"x" and "y"`, or `"x" to "y"`. */
export function listedIds(text: string): string[] {
  const single = /^"([^"]+)"$/.exec(text);
  if (single) return [single[1] as string];
  const pair = /^"([^"]+)" and "([^"]+)"$/.exec(text);
  if (pair) return [pair[1] as string, pair[2] as string];
  const range = /^"([^"]+)" to "([^"]+)"$/.exec(text);
  if (range) return idRange(range[1] as string, range[2] as string);
  throw new Error(`${text} names no rows: write "x", "x" and "y", or "x" to "y"`);
}

export interface SourceRowSpec {
  id: string;
  /** Column -> value, besides the key. */
  values: Record<string, string>;
}

/** Inserts each row on the source in a transaction of its own (so each gets its own commit position), then waits for capture. */
export async function commitRowsOneEach(world: SyncWorld, table: string, rows: SourceRowSpec[]): Promise<void> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source rows`);
  const key = world.model.keyColumn(table).name;
  for (const row of rows) {
    const columns = [key, ...Object.keys(row.values)];
    const values = [row.id, ...Object.values(row.values)];
    await server.sourceSql.query(
      `INSERT INTO public."${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')})`,
      values,
    );
  }
  await awaitCapture(world);
}

const pointer = (scope: string) => `/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`;

/** The cursor recorded as `label` for `scope`. */
export function recordedCursor(world: SyncWorld, label: string, scope: string): string {
  const cursor = generationsState(world).cursors.get(label)?.get(scope);
  if (typeof cursor !== 'string') throw new Error(`no cursor of ${scope} was recorded as "${label}" earlier in this scenario`);
  return cursor;
}

function remember(world: SyncWorld, label: string, scope: string, cursor: string): void {
  const cursors = generationsState(world).cursors;
  if (cursors.get(label)?.has(scope)) throw new Error(`a cursor of ${scope} was already recorded as "${label}"`);
  cursors.set(label, new Map([...(cursors.get(label) ?? new Map<string, string | null>()), [scope, cursor]]));
}

/** One pull of harness client `name` presenting, for each scope given, the cursor recorded under its label; every other scope keeps the cursor the client holds. */
export async function pullPresenting(world: SyncWorld, name: string, presented: Record<string, string>, limit?: number): Promise<Reply> {
  const client = world.wire(name);
  const patch: Obj = {};
  for (const [scope, label] of Object.entries(presented)) {
    if (!client.cursors.has(scope)) throw new Error(`client "${name}" is not assigned ${scope}`);
    patch[pointer(scope)] = { cursor: recordedCursor(world, label, scope) };
  }
  return await client.pull(patch, limit === undefined ? {} : { limit });
}

/** The upserts a pull listed, in order, as `scope id` (the scope, then the key value). */
export function upsertsOf(reply: Reply): string[] {
  const changes = (reply.json?.changes ?? []) as Obj[];
  return changes.map((c) => `${String(c.scope)} ${String(c.op)} ${String(keyValue(c.pk))}`);
}

/**
 * Records the cursor standing after each of the next changes of `scope` as
 * `labels[i]`. Every pull presents the cursor the client held before the
 * first one and asks for i + 1 changes (each page must extend the previous
 * one by one upsert), so the client's acknowledged position for the scope
 * stays where it was: a later step chooses what the client acknowledges.
 */
export async function recordCursorsAfterEachChange(world: SyncWorld, name: string, scope: string, labels: string[]): Promise<void> {
  const client = world.wire(name);
  const start = client.cursors.get(scope);
  if (typeof start !== 'string') throw new Error(`client "${name}" holds no cursor of ${scope} to pull from`);
  const startLabel = `${name}:${scope}:before-recording`;
  remember(world, startLabel, scope, start);
  let before: string[] = [];
  for (const [index, label] of labels.entries()) {
    const reply = await pullPresenting(world, name, { [scope]: startLabel }, index + 1);
    if (reply.status !== 200) throw new Error(`the pull for ${label} was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
    const got = upsertsOf(reply).filter((c) => c.startsWith(`${scope} `));
    const extends1 = got.length === index + 1 && got.slice(0, index).every((c, i) => c === before[i]) && got.every((c) => c.startsWith(`${scope} upsert `));
    if (!extends1) throw new Error(`the pull with limit ${index + 1} listed ${JSON.stringify(got)}, which does not extend ${JSON.stringify(before)} by one upsert`);
    before = got;
    const cursor = (reply.json.scope_cursors as Record<string, unknown> | undefined)?.[scope];
    if (typeof cursor !== 'string') throw new Error(`the pull for ${label} issued no cursor of ${scope}: ${reply.text.slice(0, 500)}`);
    remember(world, label, scope, cursor);
  }
}

export async function inspectOf(world: SyncWorld): Promise<InspectControl> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read retained history`);
  return server.inspect;
}

/** How many effects the server still retains for `scope`. */
export async function retainedEffectCount(world: SyncWorld, scope: string): Promise<number> {
  const rows = await (await inspectOf(world)).query<{ n: string }>('SELECT count(*)::text AS n FROM synchro.scope_effects WHERE scope_id = $1', [scope]);
  return Number(rows[0]?.n ?? -1);
}
