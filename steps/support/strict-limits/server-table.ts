/**
 * The server table as any client reads it, for the limit scenarios: rows
 * added through an ordinary writer of the owner (so no capability beyond the
 * wire is needed), and a picture of the served rows taken right before a
 * refused request, to show afterwards that the refusal changed nothing.
 */
import { quietReader, servedRows } from '../server-rows.ts';
import { awaitCapture } from '../source-schema.ts';
import { fillerInsert } from '../wire-values/requests.ts';
import type { SyncWorld } from '../world.ts';

/** The protocol's largest batch, so the writer needs as few pushes as it can. */
const WRITER_BATCH = 1000;

/** Adds `count` rows of `owner` to the scenario's first table through a writer client of that user, then waits for capture. */
export async function addRows(world: SyncWorld, table: string, count: number, owner: string): Promise<void> {
  const first = [...world.model.tables.values()][0];
  if (first?.name !== table) throw new Error(`rows are added to the scenario's first declared table, not "${table}"`);
  await world.readyServer();
  const writer = quietReader(world, owner);
  const connected = await writer.connect();
  if (connected.status !== 200) throw new Error(`a writer of ${owner} could not connect: ${connected.status} ${connected.text.slice(0, 300)}`);
  for (let done = 0; done < count; done += WRITER_BATCH) {
    const mutations = Array.from({ length: Math.min(WRITER_BATCH, count - done) }, () => fillerInsert(world, writer));
    const reply = await writer.push(mutations);
    const accepted = (reply.json?.accepted ?? []) as unknown[];
    if (reply.status !== 200 || accepted.length !== mutations.length) throw new Error(`the writer's push of ${mutations.length} rows was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  }
  await awaitCapture(world);
}

const pictures = new WeakMap<SyncWorld, Map<string, string>>();

/** Every served row of `table` as `key -> row and version` text. */
async function picture(world: SyncWorld, table: string): Promise<Map<string, string>> {
  const rows = await servedRows(world, table);
  return new Map([...rows].map(([key, served]) => [key, JSON.stringify([served.row, served.serverVersion])]));
}

/** Remembers the rows the server serves for `table` now. */
export async function rememberTable(world: SyncWorld, table: string): Promise<void> {
  pictures.set(world, await picture(world, table));
}

/** The differences between the remembered rows of `table` and the rows served now. */
export async function tableChanges(world: SyncWorld, table: string): Promise<string[]> {
  const before = pictures.get(world);
  if (before === undefined) throw new Error(`the rows of "${table}" were not remembered before the request`);
  const after = await picture(world, table);
  const changes: string[] = [];
  for (const [key, row] of after) if (before.get(key) !== row) changes.push(`${key}: ${before.has(key) ? 'changed' : 'added'}`);
  for (const key of before.keys()) if (!after.has(key)) changes.push(`${key}: removed`);
  return changes;
}
