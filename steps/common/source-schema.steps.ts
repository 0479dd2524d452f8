/**
 * Source database steps: declaring registered tables and where their rows
 * belong, committing source transactions, and waiting for capture.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import type { ColumnSpec } from '../support/model.ts';
import type { SyncWorld } from '../support/world.ts';

const yes = (cell: string | undefined) => cell?.trim().toLowerCase() === 'yes';

Given('a registered table {string} with columns:', function (this: SyncWorld, name: string, table: DataTable) {
  const columns: ColumnSpec[] = table.hashes().map((row) => {
    if (!row.column || !row.type) throw new Error(`table "${name}": every row needs a column and a type`);
    const key = yes(row.key);
    // A key column is never null; other columns are NOT NULL unless the table says nullable.
    const precision = row.precision?.trim() ? { precision: Number(row.precision), scale: Number(row.scale?.trim() || 0) } : {};
    return { name: row.column, type: row.type, key, nullable: !key && yes(row.nullable), ...precision };
  });
  this.model.declareTable(name, columns);
});

Given('table {string} places each row in scope {string}', function (this: SyncWorld, name: string, template: string) {
  this.model.table(name).placements.push(template);
});

Given('table {string} also places rows whose {word} is {string} in scope {string}', function (this: SyncWorld, name: string, column: string, value: string, scope: string) {
  const table = this.model.table(name);
  if (table.installed) throw new Error(`table "${name}" is already on the server; write "table ${JSON.stringify(name)} now also places rows ..." to change its placement there`);
  table.conditional.push({ column, value, scope });
});

// Unlike the declaration above, this one reaches a table the server may already have.
Given('table {string} now also places rows whose {word} is {string} in scope {string}', async function (this: SyncWorld, name: string, column: string, value: string, scope: string) {
  const table = this.model.table(name);
  table.conditional.push({ column, value, scope });
  if (table.installed) await this.model.replacePlacements(await this.readyServer(), name);
});

Given('table {string} marks deletion with column {string}', function (this: SyncWorld, name: string, column: string) {
  const table = this.model.table(name);
  if (!table.columns.some((c) => c.name === column)) table.columns.push({ name: column, type: 'datetime', key: false, nullable: true });
  table.deletedAtColumn = column;
});

async function commitOnSource(world: SyncWorld, sql: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source transactions`);
  await server.sourceSql.query(sql);
}

/**
 * Waits until every committed source transaction is visible to pull and
 * rebuild. A server that captures synchronously offers no such control and
 * has nothing to wait for; one that captures asynchronously without offering
 * it shows up as missing rows, never as a false pass.
 */
export async function awaitCapture(world: SyncWorld): Promise<void> {
  const server = await world.readyServer();
  await server.capture?.awaitMaterialized(world.deadlineMs);
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
