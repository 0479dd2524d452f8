/**
 * SYNC-SCOPE-002 Deterministic Scope Function Contract
 * (features/scope-and-membership/deterministic-scope-function-contract.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { member } from '../support/reply.ts';
import { currentManifest } from '../support/schema-and-versions/manifests.ts';
import { byteSorted } from '../support/scopes/exchanges.ts';
import { activeGeneration, assertRefused, attemptAsOwner, contractState, createAssignmentVariant, createConformingAssignment, describe, functionExists, impactFunctionSql, inspection, OPERATOR, outcome, OUTSIDER, prepareOperator, recorded, relationOf, requireAssignmentFunction, setupAs } from '../support/scopes/function-contract.ts';
import { literal, loginRole, runAs, sourceSql, type SqlOutcome } from '../support/scopes/roles.ts';
import type { SyncWorld } from '../support/world.ts';

Then('server inspection shows an active registry generation newer than {string}', async function (this: SyncWorld, label: string) {
  const before = BigInt(recorded(contractState(this).generations, label, 'registry generation'));
  const now = BigInt(await activeGeneration(this));
  this.assert.ok(now > before, `active registry generation ${now} is not newer than "${label}" (${before})`);
});

Then('the registration fails', function (this: SyncWorld) {
  assertRefused(this);
});

// Dependency declarations. The dependency relation has the key column and an owner_id the impact function reads.
Given(
  /^a table "([^"]+)" with key column "([^"]+)" that is (not registered at all|registered as a capture-only dependency)$/,
  async function (this: SyncWorld, relation: string, key: string, registration: string) {
    const provision = (await this.readyServer()).provision;
    if (!provision) throw new Error('the server adapter has no provision capability');
    await provision.exec(`CREATE TABLE ${relation} (${key} text PRIMARY KEY, owner_id text)`);
    if (registration === 'not registered at all') return;
    const result = await attemptAsOwner(this, 'SELECT synchro.synchro_register_capture_dependency($1, $2)', [relation, key]);
    if (!result.ok) throw new Error(`registering ${relation} as a capture-only dependency failed: ${describe(result)}`);
  },
);

// A capture-only dependency has no table ID, so no manifest table may stand for it.
Then('the published schema manifest has no table for relation {string}', async function (this: SyncWorld, relation: string) {
  const name = relation.split('.').at(-1);
  const tables = (await currentManifest(this)).tables.filter((t) => t.name === name || t.name === relation);
  this.assert.equal(tables.map((t) => t.table_id), [], `manifest tables standing for ${relation}`);
});

async function tasksTableId(world: SyncWorld): Promise<string> {
  const table = (await currentManifest(world)).tables.find((t) => t.name === 'tasks');
  if (!table) throw new Error('the published manifest has no table "tasks"');
  return table.table_id;
}

async function declareDependency(world: SyncWorld, table: string, dependency: string, impact: string | null, bound: number, textArguments = false): Promise<void> {
  if (impact !== null && !(await functionExists(world, impact))) {
    await prepareOperator(world);
    await setupAs(world, OPERATOR, impactFunctionSql(impact, await tasksTableId(world), textArguments));
  }
  contractState(world).outcome = await attemptAsOwner(world, 'SELECT synchro.synchro_register_membership_dependency($1, $2, $3, $4)', [
    relationOf(table),
    dependency,
    impact,
    bound,
  ]);
}

When('the operator declares a dependency of table {string} on {string} with impact function {string} and max_impact_rows {int}', async function (this: SyncWorld, table: string, dependency: string, impact: string, bound: number) {
  await declareDependency(this, table, dependency, impact, bound);
});

When(
  'the operator declares a dependency of table {string} on {string} with impact function {string} taking \\(text, text) and max_impact_rows {int}',
  async function (this: SyncWorld, table: string, dependency: string, impact: string, bound: number) {
    await declareDependency(this, table, dependency, impact, bound, true);
  },
);

When('the operator declares a dependency of table {string} on {string} with no impact function and max_impact_rows {int}', async function (this: SyncWorld, table: string, dependency: string, bound: number) {
  await declareDependency(this, table, dependency, null, bound);
});

When(
  'the operator registers in one call table {string} with a valid membership function and table {string} with membership function {string}',
  async function (this: SyncWorld, relation: string, table: string, fn: string) {
    if (fn !== 'app.f_live') throw new Error(`the harness knows how to build app.f_live only, not ${fn}`);
    const provision = (await this.readyServer()).provision;
    if (!provision) throw new Error('the server adapter has no provision capability');
    await provision.exec(`CREATE TABLE ${relation} (id text PRIMARY KEY, owner_id text NOT NULL);
SELECT synchro.synchro_prepare_projection_view(${literal(relation)});`);
    const [, name] = relation.split('.');
    await prepareOperator(this);
    await setupAs(
      this,
      OPERATOR,
      `CREATE FUNCTION app.harness_note_scopes(p_key text) RETURNS SETOF text LANGUAGE sql STABLE
  BEGIN ATOMIC SELECT 'user:' || r.owner_id FROM synchro_projection.${name} AS r WHERE r.id = p_key; END;
CREATE FUNCTION app.f_live(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE
  BEGIN ATOMIC SELECT 'user:' || owner_id FROM public.tasks WHERE id = p_row_key; END;`,
    );
    const registerNotes = `SELECT synchro.synchro_register_table(relation => ${literal(relation)}, membership_fn => 'app.harness_note_scopes');`;
    // The first registration on its own must go through (then be rolled back), so a refusal of the call comes late.
    const sql = await sourceSql(this);
    await sql.query('BEGIN');
    try {
      await sql.query(registerNotes);
    } catch (error) {
      throw new Error(`registering ${relation} with a valid membership function fails on its own: ${(error as Error).message}`);
    } finally {
      await sql.query('ROLLBACK');
    }
    // Statements of one simple query run in one implicit transaction: the refusal undoes the first registration.
    contractState(this).outcome = await attemptAsOwner(this, `${registerNotes}\nSELECT synchro.synchro_reconfigure_membership(${literal(relationOf(table))}, ${literal(fn)}, 10);`);
  },
);

Then('server inspection shows no registry entry for {string}', async function (this: SyncWorld, relation: string) {
  const rows = await (await inspection(this)).query('SELECT relation_id, table_id, active FROM synchro.relations WHERE physical_relation_oid = to_regclass($1)', [relation]);
  this.assert.equal(rows, [], `registry entries of ${relation}`);
});

Then('a connect with the {string} reference answers schema action {string}', async function (this: SyncWorld, label: string, action: string) {
  const reference = recorded(contractState(this).manifests, label, 'manifest reference');
  const reply = await this.newWire('manifest-probe', 'manifest_probe_user').connect({ schema: reference });
  this.assert.equal({ status: reply.status, action: member(reply.json, '/schema/action') }, { status: 200, action }, `connect answered ${reply.text.slice(0, 500)}`);
});

// Assignment functions, written and registered by the operator login.
Given(/^the source database has a variant of "([^"]+)" that (.+)$/, async function (this: SyncWorld, name: string, breaks: string) {
  requireAssignmentFunction(name);
  await createAssignmentVariant(this, breaks);
});

Given('{string} returns {string} for user {string}', async function (this: SyncWorld, name: string, list: string, user: string) {
  requireAssignmentFunction(name);
  const projects = list.split(', ').map((scope) => {
    if (!scope.startsWith('project:')) throw new Error(`${name} returns project scopes only, not ${scope}`);
    return [user, scope.slice('project:'.length)] as [string, string];
  });
  await createConformingAssignment(this, projects);
});

/** Registers the assignment function as `role`; the conforming function is created first when the scenario made none. */
async function registerAssignment(world: SyncWorld, role: string, name: string, bound: string): Promise<SqlOutcome> {
  requireAssignmentFunction(name);
  if (!(await functionExists(world, name))) await createConformingAssignment(world);
  return runAs(world, role, `SELECT synchro.synchro_register_assignment_function(${literal(name)}, ${bound})`);
}

const boundText = (bound: string) => (bound === 'NULL' ? 'NULL' : String(Number.parseInt(bound, 10)));

When(/^the operator registers assignment function "([^"]+)" with max_scopes (-?\d+|NULL)$/, async function (this: SyncWorld, name: string, bound: string) {
  contractState(this).outcome = await registerAssignment(this, OPERATOR, name, boundText(bound));
});

Given(/^the operator has registered assignment function "([^"]+)" with max_scopes (-?\d+|NULL)$/, async function (this: SyncWorld, name: string, bound: string) {
  const result = await registerAssignment(this, OPERATOR, name, boundText(bound));
  if (!result.ok) throw new Error(`registering ${name} failed: ${describe(result)}`);
});

When('a login that is not a member of {string} registers assignment function {string} with max_scopes {int}', async function (this: SyncWorld, group: string, name: string, bound: number) {
  if (group !== 'synchro_operator') throw new Error(`the harness checks registration by a login outside synchro_operator only, not ${group}`);
  await prepareOperator(this);
  await loginRole(this, OUTSIDER, undefined);
  contractState(this).outcome = await registerAssignment(this, OUTSIDER, name, String(bound));
});

Then('the call fails with SQLSTATE {string}', function (this: SyncWorld, code: string) {
  const result = outcome(this);
  this.assert.equal(result.ok ? 'success' : result.code, code, describe(result));
});

Then('the call fails with a permission error', function (this: SyncWorld) {
  const result = outcome(this);
  this.assert.equal(result.ok ? 'success' : result.code, '42501', describe(result));
});

async function assignmentRegistration(world: SyncWorld): Promise<string> {
  const [row] = await (await inspection(world)).query<{ r: string }>("SELECT coalesce(jsonb_agg(to_jsonb(a)), '[]')::text AS r FROM synchro.assignment_function a");
  return row?.r ?? '[]';
}

Then('no assignment function is registered', async function (this: SyncWorld) {
  this.assert.equal(await assignmentRegistration(this), '[]', 'the assignment function registration');
});

Given('the harness records the assignment registration as {string}', async function (this: SyncWorld, label: string) {
  contractState(this).registrations.set(label, await assignmentRegistration(this));
});

Then('server inspection shows the assignment registration equal to {string}', async function (this: SyncWorld, label: string) {
  this.assert.equal(await assignmentRegistration(this), recorded(contractState(this).registrations, label, 'assignment registration'), 'the assignment function registration');
});

// Every per-user row in schema synchro, with the transaction that wrote it: an equal picture means nothing was written for the user.
async function userAssignmentState(world: SyncWorld, user: string): Promise<string> {
  const inspect = await inspection(world);
  const tables = await inspect.query<{ name: string }>(
    `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.columns
      WHERE table_schema = 'synchro' AND column_name = 'user_id' ORDER BY 1`,
  );
  const picture: Record<string, string> = {};
  for (const { name } of tables) {
    const [row] = await inspect.query<{ r: string }>(
      `SELECT coalesce(jsonb_agg(to_jsonb(t) || jsonb_build_object('written_by_transaction', t.xmin::text) ORDER BY to_jsonb(t)::text), '[]')::text AS r FROM ${name} t WHERE t.user_id = $1`,
      [user],
    );
    picture[name] = row?.r ?? '[]';
  }
  return JSON.stringify(picture);
}

Given('the harness records the assignment state of user {string} as {string}', async function (this: SyncWorld, user: string, label: string) {
  contractState(this).userStates.set(label, `${user}\n${await userAssignmentState(this, user)}`);
});

Then('the response status is {int} with error code {string} and the assignment state equals {string}', async function (this: SyncWorld, status: number, code: string, label: string) {
  const reply = this.lastReply();
  this.assert.equal({ status: reply.status, code: reply.json?.error?.code }, { status, code }, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const [user = '', before] = recorded(contractState(this).userStates, label, 'assignment state').split('\n');
  this.assert.equal(await userAssignmentState(this, user), before, `assignment state of user "${user}"`);
});

Then('the connect response assigns scopes {string}', function (this: SyncWorld, list: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const added = (member(reply.json, '/scopes/add') ?? []) as { id: string }[];
  this.assert.equal(
    added.map((entry) => entry.id),
    byteSorted(list.split(', ')),
    `scopes added by ${reply.text.slice(0, 500)}`,
  );
});
