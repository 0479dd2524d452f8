/**
 * A client adapter process opened on a copy of a portable seed artifact
 * (`open` with `seedPath`), and what its inspection shows before it ever
 * connected: the seeded rows with their server versions and provenance, the
 * stored continuation receipts, no queue and no cursor.
 */
import type { SyncWorld } from '../world.ts';
import { copyForClient } from './artifacts.ts';

export async function openOnSeed(world: SyncWorld, name: string, user: string, file: string, extra: Record<string, unknown> = {}): Promise<void> {
  world.clientUsers.set(name, user);
  // The client gets its own copy, as an application copies the seed it ships; it then verifies and adopts it.
  await world.process(name, { seedPath: copyForClient(world, file, name), ...extra });
}

export async function assertNoMutation(world: SyncWorld, name: string): Promise<void> {
  const { mutations } = await (await world.process(name)).call<{ mutations: unknown[] }>('inspectMutations');
  world.assert.equal(mutations.length, 0, `mutations retained by client "${name}"`);
}
