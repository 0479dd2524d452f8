/**
 * Continuation receipts presented by the harness's own protocol clients: a
 * first connect carrying the seed's schema and receipts, the cursors each
 * connect yields, and receipts or converted cursors presented where they do
 * not belong (another client's pull, a rebuild, a connect without a
 * credential).
 */
import type { SyncWorld } from '../world.ts';
import { artifactReceipts, publishedResult } from './artifacts.ts';

export type Obj = Record<string, unknown>;

/** Per scenario: the connect answer each harness client got when it presented receipts. */
const connects = new WeakMap<SyncWorld, Map<string, Obj>>();

export function connectsOf(world: SyncWorld): Map<string, Obj> {
  let map = connects.get(world);
  if (map === undefined) {
    map = new Map();
    connects.set(world, map);
  }
  return map;
}

export async function connectWithReceipts(world: SyncWorld, name: string, user: string, file: string): Promise<void> {
  await world.readyServer();
  const client = world.newWire(name, user);
  const seed = publishedResult(world, file);
  const reply = await client.connect({ schema: { ...seed.schema }, seed_receipts: artifactReceipts(world, file) });
  connectsOf(world).set(name, (reply.status === 200 ? reply.json : { status: reply.status, body: reply.json }) as Obj);
}
