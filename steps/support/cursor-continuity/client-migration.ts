/**
 * The client under test across a schema-changing connect: what it reports
 * (installed schema and cursors, through the adapter's inspection), what the
 * proxy recorded it sending after that connect, and the connect answer it
 * was given.
 */
import { bodyOf, deliveredOf, exchangesOf } from '../exchanges.ts';
import type { Cursors } from '../scope-cursors/cursors.ts';
import type { Obj } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

export interface ReportedState {
  schema: { version: number; hash: string } | null;
  cursors: Cursors;
}

/** The installed schema and every scope's cursor the client process reports now. */
export async function reportedState(world: SyncWorld, name: string): Promise<ReportedState> {
  const inspected = await (await world.process(name)).call<{ schema: { version: number; hash: string } | null; scopes: { scopeId: string; cursor: string | null }[] }>('inspectScopes');
  return { schema: inspected.schema, cursors: new Map(inspected.scopes.map((s) => [s.scopeId, s.cursor])) };
}

/** The last sync window of client `name`. */
export function lastWindow(world: SyncWorld, name: string): { from: number; to: number | undefined } {
  const window = world.syncWindows.filter((w) => w.client === name).at(-1);
  if (window === undefined) throw new Error(`client "${name}" did not sync in this scenario`);
  return window;
}

/** The exchanges of client `name` in its last sync, from the connect on, and the replacement map the connect delivered. */
export async function afterLastConnect(world: SyncWorld, name: string): Promise<{ connect: Obj; later: Awaited<ReturnType<typeof exchangesOf>> }> {
  const { from, to } = lastWindow(world, name);
  const log = await exchangesOf(world, name, { from, to });
  const index = log.findIndex((e) => e.endpoint === 'connect' && deliveredOf(e)?.status === 200);
  if (index < 0) throw new Error(`the last sync of client "${name}" had no answered connect`);
  const delivered = deliveredOf(log[index] as (typeof log)[number]);
  return { connect: bodyOf(delivered?.body) as Obj, later: log.slice(index + 1) };
}
