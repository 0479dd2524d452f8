/**
 * The schema action a connect answers with, seen from the harness acting as
 * the protocol client: which action for which presented reference, and the
 * members that go with it (inline manifest, affected scopes, cursor updates).
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { schemaManifestHash } from '../../harness/codec/index.ts';
import { isResponse } from '../../harness/proxy/records.ts';
import { member } from '../support/reply.ts';
import type { SyncWorld } from '../support/world.ts';
import { notedManifest } from './manifests.ts';
import { responseJson } from './traffic.ts';

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
  const seen = answered.map((e) => member(responseJson(e), pointer));
  // Every action this scenario provoked must have been seen, so the check cannot pass on an empty log.
  this.assert.equal([...new Set(seen)].sort(), [...ACTIONS].sort(), `actions of the ${answered.length} connect responses recorded`);
  this.assert.equal(
    seen.filter((a) => !allowed.includes(String(a))),
    [],
    'connect responses with an action outside the protocol 3 set',
  );
});
