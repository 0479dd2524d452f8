/**
 * Shared steps (used by several requirements).
 * The harness as another writer of the same rows (client "W"): it connects
 * as a protocol client, inserts, updates and deletes rows from versions the
 * scenario named, and the server's row state is read back through a fresh
 * protocol client of the row's user.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { mutationsFromTable } from '../support/push-ledger/mutation-table.ts';
import { queueState } from '../support/mutations/state.ts';
import { servedRow } from '../support/mutations/server-rows.ts';
import { columnValue, writerPush } from '../support/mutations/writers.ts';
import { labelledVersion } from '../support/seeds/artifacts.ts';
import type { Obj } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

Given('client {string} of user {string} has connected', async function (this: SyncWorld, name: string, user: string) {
  await this.readyServer();
  const reply = await this.newWire(name, user).connect();
  if (reply.status !== 200) throw new Error(`client "${name}" could not connect: ${reply.status} ${reply.text}`);
});

Given('client {string} has pushed a batch with:', async function (this: SyncWorld, name: string, table: DataTable) {
  const client = this.wire(name);
  const mutations = mutationsFromTable(this, client, table);
  const reply = await client.push(mutations);
  const applied = ((reply.json?.accepted ?? []) as Obj[]).filter((o) => o.status === 'applied').length;
  if (reply.status !== 200 || applied !== mutations.length) throw new Error(`client "${name}" got ${applied} of ${mutations.length} mutations applied: ${reply.status} ${reply.text}`);
});

When(/^client "([^"]+)" updates row "([^"]+)" of table "([^"]+)" from "([^"]+)" setting (\w+) "([^"]*)"$/, async function (this: SyncWorld, name: string, row: string, table: string, from: string, column: string, value: string) {
  await writerPush(this, name, { op: 'update', table, row, base: labelledVersion(this, from), columns: { [column]: columnValue(this, table, column, value) } });
});

When(/^client "([^"]+)" deletes row "([^"]+)" of table "([^"]+)" from "([^"]+)"$/, async function (this: SyncWorld, name: string, row: string, table: string, from: string) {
  await writerPush(this, name, { op: 'delete', table, row, base: labelledVersion(this, from) });
});

When(/^client "([^"]+)" inserts row "([^"]+)" of table "([^"]+)" with (\w+) "([^"]*)"$/, async function (this: SyncWorld, name: string, row: string, table: string, column: string, value: string) {
  const writer = this.wire(name);
  // The row is placed in the writer's own scope: each "user:{column}" placement of the table takes the writer's user.
  const columns: Obj = { [column]: columnValue(this, table, column, value) };
  for (const template of this.model.table(table).placements) {
    const owner = /^user:\{(\w+)\}$/.exec(template)?.[1];
    if (owner !== undefined) columns[owner] = writer.userId;
  }
  await writerPush(this, name, { op: 'insert', table, row, columns });
});

/**
 * The server serves the row with that value, at a named version or at the
 * version a writer's own update got. The row is read by a fresh client of
 * the scenario's first named user (these scenarios have one user, whose
 * scopes hold the row).
 */
Then(
  /^the server holds row "([^"]+)" of table "([^"]+)" with (\w+) "([^"]*)"(?: at version "([^"]+)"| at the version of client "([^"]+)"'s update)?$/,
  async function (this: SyncWorld, row: string, table: string, column: string, value: string, label: string | undefined, writer: string | undefined) {
    const user = [...this.clientUsers.values()][0];
    if (user === undefined) throw new Error('no client of any user was named in this scenario');
    const served = await servedRow(this, user, table, row);
    this.assert.ok(served !== undefined, `the server serves no row ${row} of ${table}`);
    this.assert.equal(String(served.row[column]), value, `${column} of ${table} ${row} on the server (${JSON.stringify(served.row)})`);
    if (label) this.assert.equal(served.serverVersion, labelledVersion(this, label), `server version of ${table} ${row} (${label})`);
    if (writer) {
      const version = queueState(this).writerVersions.get(`${writer}/${table}/${row}`);
      if (version === undefined) throw new Error(`client "${writer}" made no write of ${table} ${row} in this scenario`);
      this.assert.equal(served.serverVersion, version, `server version of ${table} ${row}: the one client "${writer}"'s update got`);
    }
  },
);
