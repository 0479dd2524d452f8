/**
 * Changing the authoritative scope assignment through the server's `scopes`
 * capability: per-user grants, shared scopes and the default user scope.
 */
import { Given } from '@cucumber/cucumber';
import type { ScopesControl } from '../../harness/adapters/server.ts';
import type { SyncWorld } from '../support/world.ts';

async function scopes(world: SyncWorld): Promise<ScopesControl> {
  const server = await world.readyServer();
  if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability`);
  return server.scopes;
}

Given('user {string} is assigned scope {string}', async function (this: SyncWorld, user: string, scope: string) {
  await (await scopes(this)).grantUserScope(user, scope);
});

Given('scope {string} is revoked from user {string}', async function (this: SyncWorld, scope: string, user: string) {
  await (await scopes(this)).revokeUserScope(user, scope);
});

Given('a registered shared scope {string}', async function (this: SyncWorld, scope: string) {
  await (await scopes(this)).registerSharedScope(scope);
});

// The default scope of a user is `user:<id>`; revoking it is a grant change like any other.
Given('the default scope of user {string} is revoked', async function (this: SyncWorld, user: string) {
  await (await scopes(this)).revokeUserScope(user, `user:${user}`);
});
