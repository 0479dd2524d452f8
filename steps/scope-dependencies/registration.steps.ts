/**
 * Declaring membership that depends on other rows. A capture-only relation
 * is created and registered at once. A dependent table is taken out of the
 * scenario model's installation as soon as its placement is declared (the
 * model would register it without a membership function before the next
 * step) and installed in the step that declares its impact, in one
 * transaction: table, projection, membership function, registration (which
 * returns the table ID), impact function and dependency. It has
 * to be one transaction because a membership function reading another
 * relation's projection is legal only with its dependency declared, and the
 * impact function needs the table ID the registration gives.
 */
import { Given } from '@cucumber/cucumber';
import type { SourceSqlControl } from '../../harness/adapters/server.ts';
import { sqlType, type TableSpec } from '../support/model.ts';
import type { SyncWorld } from '../support/world.ts';
import { type Impact, ident, impactFunctionName, impactSql, literal, membershipFunctionName, membershipSql, relationParts, templateColumns } from './rules.ts';
import { dependencyState, placementOf } from './state.ts';

/** The scenario's SQL connection, without installing the declared tables (a dependent table installs itself). */
export async function rawSql(world: SyncWorld): Promise<SourceSqlControl> {
  const server = await world.server();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability`);
  return server.sourceSql;
}

/** Runs `work` in one transaction of the scenario connection; a failure rolls it all back. */
async function inOneTransaction(sql: SourceSqlControl, work: () => Promise<void>): Promise<void> {
  await sql.query('BEGIN');
  try {
    await work();
    await sql.query('COMMIT');
  } catch (error) {
    await sql.query('ROLLBACK');
    throw error;
  }
}

Given(
  'a capture-only dependency registration for table {string} with key column {string} and captured fields {string}',
  async function (this: SyncWorld, relation: string, key: string, fields: string) {
    const { schema, table } = relationParts(relation);
    const captured = fields.split(',').map((f) => f.trim()).filter((f) => f !== '');
    const sql = await rawSql(this);
    const columns = [`${ident(key)} text PRIMARY KEY`, ...captured.map((f) => `${ident(f)} text`)];
    await sql.query(`CREATE TABLE ${ident(schema)}.${ident(table)} (${columns.join(', ')})`);
    await sql.query('SELECT synchro.synchro_register_capture_dependency($1, $2)', [relation, key]);
    dependencyState(this).captureOnly.set(relation, { relation, key, fields: captured });
  },
);

/** Marks `target` as installed for the scenario model: its dependency declaration installs it. */
function claim(world: SyncWorld, target: string): void {
  const table = world.model.table(target);
  if (table.installed) throw new Error(`table "${target}" is already on the server; declare where its rows belong before anything reaches the server`);
  table.installed = true;
  dependencyState(world).claimed.add(target);
}

Given(
  'table {string} places each row in the scope {string} of the {string} row whose {string} equals its {string}',
  function (this: SyncWorld, target: string, template: string, relation: string, key: string, reference: string) {
    const state = dependencyState(this);
    const parent = state.captureOnly.get(relation);
    if (!parent) throw new Error(`"${relation}" is not a capture-only dependency of this scenario`);
    const unknown = templateColumns(template).filter((c) => c !== parent.key && !parent.fields.includes(c));
    if (unknown.length > 0) throw new Error(`scope template ${template} names fields ${unknown.join(', ')} that ${relation} does not capture`);
    claim(this, target);
    state.placements.set(target, { kind: 'parent', template, relation, key, reference });
  },
);

Given('table {string} places each row in scope {string} of its root task, found through {string}', function (this: SyncWorld, target: string, template: string, parent: string) {
  claim(this, target);
  dependencyState(this).placements.set(target, { kind: 'root', template, parent });
});

/** Creates and registers `target` with its placement and its one dependency, all in one transaction. */
async function installDependent(world: SyncWorld, target: string, dependency: string, impact: Impact): Promise<void> {
  const table: TableSpec = world.model.table(target);
  const claimed = dependencyState(world).claimed;
  if (!claimed.has(target)) throw new Error(`table "${target}" is already on the server; its dependency is declared together with its registration`);
  const key = world.model.keyColumn(target);
  const placement = placementOf(world, target);
  const sql = await rawSql(world);
  const relation = `public.${target}`;
  let tableId = '';
  await inOneTransaction(sql, async () => {
    const columns = table.columns.map((c) => `${ident(c.name)} ${sqlType(c.type)}${c.key ? ' PRIMARY KEY' : c.nullable ? '' : ' NOT NULL'}`);
    await sql.query(`CREATE TABLE public.${ident(target)} (${columns.join(', ')})`);
    await sql.query('SELECT synchro.synchro_prepare_projection_view($1)', [relation]);
    await sql.query(membershipSql(table, key, placement));
    // The impact function names target rows by table ID, which the registration returns.
    const [row] = await sql.query<{ table_id: string | null }>('SELECT synchro.synchro_register_table(relation => $1, membership_fn => $2) AS table_id', [relation, membershipFunctionName(target)]);
    if (!row?.table_id) throw new Error(`registering ${relation} returned no table ID`);
    tableId = row.table_id;
    await sql.query(impactSql(table, key, tableId, dependency, impact, 'conforming'));
    const bound = impact.maxImpactRows === undefined ? '' : `, ${impact.maxImpactRows}`;
    await sql.query(`SELECT synchro.synchro_register_membership_dependency(${literal(relation)}, ${literal(dependency)}, ${literal(impactFunctionName(target, dependency))}${bound})`);
  });
  claimed.delete(target);
  dependencyState(world).declared.set(target, { dependency, impact, tableId });
}

Given(
  'the dependency of {string} on {string} has an impact function returning the comments whose {string} equals the old or new project {string}, with max_impact_rows {int}',
  async function (this: SyncWorld, target: string, dependency: string, reference: string, key: string, bound: number) {
    await installDependent(this, target, dependency, { kind: 'referencing', relation: dependency, reference, key, maxImpactRows: bound });
  },
);

Given('the dependency of {string} on itself has a self-impact function returning the children of the old and new row', async function (this: SyncWorld, target: string) {
  const placement = placementOf(this, target);
  if (placement.kind !== 'root') throw new Error(`the rows of "${target}" do not follow a parent column, so they have no children to name`);
  await installDependent(this, target, `public.${target}`, { kind: 'children', parent: placement.parent });
});
