/**
 * A client process's sync cycles seen from the proxy: which endpoints one
 * cycle called, what its pulls carried, which scopes it presented, and the
 * scope state it reports afterwards. A "sync window" is the range of proxy
 * exchanges one sync produced; a connect answer can be held at the proxy so
 * assignment changes land while a cycle is in progress.
 */
import type { SyncWorld } from '../world.ts';
import { scopesState, type SyncWindow } from './state.ts';

// The core's sync steps open and close a window too, so "that sync" can name them.
export const CORE_SYNC = /^client "([^"]+)" (?:of user "[^"]+" )?(?:syncs|has synced)$/;

export async function openWindow(world: SyncWorld, name: string): Promise<SyncWindow> {
  const window: SyncWindow = { client: name, from: (await world.proxy()).exchanges.length, to: undefined };
  scopesState(world).windows.push(window);
  return window;
}

export async function reportedScopes(world: SyncWorld, name: string): Promise<{ scopeId: string; cursor: string | null; rebuildRequired: boolean }[]> {
  const client = await world.process(name);
  return (await client.call<{ scopes: { scopeId: string; cursor: string | null; rebuildRequired: boolean }[] }>('inspectScopes')).scopes;
}
