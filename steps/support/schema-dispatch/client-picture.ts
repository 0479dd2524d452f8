/**
 * What client "A" shows through its inspection calls around an explicit
 * schema reset (queue, sealed batches, rejections), recorded once so later
 * steps compare the same values.
 */
import type { Snapshot } from '../wire-values/client-state.ts';
import type { SyncWorld } from '../world.ts';

export interface Batch {
  batchId: string;
  state: string;
  requestBytes: string;
}

export interface QueuePicture {
  mutations: Record<string, unknown>[];
  batches: Batch[];
  rejections: unknown[];
}

interface PictureState {
  before: Map<string, QueuePicture>;
  /** Where the proxy log stood when the picture was taken. */
  mark: Map<string, number>;
  localTables: Map<string, object[]>;
  digest: Map<string, Snapshot>;
  metadata: Map<string, unknown>;
}

const states = new WeakMap<SyncWorld, PictureState>();

export function pictureState(world: SyncWorld): PictureState {
  let state = states.get(world);
  if (state === undefined) {
    state = { before: new Map(), mark: new Map(), localTables: new Map(), digest: new Map(), metadata: new Map() };
    states.set(world, state);
  }
  return state;
}

export async function sealedBatches(world: SyncWorld, name: string): Promise<Batch[]> {
  const client = await world.process(name);
  return (await client.call<{ batches: Batch[] }>('inspectBatches')).batches;
}

export async function clientPicture(world: SyncWorld, name: string): Promise<QueuePicture> {
  const client = await world.process(name);
  const mutations = (await client.call<{ mutations: Record<string, unknown>[] }>('inspectMutations')).mutations;
  const rejections = (await client.call<{ rejections: unknown[] }>('inspectRejections')).rejections;
  return { mutations, batches: await sealedBatches(world, name), rejections };
}

export async function tasksMutations(world: SyncWorld, name: string, table: string): Promise<Record<string, unknown>[]> {
  const client = await world.process(name);
  const mutations = (await client.call<{ mutations: Record<string, unknown>[] }>('inspectMutations')).mutations;
  return mutations.filter((m) => m.table === table);
}
