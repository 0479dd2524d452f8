/**
 * Otherwise valid sync requests of a harness client that carry something a
 * client must not decide: a scope it was never assigned, a filter, a
 * predicate or SQL. Before each such request the source rows of the
 * scenario's tables are read (when the server adapter offers source SQL), so
 * a later step can tell whether anything the request carried was executed.
 */
import { randomUUID } from 'node:crypto';
import type { Json } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

export type SmuggleEndpoint = 'connect' | 'pull' | 'rebuild';

const sourceBefore = new WeakMap<SyncWorld, Map<string, Record<string, unknown>[]>>();

async function readSource(world: SyncWorld, table: string): Promise<Record<string, unknown>[] | undefined> {
  const server = await world.readyServer();
  if (!server.sourceSql) return undefined;
  const key = world.model.keyColumn(table);
  return (await server.sourceSql.query(`SELECT to_jsonb(t) AS row FROM public."${table}" t ORDER BY "${key.name}"::text`)) as Record<string, unknown>[];
}

/** Reads every declared table's source rows now, to compare after the request. */
async function noteSource(world: SyncWorld): Promise<void> {
  const noted = new Map<string, Record<string, unknown>[]>();
  for (const table of world.model.tables.keys()) {
    const rows = await readSource(world, table);
    if (rows !== undefined) noted.set(table, rows);
  }
  sourceBefore.set(world, noted);
}

export async function sourceRowsNow(world: SyncWorld, table: string): Promise<{ before: Record<string, unknown>[]; now: Record<string, unknown>[] }> {
  const before = sourceBefore.get(world)?.get(table);
  if (before === undefined) throw new Error(`the source rows of "${table}" were not read before the request`);
  const now = await readSource(world, table);
  if (now === undefined) throw new Error('the server adapter has no sourceSql capability to read source tables');
  return { before, now };
}

/** The endpoint's ordinary request from client `name`, on its current state. */
function validBody(world: SyncWorld, name: string, endpoint: SmuggleEndpoint): Json {
  const client = world.wire(name);
  if (endpoint === 'connect') return client.connectBody();
  if (endpoint === 'pull') return client.pullBody();
  const scope = [...client.cursors.keys()][0];
  if (scope === undefined) throw new Error(`client "${name}" is assigned no scope to rebuild`);
  return client.rebuildBody(scope, randomUUID(), null, 1000);
}

/** Sends the endpoint's valid request from client `name` after `edit` changed its body; the answer becomes the last reply. */
export async function sendSmuggled(world: SyncWorld, name: string, endpoint: SmuggleEndpoint, edit: (body: Json) => void): Promise<void> {
  await noteSource(world);
  const body = validBody(world, name, endpoint);
  edit(body);
  // The request is wrong on purpose: the proxy must not hold it against the harness.
  await world.wire(name).post(`/sync/${endpoint}`, body, { invalid: true, endpoint });
}
