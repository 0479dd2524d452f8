/**
 * The highest active registry generation, read right before a registration
 * attempt, so "no new active registry generation exists" can compare with
 * it afterwards (a refused registration must activate none).
 */
import { inspectRows } from '../capture/inspection.ts';
import type { SyncWorld } from '../world.ts';

const before = new WeakMap<SyncWorld, string | null>();

async function activeGenerationOrNull(world: SyncWorld): Promise<string | null> {
  const [row] = await inspectRows<{ g: string | null }>(world, "SELECT max(generation)::text AS g FROM synchro.registry_generations WHERE state = 'active'");
  return row?.g ?? null;
}

export async function rememberGenerationBefore(world: SyncWorld): Promise<void> {
  before.set(world, await activeGenerationOrNull(world));
}

export async function assertNoNewGeneration(world: SyncWorld): Promise<void> {
  if (!before.has(world)) throw new Error('no registration was attempted in this scenario');
  world.assert.equal(await activeGenerationOrNull(world), before.get(world), 'the highest active registry generation, before and after the refused registration');
}
