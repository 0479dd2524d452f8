/**
 * Portable seeds from the server side: declaring a shared scope portable,
 * running one export transaction through the adapter's `seed` capability,
 * and checking what it returned against the harness codec (row digests of
 * the records, cardinality and scope digest of the manifest entry).
 */
import type { SyncWorld } from '../world.ts';
import { remember, seedControl } from './exports.ts';

export async function exportScope(world: SyncWorld, scope: string, pageLimit: number | undefined): Promise<void> {
  const seed = await seedControl(world);
  const result = await seed.export({ scopes: [scope], ...(pageLimit === undefined ? {} : { pageLimit }) });
  remember(world, { scope, pageLimit, result });
}
