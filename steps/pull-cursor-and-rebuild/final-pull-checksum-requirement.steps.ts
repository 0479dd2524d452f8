/**
 * Steps of SYNC-PULL-017 Final Pull Checksum Requirement: the keys and shape
 * of the terminal checksums of a harness client's drain (their digests are
 * checked by the shared step in steps/common/wire-pulls.steps.ts), and a
 * client under test given a terminal page that lost a change or carries a
 * damaged digest ("that pull response": the one the proxy rewrote), with its
 * cursors, checksums, rebuild flags and later requests compared with that page.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { objectBodyOf } from '../support/exchanges.ts';
import { scopeState } from '../support/integrity/context.ts';
import { lastDrain } from '../support/pull-drains/drain.ts';
import { recordedCursors } from '../support/scope-cursors/cursors.ts';
import { issuedCursor, presentedCursor, thatPullResponse } from '../support/scope-cursors/that-pull-response.ts';
import { heldRebuildOf, holdNextRebuild, releaseAndFinish, startSyncing } from '../support/terminal-checksums/held-rebuild.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" starts syncing$/);
processPhrase(/^the proxy will hold the next rebuild request from client "([^"]+)"$/);
processPhrase(/^(?:no later|the next) pull request of client "([^"]+)" presented/);
processPhrase(/^the checksum client "([^"]+)" inspects for scope "[^"]+" equals the value of "[^"]+" in "\/checksums" of that pull response$/);
processPhrase(/^the cursor client "([^"]+)" inspects for scope "[^"]+" is the "[^"]+" one or none, never the one issued for it in that pull response$/);

type Checksums = Record<string, Record<string, unknown>>;

function terminalChecksums(world: SyncWorld): Checksums {
  const last = lastDrain(world).at(-1);
  const checksums = last?.json?.checksums;
  world.assert.ok(checksums !== null && typeof checksums === 'object' && !Array.isArray(checksums), `the last page of the drain carries a "checksums" object: ${last?.text.slice(0, 400)}`);
  return checksums as Checksums;
}

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

Then('no later pull request of client {string} presented the cursor issued for {string} in that pull response', async function (this: SyncWorld, name: string, scope: string) {
  const pull = await thatPullResponse(this, name);
  const refused = issuedCursor(this, pull, scope);
  const later = pull.later.filter((e) => e.endpoint === 'pull');
  this.assert.ok(later.length > 0, `client "${name}" pulled again after that pull response`);
  this.assert.equal(later.filter((e) => presentedCursor(e, scope) === refused).map((e) => e.seq), [], `later pull requests of client "${name}" that presented the cursor issued for ${scope} in that pull response`);
});

Then('the next pull request of client {string} presented for {string} the cursor issued for {string} in that pull response', async function (this: SyncWorld, name: string, scope: string, same: string) {
  if (same !== scope) throw new Error(`the cursor presented for ${scope} is compared with the one issued for ${scope}, not ${same}`);
  const pull = await thatPullResponse(this, name);
  const next = pull.later.find((e) => e.endpoint === 'pull');
  this.assert.ok(next !== undefined, `client "${name}" pulled again after that pull response`);
  this.assert.equal(presentedCursor(next, scope), issuedCursor(this, pull, scope), `the cursor client "${name}" presented for ${scope} in its next pull request (#${next?.seq})`);
});

Then('the proxy recorded no rebuild request from client {string} for scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const pull = await thatPullResponse(this, name);
  const rebuilds = pull.later.filter((e) => e.endpoint === 'rebuild');
  this.assert.ok(rebuilds.length > 0, `client "${name}" sent some rebuild request after that pull response (the scope it damaged)`);
  this.assert.equal(rebuilds.filter((e) => objectBodyOf(e.requestBody)?.scope === scope).map((e) => e.seq), [], `rebuild requests for ${scope} client "${name}" sent after that pull response`);
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
    const refused = issuedCursor(this, await thatPullResponse(this, name), scope);
    const recorded = recordedCursors(this, label);
    if (!recorded.has(scope)) throw new Error(`the cursors recorded as "${label}" hold no entry for ${scope}`);
    const old = recorded.get(scope);
    this.assert.ok(typeof old === 'string' && old !== refused, `client "${name}" held a cursor for ${scope} as "${label}", other than the one that pull response issued`);
    const state = await scopeState(this, name, scope);
    this.assert.ok(state !== undefined, `client "${name}" reports scope ${scope}`);
    this.assert.ok(state.cursor === old || state.cursor === null, `the cursor client "${name}" holds for ${scope} is ${JSON.stringify(state.cursor)}: neither the "${label}" one nor none (that pull response issued ${JSON.stringify(refused)})`);
  },
);

Then('client {string} reports scope {string} as requiring rebuild', async function (this: SyncWorld, name: string, scope: string) {
  const state = await scopeState(this, name, scope);
  this.assert.ok(state !== undefined, `client "${name}" reports scope ${scope}`);
  this.assert.equal(state.rebuildRequired, true, `client "${name}" reports ${scope} as requiring rebuild: ${JSON.stringify(state)}`);
});

Then(
  /^the checksum client "([^"]+)" inspects for scope "([^"]+)" equals the value of "([^"]+)" in "\/checksums" of that pull response$/,
  async function (this: SyncWorld, name: string, scope: string, same: string) {
    if (same !== scope) throw new Error(`the checksum of ${scope} is compared with the one listed for ${scope}, not ${same}`);
    const pull = await thatPullResponse(this, name);
    const claimed = (pull.body.checksums as Checksums | undefined)?.[scope]?.digest;
    this.assert.ok(typeof claimed === 'string', `that pull response lists a checksum for ${scope}`);
    const state = await scopeState(this, name, scope);
    this.assert.equal({ checksum: state?.checksum, rebuildRequired: state?.rebuildRequired }, { checksum: claimed, rebuildRequired: false }, `the checksum and rebuild flag client "${name}" holds for ${scope}`);
  },
);
