/**
 * SYNC-PROTO-008 Registered Scope Assignment Function
 * (features/protocol/registered-scope-assignment-function.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { member } from '../support/reply.ts';
import { byteSorted, type Loose, quotedList } from '../support/scopes/exchanges.ts';
import { ident, literal, loginRole, runAs, sourceSql, SYNCHRO_ROLES } from '../support/scopes/roles.ts';
import { addedIds } from '../support/scopes/scope-sets.ts';
import { scopesState } from '../support/scopes/state.ts';
import type { SyncWorld } from '../support/world.ts';

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

Then(/^the scopes added in the response are exactly ((?:"[^"]+"(?:, | and )?)+)$/, function (this: SyncWorld, list: string) {
  const reply = this.lastReply();
  this.assert.equal(addedIds(this, reply), byteSorted(quotedList(list)), `scopes added by ${reply.text.slice(0, 500)}`);
});

Then(/^when client "([^"]+)" of user "([^"]+)" connects as a fresh client, the scopes added are exactly ((?:"[^"]+"(?:, | and )?)+)$/, async function (this: SyncWorld, name: string, user: string, list: string) {
  await this.readyServer();
  const reply = await this.newWire(name, user).connect();
  this.assert.equal(addedIds(this, reply), byteSorted(quotedList(list)), `scopes added by ${reply.text.slice(0, 500)}`);
});

Then(/^the response member "([^"]+)" holds (\d+) scopes: "([^"]+)" and "([a-z_]+):(\d+)" through "\4:(\d+)", each once$/, function (this: SyncWorld, pointer: string, count: string, single: string, prefix: string, from: string, to: string) {
  const reply = this.lastReply();
  const ids = ((member(reply.json, pointer) ?? []) as Loose[]).map((entry) => entry.id);
  const expected = [single];
  for (let n = Number(from); n <= Number(to); n += 1) expected.push(`${prefix}:${n}`);
  this.assert.equal(ids.length, Number(count), `number of scopes in ${pointer}`);
  this.assert.equal(ids, byteSorted(expected), `scopes in ${pointer}`);
});

Then(/^the response member "([^"]+)" has keys ((?:"[^"]+"(?:, | and )?)+)$/, function (this: SyncWorld, pointer: string, list: string) {
  const reply = this.lastReply();
  const value = member(reply.json, pointer);
  this.assert.equal(byteSorted(Object.keys((value ?? {}) as object)), byteSorted(quotedList(list)), `keys of ${pointer} in ${reply.text.slice(0, 500)}`);
});
