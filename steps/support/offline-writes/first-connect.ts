/**
 * SYNC-SEED-007 helpers: a client opened before it ever reached the server
 * (with the current manifest bundled, tampered, or with nothing), what it
 * sent on its first sync as the proxy recorded it, and the one mutation a
 * process client's last write captured with the outcome the server gave it.
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import type { SchemaManifest } from '../../../harness/wire/index.ts';
import { bodyOf, deliveredOf, exchangesOf } from '../exchanges.ts';
import { pushesOf, serverOutcomes } from '../mutations/pushes.ts';
import { lastWrite, thatMutationOf } from '../mutations/writes.ts';
import type { Obj } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

const bundled = new WeakMap<SyncWorld, Map<string, SchemaManifest>>();

/** The manifest the server serves now, read by a harness client of its own. */
export async function currentManifest(world: SyncWorld): Promise<SchemaManifest> {
  const reader = world.newWire('manifest-reader', 'manifest-reader');
  const reply = await reader.connect();
  if (reply.status !== 200 || reader.manifest === undefined) throw new Error(`the current manifest could not be read: ${reply.status} ${reply.text.slice(0, 300)}`);
  return reader.manifest;
}

export function rememberBundled(world: SyncWorld, name: string, manifest: SchemaManifest): void {
  const byClient = bundled.get(world) ?? new Map<string, SchemaManifest>();
  byClient.set(name, manifest);
  bundled.set(world, byClient);
}

/** The manifest client `name` was opened with. */
export function bundledManifest(world: SyncWorld, name: string): SchemaManifest {
  const manifest = bundled.get(world)?.get(name);
  if (manifest === undefined) throw new Error(`client "${name}" was not opened with a bundled manifest in this scenario`);
  return manifest;
}

/** The reference `{version, hash}` of the manifest client `name` was opened with. */
export function bundledReference(world: SyncWorld, name: string): { version: number; hash: string } {
  const manifest = bundledManifest(world, name);
  return { version: manifest.schema_version, hash: manifest.schema_hash };
}

/** Every request client `name` sent through the proxy, oldest first, with its parsed body and what it was given. */
export async function requestsOf(world: SyncWorld, name: string): Promise<{ exchange: Exchange; body: Obj | undefined; answer: Obj | undefined; status: number | undefined }[]> {
  return (await exchangesOf(world, name, {})).map((exchange) => {
    const delivered = deliveredOf(exchange);
    return { exchange, body: bodyOf(exchange.requestBody) as Obj | undefined, answer: delivered === undefined ? undefined : (bodyOf(delivered.body) as Obj | undefined), status: delivered?.status };
  });
}

/** The outcome the server gave mutation `id` of client `name` (asserted unique by the caller). */
export async function outcomesFor(world: SyncWorld, name: string, id: string): Promise<Obj[]> {
  return serverOutcomes(await pushesOf(world, name), id);
}

/** "That mutation" of a client process: the one its latest application write captured, with every outcome the server gave it. */
export async function processWriteOutcomes(world: SyncWorld): Promise<{ name: string; id: string; outcomes: Obj[] }> {
  const { name } = lastWrite(world);
  const id = thatMutationOf(world, name);
  return { name, id, outcomes: await outcomesFor(world, name, id) };
}

/** One column of one local row of client `name`, as SQLite returns it (undefined when the row is absent). */
export async function localValue(world: SyncWorld, name: string, table: string, row: string, column: string): Promise<unknown> {
  const key = world.model.keyColumn(table).name;
  const { rows } = await (await world.process(name)).call<{ rows: Obj[] }>('query', { sql: `SELECT "${column}" AS v FROM "${table}" WHERE CAST("${key}" AS TEXT) = ?`, params: [row] });
  return rows[0]?.v;
}

/** The error code a refused call carries (a typed client error or a refused statement), or undefined for an untyped failure. */
export function typedCode(error: Error | undefined): string | undefined {
  const data = (error as { data?: { type?: unknown; sqlError?: unknown } } | undefined)?.data;
  const code = data?.type ?? data?.sqlError;
  // A SQLite message ("no such table: tasks") is no code: a code is one snake_case word.
  return typeof code === 'string' && /^[a-z][a-z0-9_]*$/.test(code) ? code : undefined;
}
