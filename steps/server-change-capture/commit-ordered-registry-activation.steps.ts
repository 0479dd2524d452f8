/**
 * SYNC-CAP-008 Commit Ordered Registry Activation. Registry changes are
 * committed as source transactions (alone, or mixed with row writes in one
 * transaction), pending generations are stored without their activation
 * message, and server inspection shows which generation each row event was
 * captured under, the quarantine a bad activation causes, and the membership
 * edges the final generation gives the final rows.
 */

import type { DataTable } from '@cucumber/cucumber';
import { Given, Then, When } from '@cucumber/cucumber';
import { inspectRows } from '../support/capture/inspection.ts';
import {
  activationState,
  eventGenerations,
  fillTemplate,
  generationOf,
  membershipFunctionSql,
  newestGeneration,
  recordGeneration,
  sourceSession,
  sourceSql,
  updateGenerationsBetween,
} from '../support/registry-activation/generations.ts';
import { lastCommitWindow } from '../support/seed-snapshots/source-commits.ts';
import type { SyncWorld } from '../support/world.ts';

const relation = (table: string) => `public.${table}`;

/** Creates the membership function a generation label introduces; returns its qualified name. */
async function membershipFunction(world: SyncWorld, table: string, template: string, label: string): Promise<string> {
  const name = `public.${table}_cap008_${label.replace(/[^A-Za-z0-9_]/g, '_')}`;
  const sql = await sourceSql(world);
  await sql.query(membershipFunctionSql(table, world.model.keyColumn(table).name, template, name));
  activationState(world).templates.set(label, template);
  return name;
}

/** One registry change committed in a transaction of its own; the generation it opened is recorded as `label`. */
async function commitRegistryChange(world: SyncWorld, label: string, statement: string, params: unknown[]): Promise<void> {
  const session = await sourceSession(world);
  try {
    await session.query('BEGIN');
    await session.query(statement, params);
    recordGeneration(world, label, await newestGeneration(session));
    await session.query('COMMIT');
  } finally {
    await session.close();
  }
}

When('the operator commits a registration of table {string} that also syncs column {string} and records its generation as {string}', async function (this: SyncWorld, table: string, column: string, label: string) {
  await commitRegistryChange(this, label, 'SELECT synchro.synchro_reconfigure_table($1)', [relation(table)]);
  const [synced] = await inspectRows<{ n: number }>(this, "SELECT count(*)::int AS n FROM synchro.registry_generations g, jsonb_array_elements(g.snapshot -> 'fields') f WHERE g.generation = $1::int8 AND f ->> 'column_name' = $2", [generationOf(this, label), column]);
  if (synced?.n !== 1) throw new Error(`the registration recorded as "${label}" does not sync column "${column}"`);
});

When('the operator commits a registration of table {string} whose membership puts each row in scope {string} and records its generation as {string}', async function (this: SyncWorld, table: string, template: string, label: string) {
  const fn = await membershipFunction(this, table, template, label);
  await commitRegistryChange(this, label, 'SELECT synchro.registry_set_membership($1, $2)', [relation(table), fn]);
});

const SYNC_COLUMN = /^register a generation "([^"]+)" of table "([^"]+)" that also syncs column "([^"]+)"$/;
const MEMBERSHIP = /^register a generation "([^"]+)" whose membership puts each row in scope "([^"]+)"$/;

/**
 * The steps run in order in ONE source transaction: SQL steps (each writing
 * one row of "tasks") and registry changes, each of which emits its
 * activation message where it stands. Membership functions are created
 * before the transaction begins.
 */
When('the harness commits one source transaction with these steps:', async function (this: SyncWorld, table: DataTable) {
  const steps = table.hashes() as Array<{ step: string; action: string }>;
  const functions = new Map<string, string>();
  for (const { action } of steps) {
    const membership = MEMBERSHIP.exec(action);
    if (membership) functions.set(membership[1] as string, await membershipFunction(this, 'tasks', membership[2] as string, membership[1] as string));
  }
  const session = await sourceSession(this);
  const rowSteps: number[] = [];
  try {
    await session.query('BEGIN');
    const [xact] = await session.query<{ xid: string }>('SELECT pg_current_xact_id()::xid::text AS xid');
    for (const { step, action } of steps) {
      const sync = SYNC_COLUMN.exec(action);
      const membership = MEMBERSHIP.exec(action);
      if (sync) {
        await session.query('SELECT synchro.synchro_reconfigure_table($1)', [relation(sync[2] as string)]);
        recordGeneration(this, sync[1] as string, await newestGeneration(session));
      } else if (membership) {
        await session.query('SELECT synchro.registry_set_membership($1, $2)', [relation('tasks'), functions.get(membership[1] as string)]);
        recordGeneration(this, membership[1] as string, await newestGeneration(session));
      } else {
        await session.query(action);
        rowSteps.push(Number(step));
      }
    }
    await session.query('COMMIT');
    activationState(this).mixed = { xid: (xact as { xid: string }).xid, rowSteps };
  } finally {
    await session.close();
  }
});

Then('server inspection shows the events of that transaction captured under these generations:', async function (this: SyncWorld, table: DataTable) {
  const mixed = activationState(this).mixed;
  if (!mixed) throw new Error('no source transaction with steps was committed in this scenario');
  const events = await eventGenerations(this, mixed.xid);
  // Each SQL step wrote one row, so the k-th row event is the k-th SQL step.
  this.assert.equal(events.length, mixed.rowSteps.length, 'row events captured for the SQL steps of that transaction');
  const byStep = new Map(mixed.rowSteps.map((step, i) => [step, events[i]?.generation ?? null]));
  const expected = (table.hashes() as Array<{ step: string; generation: string }>).map((row) => ({ step: Number(row.step), generation: generationOf(this, row.generation) }));
  this.assert.equal(
    expected.map(({ step }) => ({ step, generation: byStep.get(step) ?? null })),
    expected,
    'registry generation each row event of that transaction was captured under',
  );
});

Then('the membership edges after that transaction are those of generation {string} evaluated on the final projected rows', async function (this: SyncWorld, label: string) {
  const template = activationState(this).templates.get(label);
  if (template === undefined) throw new Error(`generation "${label}" introduced no membership rule in this scenario`);
  const key = this.model.keyColumn('tasks').name;
  const rows = await (await sourceSql(this)).query<Record<string, unknown>>(`SELECT * FROM public.tasks ORDER BY ${key}`);
  const expected = rows.map((row) => ({ key: String(row[key]), scopes: [fillTemplate(template, row)] }));
  const edges = await inspectRows<{ pk_text: string; scopes: string[] }>(
    this,
    `SELECT e.pk_text, array_agg(e.scope_id ORDER BY e.scope_id) AS scopes FROM synchro.membership_edges e
       JOIN synchro.relations r ON r.table_id = e.table_id AND r.active AND r.physical_schema = 'public' AND r.physical_relation = 'tasks'
      GROUP BY e.pk_text ORDER BY e.pk_text`,
  );
  this.assert.equal(edges.map((edge) => ({ key: edge.pk_text, scopes: edge.scopes })), expected, 'membership edges of table tasks');
});

Given('the harness stores a validated pending generation {string} of table {string} that also syncs column {string} without emitting its activation message', async function (this: SyncWorld, label: string, table: string, column: string) {
  const [row] = await (await sourceSql(this)).query<{ g: string }>('SELECT synchro.registry_stage_generation($1, $2, true)::text AS g', [relation(table), [column]]);
  recordGeneration(this, label, (row as { g: string }).g);
});

Given('the harness stores an unvalidated pending generation {string} of table {string}', async function (this: SyncWorld, label: string, table: string) {
  const [row] = await (await sourceSql(this)).query<{ g: string }>("SELECT synchro.registry_stage_generation($1, '{}', false)::text AS g", [relation(table)]);
  recordGeneration(this, label, (row as { g: string }).g);
});

/** The channels come from the server's own listening sessions: each one's last statement is its LISTEN. */
When('the harness sends NOTIFY on every channel the server listens on', async function (this: SyncWorld) {
  const sql = await sourceSql(this);
  const channels = await sql.query<{ channel: string }>(
    "SELECT DISTINCT substring(query FROM '^LISTEN\\s+\"?([^\";\\s]+)') AS channel FROM pg_stat_activity WHERE datname = current_database() AND query ~* '^LISTEN\\s'",
  );
  if (channels.length === 0) throw new Error('no session of the server listens on a channel of the source database');
  for (const { channel } of channels) await sql.query('SELECT pg_notify($1, $2)', [channel, 'registry']);
});

When('the harness commits on the source database an activation message for generation {string}', async function (this: SyncWorld, label: string) {
  await (await sourceSql(this)).query("SELECT pg_logical_emit_message(true, 'synchro_registry', $1)", [generationOf(this, label)]);
});

async function assertUpdateGeneration(world: SyncWorld, label: string): Promise<void> {
  const window = lastCommitWindow(world);
  world.assert.equal(await updateGenerationsBetween(world, window.before, window.after), [generationOf(world, label)], 'registry generation of the update event of that commit');
}

Then('server inspection shows the event of that update captured under generation {string}', async function (this: SyncWorld, label: string) {
  await assertUpdateGeneration(this, label);
});

/** The update was the harness's last source commit: the registration after it is the operator's. */
Then('server inspection shows the event of the update to {string} captured under generation {string}', async function (this: SyncWorld, title: string, label: string) {
  const [row] = await (await sourceSql(this)).query<{ title: string }>("SELECT title FROM public.tasks WHERE id = 'r'");
  this.assert.equal(row?.title, title, 'title of row r, written by the update of the last source commit');
  await assertUpdateGeneration(this, label);
});
