/**
 * Steps of SYNC-PULL-014 Accepted Write Invalidates Older Rebuild: the
 * harness client goes on with a rebuild after pushes of its own (accepted,
 * rejected, lost in transit, replayed) or of another client, and the checks
 * on the replay of a push.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { mutationsFromTable } from '../support/push-ledger/mutation-table.ts';
import { lastRemembered, pushWithAnswerLost, rememberedByRequest } from '../support/rebuild-replays/pushes.ts';
import { requestNextPage } from '../support/rebuild-replays/requests.ts';
import type { SyncWorld } from '../support/world.ts';

Given('the harness client {string} has requested the next page of that rebuild', async function (this: SyncWorld, name: string) {
  const reply = await requestNextPage(this, name);
  if (reply.status !== 200) throw new Error(`the next page of that rebuild was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

When('the harness client {string} requests the next page of that rebuild', async function (this: SyncWorld, name: string) {
  await requestNextPage(this, name);
});

// The proxy forwards the push and cuts the connection once the server has answered: the answer is lost, only what the server did counts.
When('the harness client {string} pushes this batch and discards the response without reading it:', async function (this: SyncWorld, name: string, table: DataTable) {
  const client = this.wire(name);
  await pushWithAnswerLost(this, name, client.pushBody(mutationsFromTable(this, client, table)));
});

When('the harness client {string} sends that push batch again byte for byte', async function (this: SyncWorld, name: string) {
  const push = lastRemembered(this, name);
  await this.wire(name).post('/sync/push', undefined, { raw: push.requestText, endpoint: 'push' });
});

Then('the response body is byte-identical to the first response to that batch', function (this: SyncWorld) {
  const reply = this.lastReply();
  this.assert.equal(reply.endpoint, 'push', `the last answer is a push answer: ${reply.text.slice(0, 300)}`);
  const push = rememberedByRequest(this, reply.requestText);
  this.assert.ok(push !== undefined && push.first !== reply, `the last push sent again the bytes of an earlier batch: ${reply.requestText.slice(0, 300)}`);
  this.assert.equal({ status: reply.status, text: reply.text }, { status: push.first.status, text: push.first.text }, 'the answer to the replayed batch against the first answer');
});
