/**
 * Steps of SYNC-BOUND-001 Thin Adapter Invariant: each request is answered
 * with the result of exactly one call of its endpoint's canonical extension
 * entry point (synchro_connect/push/pull/rebuild), made by the adapter's
 * runtime role, and read back through server inspection; without EXECUTE on
 * the entry point the endpoint cannot succeed and changes nothing; the push
 * answer is the stored canonical text byte for byte (also on replay); the
 * adapter process reaches only its database while it serves a sync.
 * How the reference records its calls, and where it approximates an
 * in-process extension: docs/decisions.md 360.
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import { STATUS_BY_CODE } from '../../harness/wire/index.ts';
import { processPhrase } from '../support/client-mode.ts';
import { ADAPTER_ROLE, entryPointOf, entryPointState, type EntryEndpoint, recordedCalls, servedAnswers, sha256Hex } from '../support/entry-points/calls.ts';
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

Then('server inspection shows exactly one call of the canonical extension entry point for {string} while serving that request, made by the adapter\'s runtime role', async function (this: SyncWorld, endpoint: string) {
  entryPointOf(endpoint);
  const server = await this.readyServer();
  const calls = await recordedCalls(server);
  if (calls === undefined) return undeterminedWithout(this, `server adapter "${server.id}" shows no record of its entry point calls through inspect (synchro.adapter_entry_calls)`);
  const reply = this.lastReply();
  this.assert.equal(reply.endpoint, endpoint, `the last request of the scenario went to ${endpoint}`);
  // One call per request the server answered: the calls of this entry point pair one to one, in order, with those answers.
  const answers = await servedAnswers(this, endpoint as EntryEndpoint);
  const mine = calls.filter((call) => call.entryPoint === endpoint);
  this.assert.equal(mine.length, answers.length, `the server answered ${answers.length} ${endpoint} requests in this scenario and recorded ${mine.length} calls of ${entryPointOf(endpoint)}`);
  const call = mine.at(-1);
  this.assert.ok(call !== undefined, `no call of ${entryPointOf(endpoint)} was recorded while serving the ${endpoint} request`);
  if (call === undefined) return;
  this.assert.equal(call.callerRole, ADAPTER_ROLE, `the role that called ${entryPointOf(endpoint)} for the ${endpoint} request`);
  entryPointState(this).call = call;
});

Then('the HTTP status of the response is the status mapped from the canonical result\'s {string}, or 200 for a success result', function (this: SyncWorld, member: string) {
  const call = entryPointState(this).call;
  if (call === undefined) throw new Error('no entry point call was singled out by an earlier step');
  if (member !== 'error.code') throw new Error(`the canonical result maps its status from "error.code", not "${member}"`);
  const mapped = call.errorCode === null ? 200 : STATUS_BY_CODE[call.errorCode as keyof typeof STATUS_BY_CODE];
  this.assert.ok(mapped !== undefined, `the canonical result's error code ${call.errorCode} is one of the protocol's codes`);
  this.assert.equal(call.status, mapped, `the status the canonical result carries against the one its ${call.errorCode ?? 'success'} maps to`);
  const reply = this.lastReply();
  this.assert.equal(reply.status, mapped, `the HTTP status of the ${reply.endpoint} response against the canonical result's (${call.errorCode ?? 'success'}): ${reply.text.slice(0, 300)}`);
});

Then('the response body is byte-identical to the canonical result after number normalization', function (this: SyncWorld) {
  const call = entryPointState(this).call;
  if (call === undefined) throw new Error('no entry point call was singled out by an earlier step');
  const reply = this.lastReply();
  // The reference's canonical result is text, recorded by its SHA-256: byte identity, which implies identity after number normalization.
  this.assert.equal(sha256Hex(reply.text), call.bodySha256, `SHA-256 of the ${reply.endpoint} response body against the canonical result's body (${reply.text.slice(0, 200)})`);
});

Given('the operator revokes EXECUTE on the canonical extension entry point for {string} from the adapter\'s runtime role', async function (this: SyncWorld, endpoint: string) {
  await setEntryPointGrant(this, entryPointOf(endpoint), false);
  entryPointState(this).revoked = entryPointOf(endpoint);
});

When('the operator grants EXECUTE on that entry point back to the adapter\'s runtime role', async function (this: SyncWorld) {
  const revoked = entryPointState(this).revoked;
  if (revoked === undefined) throw new Error('no entry point was revoked earlier in this scenario');
  await setEntryPointGrant(this, revoked, true);
});

/** Grants or revokes EXECUTE on an entry point for the adapter's role as the operator would, and reads the privilege back. */
async function setEntryPointGrant(world: SyncWorld, entryPoint: string, granted: boolean): Promise<void> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change a grant`);
  await server.provision.exec(granted ? `GRANT EXECUTE ON FUNCTION ${entryPoint} TO ${ADAPTER_ROLE}` : `REVOKE EXECUTE ON FUNCTION ${entryPoint} FROM ${ADAPTER_ROLE}`);
  // Read back where the server offers inspection (the scenario needs only provision).
  if (!server.inspect) return;
  const now = await server.inspect.query<{ ok: boolean }>(`SELECT has_function_privilege('${ADAPTER_ROLE}', '${entryPoint}', 'EXECUTE') AS ok`);
  if (now[0]?.ok !== granted) throw new Error(`after the ${granted ? 'grant' : 'revoke'} ${ADAPTER_ROLE} ${now[0]?.ok ? 'still has' : 'lacks'} EXECUTE on ${entryPoint}`);
}
