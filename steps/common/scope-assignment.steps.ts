/**
 * Shared steps (used by several requirements).
 * Scope assignment: users granted and revoked scopes, shared scopes, and what
 * the registered assignment function returns.
 */
import { type DataTable, Given, When } from '@cucumber/cucumber';
import type { ScopesControl } from '../../harness/adapters/server.ts';
import { provisioned } from '../support/scopes/assignment-sources.ts';
import { literal } from '../support/scopes/roles.ts';
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

// The operator's action in the middle of a scenario, where a Given above states the set-up form.
When('the operator revokes scope {string} from user {string}', async function (this: SyncWorld, scope: string, user: string) {
  await (await scopes(this)).revokeUserScope(user, scope);
});

Given('a registered shared scope {string}', async function (this: SyncWorld, scope: string) {
  await (await scopes(this)).registerSharedScope(scope);
});

// The default scope of a user is `user:<id>`; revoking it is a grant change like any other.
Given('the default scope of user {string} is revoked', async function (this: SyncWorld, user: string) {
  await (await scopes(this)).revokeUserScope(user, `user:${user}`);
});

// A table of (user, scope) pairs and a function that returns a user's rows;
// both are created by the database owner, who is then the registration actor.
Given('the registered assignment function returns for user {string}:', async function (this: SyncWorld, user: string, table: DataTable) {
  const { exec, scopes } = await provisioned(this);
  const values = table.hashes().map((row) => `(${literal(user)}, ${literal(row.scope ?? '')})`);
  await exec(`CREATE TABLE IF NOT EXISTS public.harness_assigned_scopes (user_id text NOT NULL, scope_id text NOT NULL);
CREATE OR REPLACE FUNCTION public.harness_assigned(p_user_id text) RETURNS SETOF text LANGUAGE sql STABLE
  SET search_path = pg_catalog, synchro
  BEGIN ATOMIC
    SELECT a.scope_id FROM public.harness_assigned_scopes AS a WHERE a.user_id = p_user_id;
  END;
REVOKE ALL ON FUNCTION public.harness_assigned(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.harness_assigned(text) TO synchro_owner;
${values.length > 0 ? `INSERT INTO public.harness_assigned_scopes VALUES ${values.join(', ')};` : ''}`);
  await scopes.registerAssignmentFunction('public.harness_assigned', 100);
});

Given('the operator unregisters shared scope {string}', async function (this: SyncWorld, scope: string) {
  const server = await this.readyServer();
  if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability`);
  await server.scopes.unregisterSharedScope(scope);
});
