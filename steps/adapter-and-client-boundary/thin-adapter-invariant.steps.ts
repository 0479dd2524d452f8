/**
 * Steps of SYNC-BOUND-001 Thin Adapter Invariant that the reference can be
 * judged by: the push answer is the stored canonical text byte for byte (also
 * on replay), the status a refused entry point leaves, and the adapter
 * process's network while it serves a sync. The steps about calls of the
 * canonical extension entry points (synchro_connect/push/pull/rebuild) and
 * EXECUTE on them stay undefined: the reference has no such entry points
 * (docs/decisions.md 118 and 163), so the requirement is undetermined.
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { listeningEndpoint, networkOf, outboundPeers, serverNetworkPhrase } from '../support/network/server-network.ts';
import { ledgerState, sentBatch } from '../support/push-ledger/state.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import type { SyncWorld } from '../support/world.ts';

serverNetworkPhrase(/^server inspection shows that, while serving those requests, the adapter process /, 'observe');
processPhrase(/^client "([^"]+)" syncs after writing task /);

Given('client {string} has pushed batch {string} inserting task {string} owned by {string}', async function (this: SyncWorld, name: string, label: string, id: string, owner: string) {
  const client = this.wire(name);
  // A batch ID is a UUID on the wire; the feature's label names it.
  const body = client.pushBody([client.mutation({ op: 'insert', table: 'tasks', pk: id, columns: { owner_id: owner, title: `task ${id}` } })], randomUUID());
  const reply = await client.post('/sync/push', body, { endpoint: 'push' });
  if (reply.status !== 200) throw new Error(`batch ${label} of client "${name}" was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  ledgerState(this).batches.set(label, { client: name, batchId: String(body.batch_id), requestText: reply.requestText, first: reply });
});

Then('both response bodies are byte-identical to the stored canonical response of batch {string} shown by server inspection', async function (this: SyncWorld, label: string) {
  const server = await this.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read the stored push response`);
  const batch = sentBatch(this, label);
  const stored = await server.inspect.query<{ http_status: number | null; response_body: string | null }>('SELECT http_status, response_body FROM synchro.push_batches WHERE batch_id = $1::uuid', [batch.batchId]);
  this.assert.equal(stored.length, 1, `server inspection shows ${stored.length} stored batches ${batch.batchId}`);
  const canonical = stored[0]?.response_body ?? null;
  this.assert.ok(canonical !== null, `the server stored no response for batch ${label}`);
  const replay = this.lastReply();
  this.assert.ok(replay !== batch.first && replay.endpoint === 'push', 'the last answer is the replay of the batch');
  for (const [which, reply] of [['first', batch.first], ['replayed', replay]] as const) {
    this.assert.equal(reply.status, stored[0]?.http_status, `status of the ${which} answer to batch ${label} against the stored one`);
    this.assert.equal(reply.text, canonical, `the ${which} answer to batch ${label} against the stored canonical response`);
  }
});

Then(/^the response status is (\d{3}) with error code "([a-z_]+)" or (\d{3}) with error code "([a-z_]+)"$/, function (this: SyncWorld, firstStatus: string, firstCode: string, secondStatus: string, secondCode: string) {
  const reply = this.lastReply();
  const answered = `${reply.status} ${String(reply.json?.error?.code)}`;
  this.assert.ok([`${firstStatus} ${firstCode}`, `${secondStatus} ${secondCode}`].includes(answered), `the ${reply.endpoint} was answered ${reply.status}: ${reply.text.slice(0, 400)}`);
});

When('client {string} syncs after writing task {string} owned by {string}', async function (this: SyncWorld, name: string, id: string, owner: string) {
  const client = await this.process(name);
  // The write is the application's; the sync then pushes it, pulls and reconciles, every endpoint the client uses.
  await client.call('execute', { sql: 'INSERT INTO tasks (id, owner_id, title) VALUES (?, ?, ?)', params: [id, owner, 'Written offline'] });
  const result = await this.inSyncWindow(name, 'syncs', () => this.syncProcess(name));
  if ('error' in result) throw new Error(`client "${name}" could not sync: ${result.error.message}`);
});

Then('server inspection shows that, while serving those requests, the adapter process opened network connections only to its PostgreSQL database', async function (this: SyncWorld) {
  const server = await this.readyServer();
  const network = networkOf(server);
  if ('missing' in network) return undeterminedWithout(this, network.missing);
  const window = this.syncWindows.at(-1);
  if (window === undefined) throw new Error('no sync ran in this scenario');
  const served = (await this.proxy()).exchanges.slice(window.from, window.to).filter((e) => e.receivedAt !== undefined);
  this.assert.ok(served.some((e) => e.endpoint === 'push'), `the sync sent a push (it sent ${served.map((e) => e.endpoint).join(', ') || 'nothing'})`);
  const activity = await network.activity(served[0]?.receivedAt as number, Date.now(), this.deadlineMs);
  const peers = outboundPeers(activity, listeningEndpoint(server));
  const strangers = peers.filter((peer) => !network.databaseEndpoints.includes(peer));
  this.assert.equal(strangers, [], `while serving ${served.map((e) => e.endpoint).join(', ')} the adapter process reached ${peers.join(', ')}; its database is ${network.databaseEndpoints.join(', ')}`);
  this.assert.ok(activity.some((entry) => entry.kind === 'send' && network.databaseEndpoints.includes(entry.remote)), 'the adapter process sent nothing to its database while serving those requests');
});
