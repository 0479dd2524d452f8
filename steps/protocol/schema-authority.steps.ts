/**
 * SYNC-PROTO-010 Schema Authority
 * (features/protocol/schema-authority.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { schemaManifestHash } from '../../harness/codec/index.ts';
import { isResponse } from '../../harness/proxy/records.ts';
import { processPhrase } from '../support/client-mode.ts';
import { member } from '../support/reply.ts';
import type { Inspected } from '../support/schema-and-versions/client-schema.ts';
import { currentManifest, ident, notedManifest, publishChange } from '../support/schema-and-versions/manifests.ts';
import { stateOf } from '../support/schema-and-versions/state.ts';
import { bodyOf, deliveredOf, exchangesOf, objectBodyOf } from '../support/exchanges.ts';
import { adoptAsReply, lastSyncs } from '../support/schema-and-versions/traffic.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" has stopped in state "[a-z_]+"/);

processPhrase(/^client "([^"]+)" has synced and is in state "[a-z_]+"$/);

processPhrase(/^the application asks client "([^"]+)" to reset its schema and start$/);

interface Status {
  status: string;
  failure?: { operation: string; code: string; retryable: boolean; recoveryAction: string };
}

const COMPLETION_STATE: Record<string, string> = { idle: 'ready', error: 'error', blocked: 'backoff' };

Then('client {string} sent no rebuild request during that sync', async function (this: SyncWorld, name: string) {
  const [sync] = lastSyncs(this, name);
  const sent = await exchangesOf(this, name, { from: sync?.from, to: sync?.to, unfinished: true });
  this.assert.ok(
    sent.some((e) => e.endpoint === 'connect'),
    `client "${name}" did not connect during that sync, so it never received the schema action`,
  );
  this.assert.equal(
    sent.filter((e) => e.endpoint === 'rebuild').map((e) => objectBodyOf(e.requestBody)?.scope),
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
  const sent = await exchangesOf(this, name, { from: sync?.from, to: sync?.to, unfinished: true });
  const scopes = [...new Set(sent.filter((e) => e.endpoint === 'rebuild').map((e) => String(objectBodyOf(e.requestBody)?.scope)))].sort();
  this.assert.equal(scopes, expected, `scopes client "${name}" rebuilt during that sync`);
});

Then('each of those syncs ends with completion {string}', function (this: SyncWorld, completion: string) {
  const runs = this.syncWindows.filter((w) => w.step === 'syncs' && w.to !== undefined);
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
  const sent = await exchangesOf(this, name, { unfinished: true });
  const index = sent.findIndex((e) => e.endpoint === 'connect' && (bodyOf(deliveredOf(e)?.body)?.schema as { action?: string } | undefined)?.action === 'unsupported');
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
    const connect = (await exchangesOf(this, name, { from: afterMark(this, name), unfinished: true })).find((e) => e.endpoint === 'connect');
    this.assert.ok(connect, `client "${name}" sent no connect request after the reset call`);
    const body = objectBodyOf(connect.requestBody) ?? {};
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
  const sent = await exchangesOf(this, name, { from: afterMark(this, name), unfinished: true });
  const rebuilt = sent.filter((e) => e.endpoint === 'rebuild' && isResponse(e.delivered) && e.delivered.status === 200 && bodyOf(deliveredOf(e)?.body)?.has_more === false);
  this.assert.equal([...new Set(rebuilt.map((e) => String(objectBodyOf(e.requestBody)?.scope)))].sort(), expected, `scopes client "${name}" finished rebuilding after the reset`);
  const client = await this.process(name);
  const status = await client.call<Status>('getStatus');
  // The adapter reports the state the run ended in; a run that completes idle rests in "ready".
  this.assert.equal(status.status, COMPLETION_STATE[completion] ?? completion, `state of client "${name}" after the reset run: ${JSON.stringify(status.failure)}`);
});

const ACTIONS = ['none', 'replace', 'rebuild_local', 'unsupported'];

Then(
  /^the response member "([^"]+)" has the "version" and "hash" of manifest (S\d+) and "action" equal to "([a-z_]+)"$/,
  function (this: SyncWorld, pointer: string, label: string, action: string) {
    const manifest = notedManifest(this, label);
    const reply = this.lastReply();
    const schema = member(reply.json, pointer) as Record<string, unknown> | undefined;
    this.assert.equal(
      { version: schema?.version, hash: schema?.hash, action: schema?.action },
      { version: manifest.schema_version, hash: manifest.schema_hash, action },
      `member ${pointer} of the ${reply.endpoint} response ${reply.text.slice(0, 400)}`,
    );
  },
);

Then(/^the response member "([^"]+)" is the manifest (S\d+), whose recomputed schema hash equals \2\.hash$/, function (this: SyncWorld, pointer: string, label: string) {
  const manifest = notedManifest(this, label);
  const reply = this.lastReply();
  const inline = member(reply.json, pointer);
  this.assert.equal(inline, manifest, `member ${pointer} is not the manifest noted as ${label}`);
  this.assert.equal(schemaManifestHash(inline).hash, manifest.schema_hash, `the hash the harness codec recomputes over ${pointer}`);
});

// Cucumber passes only top-level groups, so the two forms are two alternatives of one group each.
Then(/^the response member "([^"]+)" is (?:equal to (.+)|(absent))$/, function (this: SyncWorld, pointer: string, json: string | undefined, absent: string | undefined) {
  const reply = this.lastReply();
  const actual = member(reply.json, pointer);
  if (absent === 'absent') this.assert.equal(actual, undefined, `the ${reply.endpoint} response has member ${pointer}: ${reply.text.slice(0, 400)}`);
  else this.assert.equal(actual, JSON.parse(json as string), `member ${pointer} of the ${reply.endpoint} response ${reply.text.slice(0, 400)}`);
});

Then('the response has a member {string}', function (this: SyncWorld, present: string) {
  const reply = this.lastReply();
  this.assert.notEqual(member(reply.json, present), undefined, `the ${reply.endpoint} response lacks ${present}: ${reply.text.slice(0, 400)}`);
});

Then('the response has a member {string} and no member {string}', function (this: SyncWorld, present: string, absent: string) {
  const reply = this.lastReply();
  this.assert.notEqual(member(reply.json, present), undefined, `the ${reply.endpoint} response lacks ${present}: ${reply.text.slice(0, 400)}`);
  this.assert.equal(member(reply.json, absent), undefined, `the ${reply.endpoint} response has ${absent}: ${reply.text.slice(0, 400)}`);
});

Then(
  /^the response member "([^"]+)" maps "([^"]+)" to null when it is affected and every unaffected scope to a non-null cursor$/,
  function (this: SyncWorld, pointer: string, scope: string) {
    const reply = this.lastReply();
    const updates = member(reply.json, pointer) as Record<string, unknown> | undefined;
    this.assert.ok(updates !== null && typeof updates === 'object', `the ${reply.endpoint} response has no object ${pointer}: ${reply.text.slice(0, 400)}`);
    const affected = (member(reply.json, '/affected_scopes') as string[] | undefined) ?? [];
    // Every scope the client presented must appear: null exactly when affected, a current-schema cursor otherwise.
    const presented = Object.keys((JSON.parse(reply.requestText) as { known_scopes?: object }).known_scopes ?? {}).sort();
    const kept = [...new Set([...presented, ...Object.keys(updates)])].sort();
    this.assert.ok(presented.length > 0, `the connect presented no scope to carry over: ${reply.requestText.slice(0, 400)}`);
    this.assert.ok(!affected.includes(scope) || kept.includes(scope), `affected scope ${scope} was not presented`);
    const expected = Object.fromEntries(kept.map((s) => [s, affected.includes(s) ? null : 'a cursor']));
    const actual = Object.fromEntries(kept.map((s) => [s, updates[s] === null ? null : typeof updates[s] === 'string' && updates[s] !== '' ? 'a cursor' : updates[s]]));
    this.assert.equal(actual, expected, `${pointer} against affected_scopes ${JSON.stringify(affected)}`);
  },
);

Then(/^the response member "([^"]+)" maps ((?:"[^"]+"(?:, | and )?)+) to null$/, function (this: SyncWorld, pointer: string, list: string) {
  const scopes = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
  const reply = this.lastReply();
  const updates = member(reply.json, pointer) as Record<string, unknown> | undefined;
  this.assert.equal(
    Object.fromEntries(scopes.map((s) => [s, updates?.[s]])),
    Object.fromEntries(scopes.map((s) => [s, null])),
    `${pointer} of the ${reply.endpoint} response ${reply.text.slice(0, 400)}`,
  );
});

When(/^client "([^"]+)" connects presenting (?:its installed schema reference|the schema reference (\{.*\}))$/, async function (this: SyncWorld, name: string, json: string | undefined) {
  const client = this.wire(name);
  // The harness client keeps its installed reference through an unsupported answer, as a client must.
  await client.connect(json == null ? undefined : { schema: JSON.parse(json) });
});

When(/^client "([^"]+)" connects with "schema_reset" true, its client_generation and its installed schema reference$/, async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  this.assert.ok(client.generation !== undefined && client.schema.version > 0, `client "${name}" has no generation or installed schema to present`);
  await client.connect({ schema_reset: true });
});

Given('the harness has connected client {string} of user {string} with the fresh sentinel', async function (this: SyncWorld, name: string, user: string) {
  await this.readyServer();
  const client = this.newWire(name, user);
  // The outline's raw bodies name this identity, so the harness client takes exactly that id.
  client.reset(name);
  const reply = await client.connect();
  this.assert.equal({ status: reply.status, action: reply.json?.schema?.action }, { status: 200, action: 'replace' }, `fresh connect of ${name}: ${reply.text.slice(0, 300)}`);
});

Given('client {string} has connected and was answered {string}', async function (this: SyncWorld, name: string, action: string) {
  const reply = await this.wire(name).connect();
  this.assert.equal({ status: reply.status, action: reply.json?.schema?.action }, { status: 200, action }, `connect of client "${name}": ${reply.text.slice(0, 300)}`);
});

/** `"ptr" set to VALUE, "ptr" set to VALUE and "ptr" set to VALUE` (values are JSON without ", " inside). */
function assignments(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const part of text.split(/, (?=")| and (?=")/)) {
    const m = /^"([^"]+)" set to (.+)$/.exec(part.trim());
    if (!m) throw new Error(`cannot read "${part}" as "<member>" set to <JSON value>`);
    out[m[1] as string] = JSON.parse(m[2] as string);
  }
  return out;
}

When(/^client "([^"]+)" sends its next connect request without "([^"]+)" and with (.+)$/, async function (this: SyncWorld, name: string, removed: string, rest: string) {
  const patch: Record<string, unknown> = { [removed]: undefined, ...assignments(rest) };
  // A protocol misuse on purpose: its request side is not held against the server.
  await this.wire(name).connect(patch, { invalid: true });
});

Then(/^across every connect response recorded in this scenario, "([^"]+)" is one of ((?:"[a-z_]+"(?:, | and )?)+)$/, async function (this: SyncWorld, pointer: string, list: string) {
  const allowed = [...list.matchAll(/"([a-z_]+)"/g)].map((m) => m[1] as string);
  this.assert.equal(allowed, ACTIONS, 'the feature lists the four protocol 3 actions');
  const proxy = await this.proxy();
  const answered = proxy.exchanges.filter((e) => e.endpoint === 'connect' && isResponse(e.delivered) && e.delivered.status === 200);
  const seen = answered.map((e) => member(bodyOf(deliveredOf(e)?.body), pointer));
  // Every action this scenario provoked must have been seen, so the check cannot pass on an empty log.
  this.assert.equal([...new Set(seen)].sort(), [...ACTIONS].sort(), `actions of the ${answered.length} connect responses recorded`);
  this.assert.equal(
    seen.filter((a) => !allowed.includes(String(a))),
    [],
    'connect responses with an action outside the protocol 3 set',
  );
});

Given(/^the harness notes the current manifest as (S\d+)$/, async function (this: SyncWorld, label: string) {
  stateOf(this).manifests.set(label, await currentManifest(this));
});

Given(/^the server publishes a class 4 manifest that removes column "([^"]+)" from table "([^"]+)"$/, async function (this: SyncWorld, column: string, tableName: string) {
  const table = this.model.table(tableName);
  await this.readyServer();
  await publishChange(this, tableName, `ALTER TABLE public.${ident(tableName)} DROP COLUMN ${ident(column)};`, 'class_4');
  const index = table.columns.findIndex((c) => c.name === column);
  if (index >= 0) table.columns.splice(index, 1);
});

Given('nothing else changes', function (this: SyncWorld) {
  // The outline row whose lineage is left as it is: nothing to do, on purpose.
});
