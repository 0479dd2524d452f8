/**
 * Steps of SYNC-PULL-017 Final Pull Checksum Requirement: the terminal page
 * of a harness client's drain checked against the harness's own digest of
 * what that client received, and a client under test given a terminal page
 * that lost a change or carries a damaged digest, with its cursors,
 * checksums, rebuild flags and later requests compared with that page.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { clientIdOf, exchangesIn, objectBodyOf } from '../support/exchanges.ts';
import { scopeState, scopeStates } from '../support/integrity/context.ts';
import { deliveredBody } from '../support/integrity/oracle.ts';
import { lastDrain } from '../support/pull-drains/drain.ts';
import { heldScopeDigest } from '../support/terminal-checksums/harness-holdings.ts';
import { heldRebuildOf, holdNextRebuild, releaseAndFinish, startSyncing } from '../support/terminal-checksums/held-rebuild.ts';
import { issuedCursor, presentedCursor, recordCursors, recordedCursor, tamperedPull } from '../support/terminal-checksums/tampered-pull.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the harness has recorded the cursors client "([^"]+)" inspects as/);
processPhrase(/^client "([^"]+)" starts syncing$/);
processPhrase(/^the proxy will hold the next rebuild request from client "([^"]+)"$/);
processPhrase(/^(?:no later|the next) pull request of client "([^"]+)" presented/);
processPhrase(/^for every scope, the cursor client "([^"]+)" inspects/);

type Checksums = Record<string, Record<string, unknown>>;

function terminalChecksums(world: SyncWorld): Checksums {
  const last = lastDrain(world).at(-1);
  const checksums = last?.json?.checksums;
  world.assert.ok(checksums !== null && typeof checksums === 'object' && !Array.isArray(checksums), `the last page of the drain carries a "checksums" object: ${last?.text.slice(0, 400)}`);
  return checksums as Checksums;
}

Then('the last response of the drain has member {string} with exactly the keys {string} and {string}', function (this: SyncWorld, pointer: string, first: string, second: string) {
  if (pointer !== '/checksums') throw new Error(`the terminal map is "/checksums", not "${pointer}"`);
  this.assert.equal(Object.keys(terminalChecksums(this)).sort(), [first, second].sort(), 'the keys of "/checksums" on the last page of the drain');
});

Then(
  /^each value of "\/checksums" in the last response equals the scope digest the harness computes from the rows "([^"]+)" now holds for that scope$/,
  async function (this: SyncWorld, name: string) {
    const checksums = terminalChecksums(this);
    this.assert.ok(Object.keys(checksums).length > 0, 'the last page of the drain lists at least one scope checksum');
    for (const [scope, claimed] of Object.entries(checksums)) {
      const { digest, rows } = await heldScopeDigest(this, name, scope);
      this.assert.equal(claimed?.digest, digest, `the terminal digest of ${scope}, against the codec's digest of the ${rows} rows harness client "${name}" received for it`);
    }
  },
);

Then(
  /^each value of "\/checksums" in the last response has exactly the members "algorithm" "([^"]+)", "version" (\d+), "encoding" "([^"]+)" and a 64-character lowercase hex "digest"$/,
  function (this: SyncWorld, algorithm: string, version: string, encoding: string) {
    const checksums = terminalChecksums(this);
    this.assert.ok(Object.keys(checksums).length > 0, 'the last page of the drain lists at least one scope checksum');
    for (const [scope, value] of Object.entries(checksums)) {
      this.assert.equal(Object.keys(value ?? {}).sort(), ['algorithm', 'digest', 'encoding', 'version'], `the members of the checksum of ${scope}`);
      this.assert.equal({ algorithm: value?.algorithm, version: value?.version, encoding: value?.encoding }, { algorithm, version: Number(version), encoding }, `the checksum object of ${scope}`);
      this.assert.ok(typeof value?.digest === 'string' && /^[0-9a-f]{64}$/.test(value.digest), `the digest of ${scope} is 64 lowercase hex characters: ${JSON.stringify(value?.digest)}`);
    }
  },
);

// "Issued to it" counts every cursor the client was given, in log order: a pull's scope cursor or a rebuild's final cursor.
Then('for every scope, the cursor client {string} inspects equals the last cursor the server issued to it for that scope', async function (this: SyncWorld, name: string) {
  const proxy = await this.proxy();
  const issued = new Map<string, string>();
  for (const exchange of exchangesIn(proxy.exchanges, { clientId: await clientIdOf(this, name), endpoints: ['pull', 'rebuild'] })) {
    const body = deliveredBody(exchange);
    if (body === undefined) continue;
    if (exchange.endpoint === 'rebuild' && typeof body.final_scope_cursor === 'string') issued.set(String(body.scope), body.final_scope_cursor);
    for (const [scope, cursor] of Object.entries((body.scope_cursors ?? {}) as Record<string, unknown>)) if (typeof cursor === 'string') issued.set(scope, cursor);
  }
  const states = await scopeStates(this, name);
  this.assert.ok(states.length > 0, `client "${name}" reports its scopes`);
  for (const state of states) {
    this.assert.ok(issued.has(state.scopeId), `the server issued client "${name}" a cursor for ${state.scopeId}`);
    this.assert.equal(state.cursor, issued.get(state.scopeId), `the cursor client "${name}" holds for ${state.scopeId}`);
  }
});

Given('the harness has recorded the cursors client {string} inspects as {string}', async function (this: SyncWorld, name: string, label: string) {
  await recordCursors(this, name, label);
});

Then('no later pull request of client {string} presented the cursor issued for {string} in that pull response', async function (this: SyncWorld, name: string, scope: string) {
  const pull = await tamperedPull(this, name);
  const refused = issuedCursor(this, pull, scope);
  const later = pull.later.filter((e) => e.endpoint === 'pull');
  this.assert.ok(later.length > 0, `client "${name}" pulled again after the rewritten pull response`);
  this.assert.equal(later.filter((e) => presentedCursor(e, scope) === refused).map((e) => e.seq), [], `later pull requests of client "${name}" that presented the cursor issued for ${scope} in the rewritten response`);
});

Then('the next pull request of client {string} presented for {string} the cursor issued for {string} in that pull response', async function (this: SyncWorld, name: string, scope: string, same: string) {
  if (same !== scope) throw new Error(`the cursor presented for ${scope} is compared with the one issued for ${scope}, not ${same}`);
  const pull = await tamperedPull(this, name);
  const next = pull.later.find((e) => e.endpoint === 'pull');
  this.assert.ok(next !== undefined, `client "${name}" pulled again after the rewritten pull response`);
  this.assert.equal(presentedCursor(next, scope), issuedCursor(this, pull, scope), `the cursor client "${name}" presented for ${scope} in its next pull request (#${next?.seq})`);
});

Then('the proxy recorded no rebuild request from client {string} for scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const pull = await tamperedPull(this, name);
  const rebuilds = pull.later.filter((e) => e.endpoint === 'rebuild');
  this.assert.ok(rebuilds.length > 0, `client "${name}" sent some rebuild request after the rewritten pull response (the scope it damaged)`);
  this.assert.equal(rebuilds.filter((e) => objectBodyOf(e.requestBody)?.scope === scope).map((e) => e.seq), [], `rebuild requests for ${scope} client "${name}" sent after the rewritten pull response`);
});

Given('the proxy will hold the next rebuild request from client {string}', async function (this: SyncWorld, name: string) {
  await holdNextRebuild(this, name);
});

When('client {string} starts syncing', async function (this: SyncWorld, name: string) {
  await startSyncing(this, name);
});

When('the proxy has received a rebuild request for scope {string} from client {string}', async function (this: SyncWorld, scope: string, name: string) {
  await heldRebuildOf(this, name, scope);
});

When('the proxy releases the held request', async function (this: SyncWorld) {
  await releaseAndFinish(this);
});

// Decision 142: a mismatched scope loses its resumable state; the cursor it held before may stay or be dropped, the page's never installed.
Then(
  'the cursor client {string} inspects for scope {string} is the {string} one or none, never the one issued for it in that pull response',
  async function (this: SyncWorld, name: string, scope: string, label: string) {
    const refused = issuedCursor(this, await tamperedPull(this, name), scope);
    const old = recordedCursor(this, name, label, scope);
    this.assert.ok(typeof old === 'string' && old !== refused, `client "${name}" held a cursor for ${scope} as "${label}", other than the one the rewritten response issued`);
    const state = await scopeState(this, name, scope);
    this.assert.ok(state !== undefined, `client "${name}" reports scope ${scope}`);
    this.assert.ok(state.cursor === old || state.cursor === null, `the cursor client "${name}" holds for ${scope} is ${JSON.stringify(state.cursor)}: neither the "${label}" one nor none (the rewritten response issued ${JSON.stringify(refused)})`);
  },
);

Then('client {string} reports scope {string} as requiring rebuild', async function (this: SyncWorld, name: string, scope: string) {
  const state = await scopeState(this, name, scope);
  this.assert.ok(state !== undefined, `client "${name}" reports scope ${scope}`);
  this.assert.equal(state.rebuildRequired, true, `client "${name}" reports ${scope} as requiring rebuild: ${JSON.stringify(state)}`);
});

Then('the cursor client {string} inspects for scope {string} equals the cursor issued for {string} in that pull response', async function (this: SyncWorld, name: string, scope: string, same: string) {
  if (same !== scope) throw new Error(`the cursor of ${scope} is compared with the one issued for ${scope}, not ${same}`);
  const issued = issuedCursor(this, await tamperedPull(this, name), scope);
  this.assert.equal((await scopeState(this, name, scope))?.cursor, issued, `the cursor client "${name}" holds for ${scope}`);
});

Then(
  /^the checksum client "([^"]+)" inspects for scope "([^"]+)" equals the value of "([^"]+)" in "\/checksums" of that pull response$/,
  async function (this: SyncWorld, name: string, scope: string, same: string) {
    if (same !== scope) throw new Error(`the checksum of ${scope} is compared with the one listed for ${scope}, not ${same}`);
    const pull = await tamperedPull(this, name);
    const claimed = (pull.body.checksums as Checksums | undefined)?.[scope]?.digest;
    this.assert.ok(typeof claimed === 'string', `the rewritten pull response lists a checksum for ${scope}`);
    const state = await scopeState(this, name, scope);
    this.assert.equal({ checksum: state?.checksum, rebuildRequired: state?.rebuildRequired }, { checksum: claimed, rebuildRequired: false }, `the checksum and rebuild flag client "${name}" holds for ${scope}`);
  },
);
