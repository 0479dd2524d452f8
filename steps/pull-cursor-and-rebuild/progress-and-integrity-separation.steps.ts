/**
 * Steps of SYNC-PULL-016 Progress And Integrity Separation: a genuine final
 * rebuild cursor handed over with a digest that is wrong or missing, a kill
 * between the refused final page and the next attempt, and the checksums a
 * client keeps compared with the server's and with the harness's own digest
 * of the client's rows.
 */
import { Given, Then } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf, exchangesOf } from '../support/exchanges.ts';
import { scopeState } from '../support/integrity/context.ts';
import { armFinalRebuildEdit, armKillAtSecondAttempt, tamperedClient, tamperedScope } from '../support/rebuild-attempts/arming.ts';
import { attemptWithFinalPage, deliveredBody, presentedPullCursors, rebuildAttempts } from '../support/rebuild-attempts/attempts.ts';
import { clientScopeDigest } from '../support/rebuild-attempts/client-digest.ts';
import { member } from '../support/reply.ts';
import { flipFirstHexDigit } from '../support/scope-repair/tamper.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" is armed to crash at "[^"]+" on its second rebuild attempt/);
processPhrase(/^client "([^"]+)" does not report scope/);
processPhrase(/^the checksum client "([^"]+)" inspects for scope "[^"]+" equals the "[^"]+" of the second attempt's final page$/);
processPhrase(/^the cursor client "([^"]+)" inspects for scope "[^"]+" is not the "[^"]+" of the first attempt$/);
processPhrase(/^for scopes "[^"]+" and "[^"]+", the checksum client "([^"]+)" inspects equals (?:the value of that scope in "\/checksums" of the last pull response|the scope digest the harness codec computes from the rows, versions and provenance client "[^"]+" inspects)$/);
processPhrase(/no pull request of client "([^"]+)" presented/);
processPhrase(/^the proxy will (?:flip one hex digit of|remove) "[^"]+" in the next final rebuild response for scope "[^"]+" to client "([^"]+)"$/);

Given('the proxy will flip one hex digit of {string} in the next final rebuild response for scope {string} to client {string}', async function (this: SyncWorld, pointer: string, scope: string, name: string) {
  await armFinalRebuildEdit(this, name, scope, `one hex digit of ${pointer} flipped`, (json) => {
    const value = member(json, pointer);
    if (typeof value !== 'string') throw new Error(`the final rebuild page of ${scope} has no text at ${pointer} to flip`);
    return flipFirstHexDigit(value);
  }, pointer);
});

Given('the proxy will remove {string} in the next final rebuild response for scope {string} to client {string}', async function (this: SyncWorld, pointer: string, scope: string, name: string) {
  await armFinalRebuildEdit(this, name, scope, `${pointer} removed`, () => undefined, pointer);
});

Given('client {string} is armed to crash at {string} on its second rebuild attempt of {string}', async function (this: SyncWorld, name: string, point: string, scope: string) {
  return await armKillAtSecondAttempt(this, name, point, scope);
});

Then(
  'the proxy recorded two rebuild attempts of scope {string} from client {string}, each starting with {string} null and with different {string} values',
  async function (this: SyncWorld, scope: string, name: string, member: string, idMember: string) {
    if (member !== 'cursor' || idMember !== 'rebuild_id') throw new Error(`attempts are told apart by "cursor" and "rebuild_id", not "${member}" and "${idMember}"`);
    const attempts = await rebuildAttempts(this, name, scope);
    this.assert.equal(attempts.length, 2, `rebuild attempts of ${scope} by client "${name}"`);
    const ids = attempts.map((attempt) => attempt.rebuildId);
    for (const attempt of attempts) {
      const own = new Set(attempt.exchanges.map((e) => bodyOf(e.requestBody)?.rebuild_id));
      this.assert.equal([...own], [attempt.rebuildId], `every request of one attempt of ${scope} carries the rebuild_id its first request chose`);
    }
    this.assert.ok(typeof ids[0] === 'string' && typeof ids[1] === 'string' && ids[0] !== ids[1], `the two attempts of ${scope} use different rebuild_id values: ${JSON.stringify(ids)}`);
    this.assert.ok(attempts[0]?.finalPage !== undefined, `the first attempt of ${scope} was given its final page before the client started over`);
  },
);

Then('no pull request of client {string} presented the {string} of the first attempt', async function (this: SyncWorld, name: string, memberName: string) {
  const scope = tamperedScope(this, name);
  const first = await attemptWithFinalPage(this, name, scope, 'first');
  const refused = first.finalPage[memberName];
  this.assert.ok(typeof refused === 'string', `the first attempt's final page carried "${memberName}"`);
  const presenting = (await presentedPullCursors(this, name)).filter((pull) => Object.values(pull.cursors).includes(refused));
  this.assert.equal(presenting.map((pull) => pull.seq), [], `pull requests of client "${name}" that presented the "${memberName}" of the refused attempt of ${scope}`);
});

Then('the first pull request presenting a cursor for {string} presented the {string} of the second attempt', async function (this: SyncWorld, scope: string, memberName: string) {
  const name = tamperedClient(this);
  const second = await attemptWithFinalPage(this, name, scope, 'second');
  const pulls = (await presentedPullCursors(this, name)).filter((pull) => typeof pull.cursors[scope] === 'string');
  this.assert.ok(pulls.length > 0, `client "${name}" presented a cursor for ${scope} in some pull request`);
  this.assert.equal(pulls[0]?.cursors[scope], second.finalPage[memberName], `the cursor of ${scope} in the first pull request presenting one`);
});

Then("the checksum client {string} inspects for scope {string} equals the {string} of the second attempt's final page", async function (this: SyncWorld, name: string, scope: string, memberName: string) {
  const second = await attemptWithFinalPage(this, name, scope, 'second');
  const claimed = second.finalPage[memberName]?.digest;
  this.assert.ok(typeof claimed === 'string', `the second attempt's final page carried "${memberName}"`);
  const state = await scopeState(this, name, scope);
  this.assert.equal(state?.checksum, claimed, `the checksum client "${name}" holds for ${scope}`);
});

Then('the cursor client {string} inspects for scope {string} is not the {string} of the first attempt', async function (this: SyncWorld, name: string, scope: string, memberName: string) {
  const first = await attemptWithFinalPage(this, name, scope, 'first');
  const refused = first.finalPage[memberName];
  this.assert.ok(typeof refused === 'string', `the first attempt's final page carried "${memberName}"`);
  const state = await scopeState(this, name, scope);
  this.assert.notEqual(state?.cursor, refused, `the cursor client "${name}" holds for ${scope} is the one of the refused attempt`);
});

Then('client {string} does not report scope {string} as healthy', async function (this: SyncWorld, name: string, scope: string) {
  const state = await scopeState(this, name, scope);
  this.assert.ok(state !== undefined, `client "${name}" reports scope ${scope}`);
  // Healthy means an installed checksum and no rebuild pending; either missing keeps the scope unhealthy.
  this.assert.ok(state.rebuildRequired || state.checksum === null, `client "${name}" reports ${scope} healthy: ${JSON.stringify(state)}`);
});

Then(
  /^for scopes "([^"]+)" and "([^"]+)", the checksum client "([^"]+)" inspects equals the value of that scope in "\/checksums" of the last pull response$/,
  async function (this: SyncWorld, first: string, second: string, name: string) {
    const pulls = (await exchangesOf(this, name, { endpoints: ['pull'] })).map(deliveredBody).filter((body) => body !== undefined);
    const last = pulls[pulls.length - 1];
    this.assert.ok(last !== undefined, `client "${name}" was given a pull response`);
    for (const scope of [first, second]) {
      const claimed = last.checksums?.[scope]?.digest;
      this.assert.ok(typeof claimed === 'string', `the last pull response to client "${name}" lists a checksum for ${scope}`);
      this.assert.equal((await scopeState(this, name, scope))?.checksum, claimed, `the checksum client "${name}" holds for ${scope}`);
    }
  },
);

Then(
  /^for scopes "([^"]+)" and "([^"]+)", the checksum client "([^"]+)" inspects equals the scope digest the harness codec computes from the rows, versions and provenance client "([^"]+)" inspects$/,
  async function (this: SyncWorld, first: string, second: string, name: string, same: string) {
    if (same !== name) throw new Error(`the checksum of client "${name}" is compared with its own rows, not those of client "${same}"`);
    for (const scope of [first, second]) {
      const { digest, rows } = await clientScopeDigest(this, name, scope);
      this.assert.ok(rows > 0, `client "${name}" holds rows of ${scope} to digest`);
      this.assert.equal((await scopeState(this, name, scope))?.checksum, digest, `the checksum client "${name}" holds for ${scope}, against the codec's digest of its ${rows} rows`);
    }
  },
);

Then(
  /^the proxy recorded a pull response to client "([^"]+)" whose "\/rebuild" contains "([^"]+)" and whose "\/checksums" has a key "([^"]+)"$/,
  async function (this: SyncWorld, name: string, scope: string, key: string) {
    const bodies = (await exchangesOf(this, name, { endpoints: ['pull'] })).map(deliveredBody);
    const found = bodies.some((body) => Array.isArray(body?.rebuild) && body.rebuild.includes(scope) && body.checksums !== null && typeof body.checksums === 'object' && key in body.checksums);
    this.assert.ok(found, `client "${name}" was given a pull response that asks for a rebuild of ${scope} and lists a checksum for ${key}`);
  },
);
