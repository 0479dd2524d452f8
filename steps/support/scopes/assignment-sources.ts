/**
 * The sources of a user's assigned scope set beyond the core's grant and
 * shared-scope steps: the registered assignment function (given as data or
 * reading an application table), grants made in one operator transaction,
 * login roles in or outside synchro_operator, SQL run as those roles, and the
 * catalog entry of the registration function.
 */
import type { ScopesControl } from '../../../harness/adapters/server.ts';
import type { SyncWorld } from '../world.ts';

export async function provisioned(world: SyncWorld): Promise<{ exec: (sql: string) => Promise<void>; scopes: ScopesControl }> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability`);
  if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability`);
  return { exec: server.provision.exec, scopes: server.scopes };
}
