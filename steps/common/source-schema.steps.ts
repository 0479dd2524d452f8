/**
 * Shared steps (used by several requirements).
 * The source database: registered tables and their scope placement, rows the
 * harness commits, and waiting until capture has materialized them.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { placeUnderRegisteredTable } from '../support/effect-progress/registered-parent.ts';
import type { ColumnSpec } from '../support/model.ts';
import { claim } from '../support/scope-dependencies/registration.ts';
import { ident, relationParts, type SourceRow, templateColumns } from '../support/scope-dependencies/rules.ts';
import { dependencyState } from '../support/scope-dependencies/state.ts';
import { listedFunctionSql, reconfigure } from '../support/scope-membership/functions.ts';
import { membershipState, relationOf } from '../support/scope-membership/membership.ts';
import { OPERATOR, prepareOperator, setupAs } from '../support/scopes/function-contract.ts';
import { sourceSql } from '../support/scopes/roles.ts';
import { commitAndRecord } from '../support/seed-snapshots/source-commits.ts';
import { awaitCapture } from '../support/source-schema.ts';
import type { SyncWorld } from '../support/world.ts';

// A flag cell reads yes/no in most features and true/false in the pull features: both spellings mean the same.
const yes = (cell: string | undefined) => ['yes', 'true'].includes(cell?.trim().toLowerCase() ?? '');

Given('a registered table {string} with columns:', function (this: SyncWorld, name: string, table: DataTable) {
  const lifecycle = new Map<string, string>();
  // A table written as the application sees it (each column's writability or lifecycle instead of its
  // nullability: the mutation features' form) leaves every non-key column nullable, SQL's default: an insert
  // may omit any column and get the server's default.
  const header = table.raw()[0] ?? [];
  const nullableByDefault = !header.includes('nullable') && (header.includes('writable') || header.includes('lifecycle'));
  const columns: ColumnSpec[] = table.hashes().map((row) => {
    if (!row.column || !row.type) throw new Error(`table "${name}": every row needs a column and a type`);
    const key = yes(row.key);
    const role = row.lifecycle?.trim() ?? '';
    if (role !== '') lifecycle.set(role, row.column);
    // `decimal(10,2)` declares precision and scale in the type cell.
    const sized = /^decimal\((\d+),\s*(\d+)\)$/.exec(row.type.trim());
    const precision = sized ? { precision: Number(sized[1]), scale: Number(sized[2]) } : row.precision?.trim() ? { precision: Number(row.precision), scale: Number(row.scale?.trim() || 0) } : {};
    // A key column is never null; other columns are NOT NULL unless the table says nullable. A lifecycle column is set by the server, so it may be null.
    return { name: row.column, type: sized ? 'decimal' : row.type, key, nullable: !key && (yes(row.nullable) || nullableByDefault || role !== ''), ...precision };
  });
  const unknown = [...lifecycle.keys()].filter((role) => role !== 'updated_at' && role !== 'deleted_at');
  if (unknown.length > 0) throw new Error(`table "${name}": unknown lifecycle ${unknown.join(', ')} (known: updated_at, deleted_at)`);
  const declared = this.model.declareTable(name, columns);
  declared.updatedAtColumn = lifecycle.get('updated_at');
  declared.deletedAtColumn = lifecycle.get('deleted_at');
});

Given('table {string} places each row in scope {string}', function (this: SyncWorld, name: string, template: string) {
  this.model.table(name).placements.push(template);
});

// Unlike the declaration above, this one reaches a table the server may already have.
Given('table {string} now also places rows whose {word} is {string} in scope {string}', async function (this: SyncWorld, name: string, column: string, value: string, scope: string) {
  const table = this.model.table(name);
  table.conditional.push({ column, value, scope });
  if (table.installed) await this.model.replacePlacements(await this.readyServer(), name);
});

Given('table {string} also places each row in scope {string} when {string} is not null', function (this: SyncWorld, name: string, template: string, column: string) {
  const table = this.model.table(name);
  if (table.installed) throw new Error(`table "${name}" is already installed: declare its placements before the first server step`);
  if (!table.columns.some((c) => c.name === column && c.nullable)) throw new Error(`table "${name}" has no nullable column "${column}"`);
  table.whenSet.push({ template, column });
});

Given('table {string} marks deletion with column {string}', function (this: SyncWorld, name: string, column: string) {
  const table = this.model.table(name);
  if (!table.columns.some((c) => c.name === column)) table.columns.push({ name: column, type: 'datetime', key: false, nullable: true });
  table.deletedAtColumn = column;
});

async function commitOnSource(world: SyncWorld, sql: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source transactions`);
  // The WAL window of the commit is kept so a later step can place a boundary against "that" commit.
  await commitAndRecord(world, server.sourceSql, sql);
}

When('the harness commits on the source database:', async function (this: SyncWorld, sql: string) {
  await commitOnSource(this, sql);
});

When('capture has materialized every committed source transaction', async function (this: SyncWorld) {
  await awaitCapture(this);
});

Given('the harness has committed and capture has materialized:', async function (this: SyncWorld, sql: string) {
  await commitOnSource(this, sql);
  await awaitCapture(this);
});

Then('the source table {string} has no row {string}', async function (this: SyncWorld, name: string, id: string) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to read source tables`);
  const key = this.model.keyColumn(name);
  const rows = await server.sourceSql.query(`SELECT 1 FROM public."${name}" WHERE "${key.name}"::text = $1`, [id]);
  this.assert.equal(rows.length, 0, `source table ${name} holds row ${id}`);
});

/** Every relation a dependent placement of the scenario reads: its target tables and their dependencies. */
function placementRelations(world: SyncWorld): string[] {
  const relations = new Set<string>();
  for (const [target, placement] of dependencyState(world).placements) {
    relations.add(`public.${target}`);
    if (placement.kind === 'parent') relations.add(placement.relation);
  }
  return [...relations].sort();
}

When('the harness commits on the source database and records the commit position as {string}:', async function (this: SyncWorld, label: string, script: string) {
  const state = dependencyState(this);
  if (state.positions.has(label)) throw new Error(`a source transaction was already recorded as "${label}"`);
  const server = await this.readyServer();
  const sql = server.sourceSql;
  if (!sql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source transactions`);
  const lsn = async () => ((await sql.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn'))[0] as { lsn: string }).lsn;
  const before = await lsn();
  await sql.query(script);
  const after = await lsn();
  const rows = new Map<string, SourceRow[]>();
  for (const relation of placementRelations(this)) {
    const { schema, table } = relationParts(relation);
    const read = await sql.query<{ r: SourceRow }>(`SELECT to_jsonb(t) AS r FROM ${ident(schema)}.${ident(table)} t`);
    rows.set(relation, read.map((x) => x.r));
  }
  state.positions.set(label, { before, after, rows });
});

Given(
  'table {string} places each row in the scope {string} of the {string} row whose {string} equals its {string}',
  async function (this: SyncWorld, target: string, template: string, relation: string, key: string, reference: string) {
    const state = dependencyState(this);
    const parent = state.captureOnly.get(relation);
    // A parent the scenario registers for sync itself: the dependent is installed right after it.
    if (!parent && this.model.tables.has(relation)) return await placeUnderRegisteredTable(this, target, template, relation, key, reference);
    if (!parent) throw new Error(`"${relation}" is neither a capture-only dependency nor a registered table of this scenario`);
    const unknown = templateColumns(template).filter((c) => c !== parent.key && !parent.fields.includes(c));
    if (unknown.length > 0) throw new Error(`scope template ${template} names fields ${unknown.join(', ')} that ${relation} does not capture`);
    claim(this, target);
    state.placements.set(target, { kind: 'parent', template, relation, key, reference });
  },
);

/**
 * Each listed placement, repeats included. The table is installed with the
 * model's own function, which merges repeats itself; the step then moves it
 * to a function that returns every placement as listed, so merging is left
 * to the server. Each call gets a function of its own (a registered body is
 * not edited in place).
 */
Given('table {string} places each row in scopes {string}', async function (this: SyncWorld, name: string, list: string) {
  const table = this.model.table(name);
  table.placements.push(...list.split(',').map((template) => template.trim()));
  await this.readyServer();
  const state = membershipState(this);
  const fn = `public.${name}_listed_scopes_${state.functions.size + 1}_${table.placements.length}`;
  const sql = await sourceSql(this);
  await sql.query(listedFunctionSql(fn, table, this.model.keyColumn(name)));
  await reconfigure(this, relationOf(name), fn);
  state.functions.set(name, fn);
});

// Functions are written by the operator login, in schema app or public.
Given('the source database has functions:', async function (this: SyncWorld, script: string) {
  await prepareOperator(this);
  await setupAs(this, OPERATOR, script);
});
