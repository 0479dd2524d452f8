/**
 * A client process's sync cycles seen from the proxy: which endpoints one
 * cycle called, what its pulls carried, which scopes it presented, and the
 * scope state it reports afterwards (sync windows are the World's).
 */
import type { SyncWorld } from '../world.ts';

export async function reportedScopes(world: SyncWorld, name: string): Promise<{ scopeId: string; cursor: string | null; rebuildRequired: boolean }[]> {
  const client = await world.process(name);
  return (await client.call<{ scopes: { scopeId: string; cursor: string | null; rebuildRequired: boolean }[] }>('inspectScopes')).scopes;
}
