/**
 * SYNC-MUT-012 Atomic Push Durability
 * (features/mutation-and-data-correctness/atomic-push-durability.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { mutationsFromTable } from '../support/push-ledger/mutation-table.ts';
import { ledgerState, type Obj } from '../support/push-ledger/state.ts';
import { dropSourceTriggers, sourceTrigger } from '../support/mutations/push-durability.ts';
import type { SyncWorld } from '../support/world.ts';

Given(/^table "([^"]+)" has a source trigger that raises SQLSTATE "([0-9A-Z]{5})" when a row's body becomes "([^"]+)"$/, async function (this: SyncWorld, table: string, sqlstate: string, body: string) {
  // An application trigger failing the way the database fails under contention, at one chosen row.
  await sourceTrigger(this, table, body, `RAISE EXCEPTION 'operational fault injected by the harness' USING ERRCODE = '${sqlstate}';`);
});

When('the harness removes the fault trigger from table {string}', async function (this: SyncWorld, table: string) {
  await dropSourceTriggers(this, table);
});

Given(/^client "([^"]+)" has pushed batch "([^"]+)" and received status (\d{3}):$/, async function (this: SyncWorld, name: string, batchId: string, status: string, table: DataTable) {
  const client = this.wire(name);
  const reply = await client.post('/sync/push', client.pushBody(mutationsFromTable(this, client, table), batchId), { endpoint: 'push' });
  const batches = ledgerState(this).batches;
  if (!batches.has(batchId)) batches.set(batchId, { client: name, batchId, requestText: reply.requestText, first: reply });
  if (reply.status !== Number(status)) throw new Error(`batch ${batchId} of client "${name}" was answered ${reply.status}, not ${status}: ${reply.text.slice(0, 500)}`);
});

Then('the error body has code {string}, a nonempty message, "retryable": true and no member "accepted" or "rejected"', function (this: SyncWorld, code: string) {
  const reply = this.lastReply();
  const body = (reply.json ?? {}) as Obj;
  const error = (body.error ?? {}) as Obj;
  this.assert.equal(error.code, code, `the error code of ${reply.text.slice(0, 500)}`);
  this.assert.ok(typeof error.message === 'string' && error.message.length > 0, `the error has a nonempty message: ${reply.text.slice(0, 500)}`);
  this.assert.equal(error.retryable, true, `"retryable" of ${reply.text.slice(0, 500)}`);
  this.assert.equal(['accepted', 'rejected'].filter((m) => Object.hasOwn(body, m)), [], `success members in the error body ${reply.text.slice(0, 500)}`);
});
