/**
 * A client under test carrying out the server's schema action: what it
 * installed, which requests it sent during a sync, how it stops on
 * unsupported and how its explicit reset looks on the wire.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { isResponse } from '../../harness/proxy/records.ts';
import { processPhrase } from '../support/client-mode.ts';
import type { SyncWorld } from '../support/world.ts';
import { currentManifest } from './manifests.ts';
import { stateOf } from './state.ts';
import { adoptAsReply, exchangesOf, lastSyncs, requestJson, responseJson } from './traffic.ts';

processPhrase(/^client "([^"]+)" reports the current manifest as its installed schema$/);
processPhrase(/^client "([^"]+)" has stopped in state "[a-z_]+"/);
processPhrase(/^client "([^"]+)" has synced and is in state "[a-z_]+"$/);
processPhrase(/^the application asks client "([^"]+)" to reset its schema and start$/);

interface Inspected {
  schema: { version: number; hash: string } | null;
  clientGeneration: number | null;
}

interface Status {
  status: string;
  failure?: { operation: string; code: string; retryable: boolean; recoveryAction: string };
}

const COMPLETION_STATE: Record<string, string> = { idle: 'ready', error: 'error', blocked: 'backoff' };

Then('client {string} reports the current manifest as its installed schema', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  const manifest = await currentManifest(this);
  const inspected = await client.call<Inspected>('inspectScopes');
  this.assert.equal(inspected.schema, { version: manifest.schema_version, hash: manifest.schema_hash }, `schema installed by client "${name}"`);
});

Then('client {string} sent no rebuild request during that sync', async function (this: SyncWorld, name: string) {
  const [sync] = lastSyncs(this, name);
  const sent = await exchangesOf(this, name, sync?.from, sync?.to);
  this.assert.ok(
    sent.some((e) => e.endpoint === 'connect'),
    `client "${name}" did not connect during that sync, so it never received the schema action`,
  );
  this.assert.equal(
    sent.filter((e) => e.endpoint === 'rebuild').map((e) => requestJson(e)?.scope),
    [],
    `scopes client "${name}" rebuilt during that sync`,
  );
});

Then('client {string} sent no request to {string} or {string}', async function (this: SyncWorld, name: string, first: string, second: string) {
  const [sync] = lastSyncs(this, name);
  const proxy = await this.proxy();
  // These endpoints carry no client id; during that sync only client `name` was talking to the proxy.
  const hits = proxy.exchanges.slice(sync?.from, sync?.to).filter((e) => e.path.split('?')[0] === first || e.path.split('?')[0] === second);
  this.assert.equal(
    hits.map((e) => `${e.method} ${e.path}`),
    [],
    `requests for ${first} or ${second} during the sync of client "${name}"`,
  );
});

Then(/^the scopes client "([^"]+)" sent rebuild requests for during that sync are exactly ((?:"[^"]+"(?:, | and )?)+)$/, async function (this: SyncWorld, name: string, list: string) {
  const expected = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string).sort();
  const [sync] = lastSyncs(this, name);
  const sent = await exchangesOf(this, name, sync?.from, sync?.to);
  const scopes = [...new Set(sent.filter((e) => e.endpoint === 'rebuild').map((e) => String(requestJson(e)?.scope)))].sort();
  this.assert.equal(scopes, expected, `scopes client "${name}" rebuilt during that sync`);
});

Then('each of those syncs ends with completion {string}', function (this: SyncWorld, completion: string) {
  const runs = stateOf(this).syncs.filter((s) => s.to !== -1);
  this.assert.ok(runs.length > 0, 'no sync step ran in this scenario');
  this.assert.equal(
    runs.map((r) => (r.result === undefined ? 'no result' : 'error' in r.result ? `raised ${r.result.error.message}` : r.result.completion)),
    runs.map(() => completion),
    'completion of each sync step',
  );
});

Then('client {string} has stopped in state {string} naming the recovery action {string}', async function (this: SyncWorld, name: string, state: string, action: string) {
  const client = await this.process(name);
  const status = await client.call<Status>('getStatus');
  this.assert.equal({ state: status.status, recoveryAction: status.failure?.recoveryAction }, { state, recoveryAction: action }, `status of client "${name}": ${JSON.stringify(status.failure)}`);
});

Then('client {string} sent no push, pull or rebuild request after the connect that answered unsupported', async function (this: SyncWorld, name: string) {
  const sent = await exchangesOf(this, name);
  const index = sent.findIndex((e) => e.endpoint === 'connect' && (responseJson(e)?.schema as { action?: string } | undefined)?.action === 'unsupported');
  this.assert.ok(index >= 0, `client "${name}" never received an unsupported connect answer`);
  this.assert.equal(
    sent.slice(index + 1).filter((e) => e.endpoint !== 'connect').map((e) => `${e.endpoint} #${e.seq}`),
    [],
    `requests client "${name}" sent after unsupported`,
  );
});

Given('client {string} has synced and is in state {string}', async function (this: SyncWorld, name: string, state: string) {
  const result = await this.syncProcess(name);
  if ('error' in result) throw new Error(`the sync of client "${name}" raised ${result.error.message}`);
  this.assert.equal(result.status, state, `state of client "${name}" after its sync`);
});

When('the application asks client {string} to reset its schema and start', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  const state = stateOf(this);
  const inspected = await client.call<Inspected>('inspectScopes');
  state.beforeReset.set(name, { schema: inspected.schema, clientGeneration: inspected.clientGeneration });
  state.callMarks.set(name, (await this.proxy()).exchanges.length);
  const result = await client.call<{ status: string }>('resetSchemaAndStart');
  this.lastSync.set(name, { completion: result.status === 'ready' ? 'idle' : result.status, status: result.status });
});

function afterMark(world: SyncWorld, name: string): number {
  const mark = stateOf(world).callMarks.get(name);
  if (mark === undefined) throw new Error(`no application call of client "${name}" was marked in this scenario`);
  return mark;
}

Then(
  /^the next connect request of client "([^"]+)" has "\/schema_reset" true, its client_generation and the schema reference it had installed$/,
  async function (this: SyncWorld, name: string) {
    const before = stateOf(this).beforeReset.get(name);
    if (before === undefined) throw new Error(`client "${name}" was not asked to reset in this scenario`);
    const connect = (await exchangesOf(this, name, afterMark(this, name))).find((e) => e.endpoint === 'connect');
    this.assert.ok(connect, `client "${name}" sent no connect request after the reset call`);
    const body = requestJson(connect) ?? {};
    this.assert.ok(before.schema !== null && before.schema.version > 0, `client "${name}" had no installed schema before the reset`);
    this.assert.equal(
      { schema_reset: body.schema_reset, client_generation: body.client_generation, schema: body.schema },
      { schema_reset: true, client_generation: before.clientGeneration, schema: before.schema },
      `the connect request client "${name}" sent for its reset`,
    );
    // Later response assertions speak of the answer to this request.
    adoptAsReply(this, connect);
  },
);

Then(/^client "([^"]+)" rebuilds scopes ((?:"[^"]+"(?:, | and )?)+) and ends with completion "([a-z]+)"$/, async function (this: SyncWorld, name: string, list: string, completion: string) {
  const expected = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string).sort();
  const sent = await exchangesOf(this, name, afterMark(this, name));
  const rebuilt = sent.filter((e) => e.endpoint === 'rebuild' && isResponse(e.delivered) && e.delivered.status === 200 && responseJson(e)?.has_more === false);
  this.assert.equal([...new Set(rebuilt.map((e) => String(requestJson(e)?.scope)))].sort(), expected, `scopes client "${name}" finished rebuilding after the reset`);
  const client = await this.process(name);
  const status = await client.call<Status>('getStatus');
  // The adapter reports the state the run ended in; a run that completes idle rests in "ready".
  this.assert.equal(status.status, COMPLETION_STATE[completion] ?? completion, `state of client "${name}" after the reset run: ${JSON.stringify(status.failure)}`);
});
