/**
 * SYNC-OPS-001 Database Default Deny: the catalog read through server
 * inspection, and every privilege also tried for real as a login of the role
 * (steps/support/database-roles/as-role.ts).
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { inspectRows } from '../support/capture/inspection.ts';
import { DIRECT_ACCESS_PROBE, databaseRole, lastRoleOutcome, loginNamed, MEMBERSHIPS_SQL, nameLogin, rememberOutcome, runAsRole } from '../support/database-roles/as-role.ts';
import { readReply } from '../support/reply.ts';
import { ident, sourceSql } from '../support/scopes/roles.ts';
import type { SyncWorld } from '../support/world.ts';

/** The privilege function and catalog of each kind of object the feature names. */
const KINDS: Record<string, { catalog: string; namespace: string; check: string; name: string; filter?: string }> = {
  schema: { catalog: 'pg_namespace', namespace: 'oid', check: 'has_schema_privilege', name: 'nspname' },
  function: { catalog: 'pg_proc', namespace: 'pronamespace', check: 'has_function_privilege', name: 'oid::regprocedure::text' },
  table: { catalog: 'pg_class', namespace: 'relnamespace', check: 'has_table_privilege', name: 'oid::regclass::text', filter: "relkind IN ('r', 'p', 'v', 'm', 'f')" },
  sequence: { catalog: 'pg_class', namespace: 'relnamespace', check: 'has_sequence_privilege', name: 'oid::regclass::text', filter: "relkind = 'S'" },
  // An array type's privileges are its element type's; asking for them is asking twice.
  type: { catalog: 'pg_type', namespace: 'typnamespace', check: 'has_type_privilege', name: 'oid::regtype::text', filter: "typcategory <> 'A'" },
};

function kindOf(kind: string) {
  const known = KINDS[kind];
  if (known === undefined) throw new Error(`unknown object kind "${kind}" (one of ${Object.keys(KINDS).join(', ')})`);
  return known;
}

const counted = new WeakMap<SyncWorld, { objects: string[]; total: number; what: string }>();

When('the harness counts the {word} objects in schema {string} on which PUBLIC has {string}', async function (this: SyncWorld, kind: string, schema: string, privilege: string) {
  const k = kindOf(kind);
  const rows = await inspectRows<{ name: string; public: boolean }>(
    this,
    `SELECT ${k.name} AS name, ${k.check}('public', oid, $2) AS public FROM ${k.catalog} WHERE ${k.namespace} = $1::regnamespace${k.filter ? ` AND ${k.filter}` : ''}`,
    [schema, privilege],
  );
  if (rows.length === 0) throw new Error(`server inspection found no ${kind} in schema "${schema}": nothing to count`);
  counted.set(this, { objects: rows.filter((r) => r.public).map((r) => r.name), total: rows.length, what: `${kind} objects of schema "${schema}" on which PUBLIC has ${privilege}` });
});

Then('the count is {int}', function (this: SyncWorld, expected: number) {
  const count = counted.get(this);
  if (count === undefined) throw new Error('nothing was counted in this scenario');
  this.assert.equal(count.objects.length, expected, `${count.what} (of ${count.total}): ${count.objects.join(', ')}`);
});

Then('server inspection shows schema {string} and every table, sequence, function and type in it owned by {string}', async function (this: SyncWorld, schema: string, owner: string) {
  const rows = await inspectRows<{ object: string; owner: string }>(
    this,
    `SELECT 'schema ' || nspname AS object, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = $1
     UNION ALL SELECT 'relation ' || oid::regclass::text, pg_get_userbyid(relowner) FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')
     UNION ALL SELECT 'function ' || oid::regprocedure::text, pg_get_userbyid(proowner) FROM pg_proc WHERE pronamespace = $1::regnamespace
     UNION ALL SELECT 'type ' || oid::regtype::text, pg_get_userbyid(typowner) FROM pg_type WHERE typnamespace = $1::regnamespace`,
    [schema],
  );
  this.assert.ok(rows.some((r) => r.object === `schema ${schema}`), `server inspection shows no schema "${schema}"`);
  this.assert.equal(
    rows.filter((r) => r.owner !== owner).map((r) => `${r.object} (owner ${r.owner})`),
    [],
    `objects of schema "${schema}" (${rows.length}) not owned by "${owner}"`,
  );
});

Then('server inspection shows every function in schema {string} configured with search_path {string}', async function (this: SyncWorld, schema: string, path: string) {
  const rows = await inspectRows<{ fn: string; config: string[] | null }>(this, 'SELECT oid::regprocedure::text AS fn, proconfig AS config FROM pg_proc WHERE pronamespace = $1::regnamespace', [schema]);
  if (rows.length === 0) throw new Error(`server inspection found no function in schema "${schema}"`);
  // pg_temp named last is stricter than leaving it out (then it is searched first), so it is allowed.
  const allowed = [`search_path=${path}`, `search_path=${path}, pg_temp`];
  this.assert.equal(
    rows.filter((r) => !(r.config ?? []).some((setting) => allowed.includes(setting))).map((r) => `${r.fn} ${JSON.stringify(r.config)}`),
    [],
    `functions of schema "${schema}" (${rows.length}) without search_path "${path}"`,
  );
});

/** A new object of each kind, created by the scenario as the schema's owner. */
const CREATED: Record<string, { sql: string; name: string }> = {
  table: { sql: 'CREATE TABLE synchro.conformance_new_table (id text)', name: 'synchro.conformance_new_table' },
  sequence: { sql: 'CREATE SEQUENCE synchro.conformance_new_sequence', name: 'synchro.conformance_new_sequence' },
  function: { sql: "CREATE FUNCTION synchro.conformance_new_function() RETURNS integer LANGUAGE sql AS 'SELECT 1'", name: 'synchro.conformance_new_function()' },
  type: { sql: 'CREATE TYPE synchro.conformance_new_type AS (id text)', name: 'synchro.conformance_new_type' },
};

When('the operator creates a new {word} in schema {string} as {string}', async function (this: SyncWorld, kind: string, schema: string, owner: string) {
  const created = CREATED[kind];
  if (created === undefined || schema !== 'synchro') throw new Error(`no new ${kind} in schema "${schema}" is defined by this step`);
  const sql = await sourceSql(this);
  await sql.query(`SET ROLE ${ident(owner)}; ${created.sql}; RESET ROLE`);
});

/** Every privilege of each kind, as the privilege functions name them. */
const PRIVILEGES: Record<string, string[]> = {
  table: ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'],
  sequence: ['USAGE', 'SELECT', 'UPDATE'],
  function: ['EXECUTE'],
  type: ['USAGE'],
};

Then('PUBLIC has no privilege on the new {word}', async function (this: SyncWorld, kind: string) {
  const created = CREATED[kind];
  const privileges = PRIVILEGES[kind];
  if (created === undefined || privileges === undefined) throw new Error(`no new ${kind} is defined by this feature`);
  const check = kindOf(kind).check;
  const held: string[] = [];
  for (const privilege of privileges) {
    const [row] = await inspectRows<{ held: boolean }>(this, `SELECT ${check}('public', $1, $2) AS held`, [created.name, privilege]);
    if (row?.held !== false) held.push(privilege);
  }
  this.assert.equal(held, [], `privileges PUBLIC holds on the new ${kind} ${created.name}`);
});

Then(/^server inspection shows has_function_privilege for role "([^"]+)" on "([^"]+)" is (true|false)$/, async function (this: SyncWorld, role: string, fn: string, allowed: string) {
  const [row] = await inspectRows<{ exists: boolean; held: boolean | null }>(
    this,
    'SELECT to_regprocedure($2) IS NOT NULL AS exists, CASE WHEN to_regprocedure($2) IS NULL THEN NULL ELSE has_function_privilege($1, to_regprocedure($2), \'EXECUTE\') END AS held',
    [role, fn],
  );
  this.assert.ok(row?.exists === true, `server inspection shows no function ${fn}`);
  this.assert.equal(row.held, allowed === 'true', `has_function_privilege('${role}', '${fn}', 'EXECUTE')`);
});

/** A call of `fn` (a regprocedure text) with a typed NULL per argument: a refusal comes before the body runs. */
function callOf(fn: string): string {
  const match = /^([\w.]+)\((.*)\)$/.exec(fn);
  if (!match) throw new Error(`"${fn}" is not a function signature such as synchro.f(text,integer)`);
  const args = (match[2] ?? '').split(',').map((a) => a.trim()).filter((a) => a !== '');
  return `SELECT ${match[1]}(${args.map((a) => `NULL::${a}`).join(', ')})::text AS result`;
}

Then(/^a login of role "([^"]+)" (may|may not) call "([^"]+)"$/, async function (this: SyncWorld, role: string, verdict: string, fn: string) {
  const outcome = await runAsRole(this, databaseRole(role), callOf(fn));
  if (outcome === 'skipped') return 'skipped';
  if (verdict === 'may') this.assert.ok(outcome.ok, `login "${outcome.login}" of "${role}" calling ${fn} was refused: ${outcome.ok ? '' : `${outcome.sqlstate} ${outcome.message}`}`);
  else this.assert.equal(outcome.ok ? 'succeeded' : outcome.sqlstate, '42501', `login "${outcome.login}" of "${role}" calling ${fn}${outcome.ok ? '' : `: ${outcome.message}`}`);
  return undefined;
});

When(/^the operator (revokes|grants) EXECUTE on "([^"]+)" (?:from|to) "([^"]+)"(?: again)?$/, async function (this: SyncWorld, action: string, fn: string, role: string) {
  const sql = await sourceSql(this);
  const statement = action === 'revokes' ? `REVOKE EXECUTE ON FUNCTION ${fn} FROM ${ident(role)}` : `GRANT EXECUTE ON FUNCTION ${fn} TO ${ident(role)}`;
  await sql.query(statement);
});

Then('the readiness response is back to 200 with body exactly:', async function (this: SyncWorld, body: string) {
  const proxy = await this.proxy();
  const reply = await readReply('ready', await fetch(`${proxy.url}/ready`, { signal: AbortSignal.timeout(this.deadlineMs) }), '');
  const server = await this.readyServer();
  // The detailed checks say why, when the answer is not the expected one.
  const detail = reply.status === 200 || server.inspect === undefined ? '' : `; health detail ${JSON.stringify(await server.inspect.healthDetail().catch((e: Error) => e.message))}`;
  this.assert.equal({ status: reply.status, body: reply.text }, { status: 200, body }, `GET /ready${detail}`);
});

const directAccess = new WeakMap<SyncWorld, { role: string; catalog: string[] }>();

When(
  'the harness checks every table and sequence in schema {string} for SELECT, INSERT, UPDATE, DELETE and USAGE held by role {string}',
  async function (this: SyncWorld, schema: string, role: string) {
    const rows = await inspectRows<{ held: string }>(
      this,
      `SELECT c.oid::regclass::text || ' ' || p AS held FROM pg_class c, unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) p
        WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND has_table_privilege($2, c.oid, p)
       UNION ALL
       SELECT c.oid::regclass::text || ' ' || p FROM pg_class c, unnest(ARRAY['USAGE', 'SELECT', 'UPDATE']) p
        WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'S' AND has_sequence_privilege($2, c.oid, p)`,
      [schema, role],
    );
    directAccess.set(this, { role, catalog: rows.map((r) => r.held) });
  },
);

Then('no such privilege is held', function (this: SyncWorld) {
  const checked = directAccess.get(this);
  if (checked === undefined) throw new Error('no direct access was checked in this scenario');
  this.assert.equal(checked.catalog, [], `table and sequence privileges the catalog shows for role "${checked.role}"`);
});

Then('a login of role {string} is refused every one of those reads and writes', async function (this: SyncWorld, role: string) {
  const outcome = await runAsRole(this, databaseRole(role), DIRECT_ACCESS_PROBE);
  if (outcome === 'skipped') return 'skipped';
  if (!outcome.ok) throw new Error(`the direct-access probe could not run as "${outcome.login}": ${outcome.sqlstate} ${outcome.message}`);
  const [row] = outcome.rows as { held: string; objects: string }[];
  this.assert.ok(Number(row?.objects) > 0, `login "${outcome.login}" of "${role}" found no table or sequence in schema "synchro" to try`);
  this.assert.equal(row?.held === '' ? [] : row?.held.split('\n'), [], `reads and writes login "${outcome.login}" of "${role}" was not refused (of ${row?.objects} tables and sequences)`);
  return undefined;
});

Given('a login role {string} with no membership in any Synchro role', async function (this: SyncWorld, alias: string) {
  return provenLogin(this, alias, 'public', []);
});

Given('a login role {string} that is a member of {string} only', async function (this: SyncWorld, alias: string, group: string) {
  return provenLogin(this, alias, databaseRole(group), [group]);
});

/** Binds `alias` to the adapter's login of `role` after checking, as that login, that its Synchro memberships are exactly `groups`. */
async function provenLogin(world: SyncWorld, alias: string, role: 'public' | ReturnType<typeof databaseRole>, groups: string[]): Promise<'skipped' | undefined> {
  const outcome = await runAsRole(world, role, MEMBERSHIPS_SQL);
  if (outcome === 'skipped') return 'skipped';
  if (!outcome.ok) throw new Error(`login of role "${role}" could not read its memberships: ${outcome.sqlstate} ${outcome.message}`);
  const [row] = outcome.rows as { groups: string[] }[];
  if (JSON.stringify(row?.groups) !== JSON.stringify(groups)) throw new Error(`the adapter's login "${outcome.login}" for "${role}" belongs to Synchro roles ${JSON.stringify(row?.groups)}, not ${JSON.stringify(groups)}`);
  nameLogin(world, alias, role);
  return undefined;
}

When(/^"([^"]+)" runs:$/, async function (this: SyncWorld, alias: string, sql: string) {
  const outcome = await runAsRole(this, loginNamed(this, alias), sql);
  if (outcome === 'skipped') return 'skipped';
  rememberOutcome(this, outcome);
  return undefined;
});

Then('the statement is refused with SQLSTATE {string}', function (this: SyncWorld, sqlstate: string) {
  const outcome = lastRoleOutcome(this);
  this.assert.equal(outcome.ok ? 'succeeded' : outcome.sqlstate, sqlstate, `the statement run as login "${outcome.login}"${outcome.ok ? '' : `: ${outcome.message}`}`);
});
