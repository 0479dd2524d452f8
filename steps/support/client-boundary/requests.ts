/**
 * SYNC-BOUND-003 helpers: a writer of its own creating and changing tasks on
 * the server, and the requests a client process sent as the proxy recorded
 * them, in order, with the answers it was given.
 */
import { bodyOf, deliveredOf, exchangesOf } from '../exchanges.ts';
import { awaitCapture } from '../source-schema.ts';
import type { Obj } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

/** A harness client of its own user that writes tasks owned by anyone; its rows reach their owners through the scopes. */
export async function taskWriter(world: SyncWorld, name: string) {
  const writer = world.wire(name, `writer-${name.toLowerCase()}`);
  if (writer.manifest === undefined || !writer.manifest.tables.some((t) => t.name === 'tasks')) await writer.connectAndRebuild();
  return writer;
}

/** Pushes one mutation of task `id` through writer `name` and asserts it was applied; returns the outcome. */
export async function writeTask(world: SyncWorld, name: string, op: 'insert' | 'update', id: string, columns: Record<string, unknown>, baseVersion?: string): Promise<Obj> {
  const writer = await taskWriter(world, name);
  const mutation = writer.mutation({ op, table: 'tasks', pk: id, columns, ...(baseVersion === undefined ? {} : { base_version: baseVersion }) });
  const reply = await writer.push([mutation]);
  const outcome = ((reply.json?.accepted ?? []) as Obj[])[0];
  if (reply.status !== 200 || outcome?.status !== 'applied') throw new Error(`the ${op} of task ${id} by client "${name}" was not applied: ${reply.status} ${reply.text.slice(0, 400)}`);
  // Other clients see the write once capture has materialized it.
  await awaitCapture(world);
  return outcome;
}

/** Every request client `name` sent, oldest first: endpoint, parsed body, the status and body it was given. */
export async function sentRequests(world: SyncWorld, name: string, range: { from?: number; to?: number } = {}): Promise<{ endpoint: string; body: Obj | undefined; status: number | undefined; answer: Obj | undefined }[]> {
  return (await exchangesOf(world, name, range)).map((e) => {
    const delivered = deliveredOf(e);
    return { endpoint: e.endpoint, body: bodyOf(e.requestBody) as Obj | undefined, status: delivered?.status, answer: delivered === undefined ? undefined : (bodyOf(delivered.body) as Obj | undefined) };
  });
}

/** The version client `name` stores for row `row` (any table), as its inspection shows it. */
export async function storedVersion(world: SyncWorld, name: string, row: string): Promise<string | undefined> {
  const { versions } = await (await world.process(name)).call<{ versions: { recordId: string; serverVersion: string }[] }>('inspectRowVersions');
  return versions.find((v) => v.recordId === row)?.serverVersion;
}
