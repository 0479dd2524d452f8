/**
 * Shared steps (used by several requirements).
 * Schema manifests the server publishes during a scenario, and the manifest
 * reference the harness notes.
 */
import { Given } from '@cucumber/cucumber';
import { type ColumnSpec, sqlType, type TableSpec, templateValues } from '../support/model.ts';
import { currentManifest, ident, literal, publishChange, sqlValue } from '../support/schema-and-versions/manifests.ts';
import { stateOf } from '../support/schema-and-versions/state.ts';
import { contractState } from '../support/scopes/function-contract.ts';
import { awaitCapture } from '../support/source-schema.ts';
import type { SyncWorld } from '../support/world.ts';

function addColumnToModel(table: TableSpec, column: ColumnSpec): void {
  if (table.columns.some((c) => c.name === column.name)) throw new Error(`table "${table.name}" already has a column "${column.name}"`);
  table.columns.push(column);
}

Given(
  /^the server publishes a class 2 manifest that adds a nullable column "([^"]+)" of type "([^"]+)" to table "([^"]+)"$/,
  async function (this: SyncWorld, column: string, type: string, tableName: string) {
    const table = this.model.table(tableName);
    await this.readyServer();
    // A nullable field with no value in any row: nothing captured needs a new materialization.
    await publishChange(this, tableName, `ALTER TABLE public.${ident(tableName)} ADD COLUMN ${ident(column)} ${sqlType(type)};`, 'class_2');
    addColumnToModel(table, { name: column, type, key: false, nullable: true });
  },
);

/** Column values that make a new row of `table` land in `scope`, from the table's placement rules. */
function valuesPlacingIn(table: TableSpec, scope: string): Record<string, string> | undefined {
  for (const rule of table.conditional) if (rule.scope === scope) return { [rule.column]: literal(rule.value) };
  for (const template of table.placements) {
    const values = templateValues(template, scope);
    if (values !== undefined) return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, literal(value)]));
  }
  return undefined;
}

Given(
  /^the server publishes a class 3 manifest that adds a column "([^"]+)" of type "([^"]+)" with existing values to table "([^"]+)", affecting scope "([^"]+)"$/,
  async function (this: SyncWorld, column: string, type: string, tableName: string, scope: string) {
    const table = this.model.table(tableName);
    const server = await this.readyServer();
    if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to seed table ${tableName}`);
    const placed = valuesPlacingIn(table, scope);
    if (placed === undefined) throw new Error(`no placement rule of table "${tableName}" puts a row in scope "${scope}"`);
    // The new field needs a historical value in a row of that scope: seed one unless the scope already holds rows.
    const conditions = Object.entries(placed).map(([c, v]) => `${ident(c)}::text = ${v}`);
    const existing = await server.sourceSql.query(`SELECT 1 FROM public.${ident(tableName)}${conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : ''} LIMIT 1`);
    if (existing.length === 0) {
      const values = table.columns.map((c, i) => (c.key ? literal(`${tableName}-${column}-seed`) : (placed[c.name] ?? sqlValue(c.type, i))));
      await server.sourceSql.query(`INSERT INTO public.${ident(tableName)} (${table.columns.map((c) => ident(c.name)).join(', ')}) VALUES (${values.join(', ')})`);
      await awaitCapture(this);
    }
    const where = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : '';
    await publishChange(
      this,
      tableName,
      `ALTER TABLE public.${ident(tableName)} ADD COLUMN ${ident(column)} ${sqlType(type)};\nUPDATE public.${ident(tableName)} SET ${ident(column)} = ${sqlValue(type, 7)}${where};`,
      'class_3',
    );
    addColumnToModel(table, { name: column, type, key: false, nullable: true });
  },
);

// A registration that fails late: the first table registers, then the second function is refused, in one transaction.
Given('the harness records the current manifest reference as {string}', async function (this: SyncWorld, label: string) {
  const manifest = await currentManifest(this);
  contractState(this).manifests.set(label, { version: manifest.schema_version, hash: manifest.schema_hash });
});

Given('the operator publishes a {string} manifest that adds nullable column {string} of type {string} to table {string}', async function (this: SyncWorld, transition: string, column: string, type: string, tableName: string) {
  const table = this.model.table(tableName);
  await this.readyServer();
  await publishChange(this, tableName, `ALTER TABLE public.${ident(tableName)} ADD COLUMN ${ident(column)} ${sqlType(type)};`, transition);
  table.columns.push({ name: column, type, key: false, nullable: true });
});

// The whole manifest is kept: later steps compare outcome bindings and authored_schema references with it.
Given(/^the (?:current|new) schema is remembered as "([^"]+)"$/, async function (this: SyncWorld, label: string) {
  stateOf(this).manifests.set(label, await currentManifest(this));
});

Given('the operator publishes a new schema version that adds nullable writable column {string} of type {word} to table {string}', async function (this: SyncWorld, column: string, type: string, tableName: string) {
  const table = this.model.table(tableName);
  await this.readyServer();
  // A nullable column no row has a value for: the next manifest, one compatible step on.
  await publishChange(this, tableName, `ALTER TABLE public.${ident(tableName)} ADD COLUMN ${ident(column)} ${sqlType(type)};`, 'class_2');
  addColumnToModel(table, { name: column, type, key: false, nullable: true });
});
