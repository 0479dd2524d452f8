/**
 * Shared steps (used by several requirements).
 * The harness as another writer of the same rows (client "W", connected as a
 * protocol client): it inserts, updates and deletes rows from versions the
 * scenario named, each write applied and visible to capture before the next
 * step. What the server then holds is read in server-rows.steps.ts.
 */
import { When } from '@cucumber/cucumber';
import { columnValue, writerPush } from '../support/mutations/writers.ts';
import { labelledVersion } from '../support/version-labels.ts';
import type { Obj } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

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
