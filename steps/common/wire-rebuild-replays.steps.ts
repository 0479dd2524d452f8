/**
 * Shared steps (used by several requirements).
 * The harness's own client going on with, and repeating, the requests of the
 * rebuild it started last ("that rebuild"), pushing between its pages, and
 * the checks on the page or refusal such a request got.
 */
import { type DataTable, Then, When } from '@cucumber/cucumber';
import { errorOf } from '../support/client-lifecycle/server-errors.ts';
import { mutationsFromTable } from '../support/push-ledger/mutation-table.ts';
import { pushRemembered } from '../support/rebuild-replays/pushes.ts';
import { repeatRebuildRequest } from '../support/rebuild-replays/requests.ts';
import { member } from '../support/reply.ts';
import { keyValue, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

When(/^the harness client "([^"]+)" repeats its request for page (\d+) of that rebuild$/, async function (this: SyncWorld, name: string, page: string) {
  await repeatRebuildRequest(this, name, Number(page));
});

When(/^the harness client "([^"]+)" pushes a batch with:$/, async function (this: SyncWorld, name: string, table: DataTable) {
  const client = this.wire(name);
  await pushRemembered(this, name, client.pushBody(mutationsFromTable(this, client, table)));
});

Then(/^the error body has "scope_id" equal to "([^"]+)" and "retryable" (true|false)$/, function (this: SyncWorld, scope: string, flag: string) {
  const error = errorOf(this);
  this.assert.equal({ scope_id: error.scope_id, retryable: error.retryable }, { scope_id: scope, retryable: flag === 'true' }, `the error body ${this.lastReply().text.slice(0, 500)}`);
});

// Three or more pointers; one or two have their own steps in responses.steps.ts.
Then(/^the response has no member "([^"]+)"((?:, no member "[^"]+")+) and no member "([^"]+)"$/, function (this: SyncWorld, first: string, middle: string, last: string) {
  const pointers = [first, ...[...middle.matchAll(/no member "([^"]+)"/g)].map((m) => m[1] as string), last];
  const reply = this.lastReply();
  const present = pointers.filter((pointer) => member(reply.json, pointer) !== undefined);
  this.assert.equal(present, [], `members the ${reply.endpoint} response carries that it must not: ${reply.text.slice(0, 500)}`);
});

Then('the rebuild pages hold these records on that page:', async function (this: SyncWorld, table: DataTable) {
  const reply = this.lastReply();
  this.assert.equal({ endpoint: reply.endpoint, status: reply.status }, { endpoint: 'rebuild', status: 200 }, `the last answer is a rebuild page: ${reply.text.slice(0, 500)}`);
  const records = (reply.json?.records ?? []) as { table?: unknown; pk?: unknown }[];
  const actual: string[] = [];
  for (const record of records) actual.push(`${(await tableNamed(this, String(record.table))).name}/${String(keyValue(record.pk))}`);
  const expected = table.hashes().map((row) => `${row.table}/${row.pk}`);
  this.assert.equal(actual, expected, `records on that rebuild page, in page order: ${reply.text.slice(0, 300)}`);
});
