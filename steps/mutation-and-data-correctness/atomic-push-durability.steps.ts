/**
 * SYNC-MUT-012 Atomic Push Durability
 * (features/mutation-and-data-correctness/atomic-push-durability.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { awaitGateReached, dropSourceTriggers, gateTrigger, openGate, sourceTrigger } from '../support/mutations/push-durability.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { mutationsFromTable } from '../support/push-ledger/mutation-table.ts';
import { ledgerState, type Obj } from '../support/push-ledger/state.ts';
import type { Reply } from '../support/reply.ts';
import { serverKillPhrase, serverProcessOf } from '../support/server-process.ts';
import type { SyncWorld } from '../support/world.ts';

// A scenario with this step gets its server in a process of its own.
serverKillPhrase(/^the server process is killed with SIGKILL while that push waits at the gate inside its transaction$/);

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

// --- a server killed inside the push transaction --------------------------------------------

/** The push sent in the background: its batch, exact request text and how it ended. */
const inFlight = new WeakMap<SyncWorld, { name: string; batchId: string; requestText: string; settled: Promise<Reply | Error> }>();

Given(/^table "([^"]+)" has a source trigger that waits at a harness gate when a row's body becomes "([^"]+)"$/, async function (this: SyncWorld, table: string, body: string) {
  await gateTrigger(this, table, body);
});

When('client {string} sends batch {string} in the background with:', async function (this: SyncWorld, name: string, batchId: string, table: DataTable) {
  const client = this.wire(name);
  const requestText = JSON.stringify(client.pushBody(mutationsFromTable(this, client, table), batchId));
  const settled = client.post('/sync/push', undefined, { raw: requestText, endpoint: 'push' }).then(
    (reply) => reply,
    (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
  );
  inFlight.set(this, { name, batchId, requestText, settled });
});

When('the server process is killed with SIGKILL while that push waits at the gate inside its transaction', async function (this: SyncWorld) {
  const push = inFlight.get(this);
  if (push === undefined) throw new Error('no push was sent in the background earlier in this scenario');
  const server = await this.server();
  if (server.process === undefined) return undeterminedWithout(this, `server adapter "${server.id}" offers no control of a server process of its own, so it cannot be killed inside a push`);
  // The push has written its earlier mutations and waits, inside its transaction, at the last one.
  await awaitGateReached(this);
  await serverProcessOf(server).kill();
  const outcome = await push.settled;
  if (!(outcome instanceof Error) && outcome.status === 200) throw new Error(`batch ${push.batchId} was answered 200 although its server was killed: ${outcome.text.slice(0, 300)}`);
  // The request's first send got no answer from a live server (status 0 stands for none).
  const first: Reply = outcome instanceof Error ? { endpoint: 'push', status: 0, text: '', json: undefined, headers: new Headers(), requestText: push.requestText } : outcome;
  ledgerState(this).batches.set(push.batchId, { client: push.name, batchId: push.batchId, requestText: push.requestText, first });
  return undefined;
});

When('the harness opens the gate and the server process is started again', async function (this: SyncWorld) {
  // The orphaned transaction goes on once the gate opens, finds its client gone and ends.
  await openGate(this);
  await serverProcessOf(await this.server()).restart();
});

Then('the response body is byte-identical to the previous response to batch {string}', function (this: SyncWorld, batchId: string) {
  const answers = this.replies.filter((r) => r.endpoint === 'push' && (JSON.parse(r.requestText) as Obj).batch_id === batchId);
  this.assert.ok(answers.length >= 2, `batch ${batchId} was answered ${answers.length} times, fewer than two`);
  const [previous, last] = answers.slice(-2) as [Reply, Reply];
  this.assert.equal(last.status, previous.status, `the status of the last answer to batch ${batchId} (${last.text.slice(0, 300)})`);
  this.assert.ok(Buffer.from(last.text, 'utf8').equals(Buffer.from(previous.text, 'utf8')), `the last two answers to batch ${batchId} differ:\nprevious: ${previous.text.slice(0, 1500)}\nlast:     ${last.text.slice(0, 1500)}`);
});
