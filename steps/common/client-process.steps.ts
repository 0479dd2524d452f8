/**
 * The client under test driven as an application would: SQL on its local
 * tables, sync cycles, and reading its tables back. Everything goes through
 * the client adapter protocol.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import type { SyncWorld } from '../support/world.ts';

When('client {string} syncs', async function (this: SyncWorld, name: string) {
  await this.syncProcess(name);
});

async function syncedIdle(world: SyncWorld, name: string): Promise<void> {
  const result = await world.syncProcess(name);
  if ('error' in result) throw new Error(`client "${name}" could not sync: ${result.error.message}`);
  if (result.completion !== 'idle') throw new Error(`client "${name}" ended its sync "${result.completion}" in state ${result.status}, not idle`);
}

Given('client {string} of user {string} has synced', async function (this: SyncWorld, name: string, user: string) {
  this.clientUsers.set(name, user);
  await syncedIdle(this, name);
});

Given('client {string} has synced', async function (this: SyncWorld, name: string) {
  await syncedIdle(this, name);
});

When('client {string} executes SQL:', async function (this: SyncWorld, name: string, sql: string) {
  const client = await this.process(name);
  // Several statements run as one local transaction, as an application would write them.
  const statements = splitStatements(sql).map((statement) => ({ sql: statement }));
  await client.call('transaction', { statements });
});

/** Splits a script at semicolons that end a line (the features write one statement per line or block). */
export function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*(?:\n|$)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '');
}

function lastSync(world: SyncWorld, name: string) {
  const result = world.lastSync.get(name);
  if (!result) throw new Error(`client "${name}" has not synced in this scenario`);
  return result;
}

Then('the sync of client {string} ends with completion {string}', function (this: SyncWorld, name: string, completion: string) {
  const result = lastSync(this, name);
  this.assert.ok(!('error' in result), `the sync of client "${name}" raised ${'error' in result ? result.error.message : ''}`);
  this.assert.equal((result as { completion: string }).completion, completion, `completion of the sync of client "${name}" (state ${(result as { status: string }).status})`);
});

Then('the sync of client {string} finishes', function (this: SyncWorld, name: string) {
  const result = lastSync(this, name);
  this.assert.ok(!('error' in result), `the sync of client "${name}" did not finish: ${'error' in result ? result.error.message : ''}`);
});

async function localRows(world: SyncWorld, name: string, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = await world.process(name);
  return (await client.call<{ rows: Record<string, unknown>[] }>('query', { sql, params })).rows;
}

Then('client {string} has no row {string} in table {string}', async function (this: SyncWorld, name: string, id: string, table: string) {
  const key = this.model.keyColumn(table);
  const rows = await localRows(this, name, `SELECT 1 FROM "${table}" WHERE CAST("${key.name}" AS TEXT) = ?`, [id]);
  this.assert.equal(rows.length, 0, `client "${name}" holds row ${id} in ${table}`);
});

Then('client {string} has neither row {string} nor row {string} in table {string}', async function (this: SyncWorld, name: string, first: string, second: string, table: string) {
  const key = this.model.keyColumn(table);
  const rows = await localRows(this, name, `SELECT CAST("${key.name}" AS TEXT) AS id FROM "${table}" WHERE CAST("${key.name}" AS TEXT) IN (?, ?)`, [first, second]);
  this.assert.equal(rows, [], `client "${name}" holds rows of ${table} it should not`);
});

Then('querying {string} on client {string} returns:', async function (this: SyncWorld, sql: string, name: string, expected: DataTable) {
  const rows = await localRows(this, name, sql);
  // SQLite hands back numbers and text; the feature writes every cell as text.
  const actual = rows.map((row) => Object.fromEntries(Object.entries(row).map(([column, value]) => [column, value === null ? 'null' : String(value)])));
  this.assert.equal(actual, expected.hashes(), `rows of ${sql} on client "${name}"`);
});
