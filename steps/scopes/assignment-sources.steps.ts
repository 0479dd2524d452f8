/**
 * The sources of a user's assigned scope set beyond the core's grant and
 * shared-scope steps: the registered assignment function (given as data or
 * reading an application table), grants made in one operator transaction,
 * login roles in or outside synchro_operator, SQL run as those roles, and the
 * catalog entry of the registration function.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import type { ScopesControl } from '../../harness/adapters/server.ts';
import type { SyncWorld } from '../support/world.ts';
import { quotedList } from './exchanges.ts';
import { ident, literal, loginRole, runAs, SYNCHRO_ROLES, sourceSql } from './roles.ts';
import { scopesState } from './state.ts';

async function provisioned(world: SyncWorld): Promise<{ exec: (sql: string) => Promise<void>; scopes: ScopesControl }> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability`);
  if (!server.scopes) throw new Error(`server adapter "${server.id}" has no scopes capability`);
  return { exec: server.provision.exec, scopes: server.scopes };
}

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

Given('the registered assignment function reads table {string}', async function (this: SyncWorld, relation: string) {
  if (relation !== 'public.team_members') throw new Error(`the harness knows how to build an assignment function over public.team_members only, not ${relation}`);
  const { exec, scopes } = await provisioned(this);
  await exec(`CREATE TABLE public.team_members (user_id text NOT NULL, team_id text NOT NULL, PRIMARY KEY (user_id, team_id));
CREATE FUNCTION public.harness_team_scopes(p_user_id text) RETURNS SETOF text LANGUAGE sql STABLE
  SET search_path = pg_catalog, synchro
  BEGIN ATOMIC
    SELECT 'team:' || m.team_id FROM public.team_members AS m WHERE m.user_id = p_user_id;
  END;
REVOKE ALL ON FUNCTION public.harness_team_scopes(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.harness_team_scopes(text) TO synchro_owner;`);
  await scopes.registerAssignmentFunction('public.harness_team_scopes', 100);
});

// Both grants commit together, so no request can observe one without the other.
Given('user {string} is assigned scopes {string} and {string} in one operator transaction', async function (this: SyncWorld, user: string, first: string, second: string) {
  const { exec } = await provisioned(this);
  await exec(`BEGIN;
SELECT synchro.synchro_grant_user_scope(${literal(user)}, ${literal(first)});
SELECT synchro.synchro_grant_user_scope(${literal(user)}, ${literal(second)});
COMMIT;`);
});

Given(/^login role "([^"]+)" is a member of "([^"]+)" only$/, async function (this: SyncWorld, role: string, group: string) {
  const known = SYNCHRO_ROLES.find((r) => r === group);
  if (!known) throw new Error(`"${group}" is not one of the protocol roles ${SYNCHRO_ROLES.join(', ')}`);
  await loginRole(this, role, known);
});

Given(/^login role "([^"]+)" is a member of no synchro role and may create functions in schema "public"$/, async function (this: SyncWorld, role: string) {
  await loginRole(this, role, undefined);
});

// The role may look names up in the schema (PostgreSQL needs that to create a
// function whose body names the table) but may not read the table itself.
Given(
  /^table "([a-z_]+)\.([a-z_]+)" \(([a-z_]+) text, ([a-z_]+) text\) exists and role "([^"]+)" may use schema "\1" but has no privilege on that table$/,
  async function (this: SyncWorld, schema: string, table: string, first: string, second: string, role: string) {
    const sql = await sourceSql(this);
    await sql.query(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)};
CREATE TABLE ${ident(schema)}.${ident(table)} (${ident(first)} text, ${ident(second)} text);
REVOKE ALL ON ${ident(schema)}.${ident(table)} FROM PUBLIC;
GRANT USAGE ON SCHEMA ${ident(schema)} TO ${ident(role)};`);
  },
);

Given('role {string} has run on the source database:', async function (this: SyncWorld, role: string, script: string) {
  const outcome = await runAs(this, role, script);
  if (!outcome.ok) throw new Error(`setup SQL as role ${role} failed (${outcome.code}): ${outcome.message}`);
});

When('role {string} runs on the source database:', async function (this: SyncWorld, role: string, script: string) {
  scopesState(this).lastSql = await runAs(this, role, script);
});

Given('role {string} owns a valid assignment function {string} that returns {string}', async function (this: SyncWorld, role: string, name: string, scope: string) {
  const [schema, fn] = name.split('.');
  if (!schema || !fn) throw new Error(`"${name}" is not a schema-qualified function name`);
  const qualified = `${ident(schema)}.${ident(fn)}`;
  const outcome = await runAs(
    this,
    role,
    `CREATE FUNCTION ${qualified}(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro
  BEGIN ATOMIC SELECT ${literal(scope)} WHERE p IS NOT NULL; END;
REVOKE ALL ON FUNCTION ${qualified}(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ${qualified}(text) TO synchro_owner;`,
  );
  if (!outcome.ok) throw new Error(`role ${role} could not create ${name} (${outcome.code}): ${outcome.message}`);
});

function lastSql(world: SyncWorld) {
  const outcome = scopesState(world).lastSql;
  if (!outcome) throw new Error('no SQL was run as a role in this scenario');
  return outcome;
}

// A syntax error means the scenario's SQL is broken, not that the server refused it.
Then('the SQL statement fails', function (this: SyncWorld) {
  const outcome = lastSql(this);
  this.assert.equal(outcome.ok, false, 'the SQL statement succeeded');
  this.assert.notEqual(outcome.ok ? undefined : outcome.code, '42601', `the SQL statement is malformed: ${outcome.ok ? '' : outcome.message}`);
});

Then('the SQL statement fails with SQLSTATE {string}', function (this: SyncWorld, code: string) {
  const outcome = lastSql(this);
  this.assert.equal(outcome.ok ? 'succeeded' : outcome.code, code, `SQL outcome: ${outcome.ok ? 'success' : outcome.message}`);
});

Then('the SQL statement succeeds', function (this: SyncWorld) {
  const outcome = lastSql(this);
  this.assert.ok(outcome.ok, `the SQL statement failed: ${outcome.ok ? '' : `${outcome.code} ${outcome.message}`}`);
});

Then('the SQL statement returns one row with {string} true', function (this: SyncWorld, column: string) {
  const outcome = lastSql(this);
  if (!outcome.ok) throw new Error(`the SQL statement failed (${outcome.code}): ${outcome.message}`);
  this.assert.equal(outcome.rows, [{ [column]: true }], 'rows returned');
});

When('the harness reads the catalog entry of {string}', async function (this: SyncWorld, name: string) {
  const [schema, fn] = name.split('.');
  const sql = await sourceSql(this);
  scopesState(this).catalogRows = await sql.query(
    `SELECT pg_catalog.pg_get_function_identity_arguments(p.oid) AS identity, pg_catalog.format_type(p.prorettype, NULL) AS result,
            p.proretset AS set_returning, pg_catalog.pg_get_expr(p.proargdefaults, 0) AS defaults, p.pronargdefaults AS default_count,
            (SELECT string_agg(pg_catalog.format_type(t, NULL), ', ' ORDER BY k) FROM unnest(p.proargtypes) WITH ORDINALITY AS a(t, k)) AS argument_types
       FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1 AND p.proname = $2`,
    [schema, fn],
  );
});

function catalogRow(world: SyncWorld): Record<string, unknown> {
  const rows = scopesState(world).catalogRows;
  if (!rows) throw new Error('the catalog entry was not read in this scenario');
  if (rows.length !== 1) throw new Error(`expected one catalog row, found ${rows.length}: ${JSON.stringify(rows)}`);
  return rows[0] as Record<string, unknown>;
}

Then('it has exactly one overload, with argument types {string}', function (this: SyncWorld, types: string) {
  const rows = scopesState(this).catalogRows ?? [];
  this.assert.equal(
    rows.map((r) => r.argument_types),
    [types],
    `overloads: ${JSON.stringify(rows)}`,
  );
});

Then('its result type is {string}', function (this: SyncWorld, type: string) {
  const row = catalogRow(this);
  this.assert.equal({ result: row.result, set_returning: row.set_returning }, { result: type, set_returning: false }, `catalog row ${JSON.stringify(row)}`);
});

Then('the default of its second argument is {int}', function (this: SyncWorld, bound: number) {
  const row = catalogRow(this);
  // With one default it belongs to the last argument, which is the second of two.
  this.assert.equal({ count: row.default_count, defaults: row.defaults }, { count: 1, defaults: String(bound) }, `catalog row ${JSON.stringify(row)}`);
});

Then(/^the error message contains none of (.+)$/, function (this: SyncWorld, list: string) {
  // The whole error body is searched, so a detail member cannot leak what the message hides.
  const reply = this.lastReply();
  const present = quotedList(list).filter((word) => reply.text.includes(word));
  this.assert.equal(present, [], `the error body ${reply.text} discloses ${present.join(', ')}`);
});
