/**
 * SYNC-PULL-018 Complete Terminal Checksum Maps: which pages of a drain carry
 * "checksums", the exact key set of a terminal map, and its values against
 * the harness codec (over a fresh rebuild of a scope the client does not hold
 * yet, or over the rows the harness client was given); and, for a client
 * given a terminal page whose map was damaged in flight ("the damaged pull
 * response": the one pull answer the proxy rewrote), the cursors and rebuild
 * requests it sent afterwards.
 */
import { Given, Then, } from '@cucumber/cucumber';
import type { Exchange } from '../../harness/proxy/records.ts';
import { processPhrase } from '../support/client-mode.ts';
import { clientIdOf, exchangesOf, objectBodyOf } from '../support/exchanges.ts';
import { deliveredBody, type Obj, parseStrict } from '../support/integrity/oracle.ts';
import { lastDrain } from '../support/pull-drains/drain.ts';
import { heldRows } from '../support/pull-eligibility/held-rows.ts';
import { codecScopeDigest, presentedSchemaHash, scopeRowOf } from '../support/rebuild-runs/digests.ts';
import type { Reply } from '../support/reply.ts';
import { member } from '../support/reply.ts';
import { copyMemberRule, upperCaseRule } from '../support/terminal-checksums/map-rewrites.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

const _pointerOf = (scope: string) => `/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`;
const _quotedList = (text: string) => [...text.matchAll(/"([^"]*)"/g)].map((m) => m[1] as string);
const checksumOf = (digest: string) => ({ algorithm: 'sha256', version: 1, encoding: 'hex', digest });

Then('no response of the drain except the last has a member {string}', function (this: SyncWorld, name: string) {
  const pages = lastDrain(this);
  this.assert.ok(pages.length > 1, `the drain took ${pages.length} response, so no page came before its last`);
  const carrying = pages.slice(0, -1).map((page, index) => (page.json !== undefined && Object.hasOwn(page.json, name) ? index + 1 : 0)).filter((n) => n > 0);
  this.assert.equal(carrying, [], `responses of the drain before its last that have a member "${name}"`);
});

// The scope is not on the client yet; a rebuild of it (which acknowledges nothing) shows its rows at their current versions.
Then(
  /^the value of "\/checksums\/([^"]+)" equals the scope digest the harness codec computes for scope "([^"]+)" holding exactly row "([^"]+)" at its current version$/,
  async function (this: SyncWorld, keyed: string, scope: string, row: string) {
    if (keyed !== scope) throw new Error(`the entry of ${keyed} is compared with the digest of ${keyed}, not of ${scope}`);
    const reply = this.lastReply();
    const name = [...this.clientUsers.keys()].find((n) => this.hasWire(n) && reply.requestText.includes(`"client_id":"${this.wire(n).clientId}"`));
    if (name === undefined) throw new Error('no harness client sent the last request');
    const claimed = member(reply.json, `/checksums/${scope}`);
    const client = this.wire(name);
    const held = client.cursors.get(scope);
    const run = await client.rebuildAll(scope);
    // The check only looks: the client goes on with the cursor it had, as if it never saw this rebuild.
    if (client.cursors.has(scope)) client.cursors.set(scope, held ?? null);
    const final = run.pages[run.pages.length - 1] as Reply;
    if (final.status !== 200) throw new Error(`the rebuild of ${scope} was answered ${final.status}: ${final.text.slice(0, 500)}`);
    const records = run.records as Record<string, unknown>[];
    this.assert.equal(records.map((r) => String(keyValue(r.pk))), [row], `the rows of ${scope} now`);
    const digest = await codecScopeDigest(this, scope, presentedSchemaHash(reply.requestText), records.map(scopeRowOf));
    this.assert.equal(claimed, checksumOf(digest), `"/checksums/${scope}" of that response against the codec over row ${row}`);
  },
);

Then('each value of {string} equals the scope digest the harness computes from the rows {string} holds for that scope', async function (this: SyncWorld, pointer: string, name: string) {
  if (pointer !== '/checksums') throw new Error(`terminal scope digests are in "/checksums", not "${pointer}"`);
  const reply = this.lastReply();
  this.assert.equal(`${reply.endpoint} ${reply.status} has_more=${reply.json?.has_more}`, 'pull 200 has_more=false', `the last response: ${reply.text.slice(0, 500)}`);
  const checksums = (reply.json?.checksums ?? {}) as Record<string, unknown>;
  this.assert.ok(Object.keys(checksums).length > 0, 'the last response has checksums to compare');
  const held = await heldRows(this, name);
  const schemaHash = presentedSchemaHash(reply.requestText);
  for (const [scope, checksum] of Object.entries(checksums)) {
    const rows = [...(held.get(scope)?.values() ?? [])];
    this.assert.equal(checksum, checksumOf(await codecScopeDigest(this, scope, schemaHash, rows)), `"/checksums/${scope}" over the ${rows.length} rows client "${name}" holds for it`);
  }
});

processPhrase(/^the proxy will set "[^"]+" to (?:the value of "[^"]+"|its upper-case form) in the next pull response to client "([^"]+)"$/);

Given('the proxy will set {string} to the value of {string} in the next pull response to client {string}', async function (this: SyncWorld, target: string, source: string, name: string) {
  await this.readyServer();
  (await this.proxy()).inject(copyMemberRule(await clientIdOf(this, name), target, source));
});

Given('the proxy will set {string} to its upper-case form in the next pull response to client {string}', async function (this: SyncWorld, pointer: string, name: string) {
  await this.readyServer();
  (await this.proxy()).inject(upperCaseRule(await clientIdOf(this, name), pointer));
});

Then('the proxy recorded that the rewritten pull response had {string} true', async function (this: SyncWorld, pointer: string) {
  const rewritten = (await this.proxy()).exchanges.filter((e) => e.endpoint === 'pull' && e.rewritten !== undefined);
  this.assert.equal(rewritten.length, 1, `pull responses the proxy rewrote in this scenario: ${rewritten.map((e) => e.rewritten?.describe).join('; ')}`);
  const original = parseStrict((rewritten[0] as (typeof rewritten)[number]).rewritten?.originalBody ?? Buffer.from(''));
  this.assert.equal(member(original, pointer), true, `"${pointer}" of the pull response the server sent before the proxy rewrote it`);
});

processPhrase(/^(?:no pull request )?client "([^"]+)" sent (?:after|a rebuild request for scope "[^"]+" after) the damaged pull response/);

/** The one pull answer to client `name` the proxy rewrote, as the client was given it, and the client's exchanges after it. */
async function damagedPull(world: SyncWorld, name: string): Promise<{ seq: number; body: Obj; later: Exchange[] }> {
  const mine = await exchangesOf(world, name);
  const rewritten = mine.filter((e) => e.endpoint === 'pull' && e.rewritten !== undefined && e.rewritten.error === undefined);
  if (rewritten.length !== 1) throw new Error(`the proxy rewrote ${rewritten.length} pull answers to client "${name}", not exactly one damaged pull response`);
  const exchange = rewritten[0] as Exchange;
  const body = deliveredBody(exchange);
  if (body === undefined) throw new Error(`the damaged pull response to client "${name}" (#${exchange.seq}) was not delivered as a 200 JSON body`);
  return { seq: exchange.seq, body, later: mine.filter((e) => e.seq > exchange.seq) };
}

const presentedFor = (e: Exchange, scope: string): unknown => (objectBodyOf(e.requestBody)?.scopes as Record<string, { cursor?: unknown }> | undefined)?.[scope]?.cursor;

// The client's own later requests show whether it took the page's cursor for the scope whose digest failed.
Then(
  'no pull request client {string} sent after the damaged pull response presented for scope {string} the cursor that response issued for it',
  async function (this: SyncWorld, name: string, scope: string) {
    const damaged = await damagedPull(this, name);
    const issued = (damaged.body.scope_cursors as Obj | undefined)?.[scope];
    this.assert.ok(typeof issued === 'string', `the damaged pull response (#${damaged.seq}) issued a cursor for ${scope}: ${JSON.stringify(damaged.body.scope_cursors)}`);
    const presenting = damaged.later.filter((e) => e.endpoint === 'pull' && presentedFor(e, scope) !== undefined);
    this.assert.ok(presenting.length > 0, `client "${name}" presented a cursor for ${scope} in some pull request after the damaged pull response (#${damaged.seq})`);
    this.assert.equal(
      presenting.filter((e) => presentedFor(e, scope) === issued).map((e) => e.seq),
      [],
      `pull requests of client "${name}" after #${damaged.seq} that presented for ${scope} the cursor #${damaged.seq} issued for it`,
    );
  },
);

Then('client {string} sent a rebuild request for scope {string} after the damaged pull response', async function (this: SyncWorld, name: string, scope: string) {
  const damaged = await damagedPull(this, name);
  const rebuilds = damaged.later.filter((e) => e.endpoint === 'rebuild').map((e) => objectBodyOf(e.requestBody)?.scope);
  this.assert.ok(rebuilds.includes(scope), `the scopes of the rebuild requests client "${name}" sent after the damaged pull response (#${damaged.seq}): ${JSON.stringify(rebuilds)}`);
});
