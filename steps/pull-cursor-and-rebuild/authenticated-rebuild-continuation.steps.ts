/**
 * Steps of SYNC-PULL-011 Authenticated Rebuild Continuation: the harness
 * client presents its rebuild continuation altered, carried to another
 * rebuild, scope, client or user, or with another page limit, and moves the
 * server clock around the session's 24-hour expiry.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { advanceClock } from '../support/mutations/ledger-retention.ts';
import { latestPagedRebuild } from '../support/rebuild-runs/paged.ts';
import { alteredContinuation, carryContinuation, continuationState, genuineContinuation, presentContinuation, requestNextPageWithLimit } from '../support/rebuild-continuations/continuation.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import type { SyncWorld } from '../support/world.ts';

const UNIT_MS: Record<string, number> = { minute: 60_000, minutes: 60_000, hour: 3_600_000, hours: 3_600_000 };

Given(
  /^the harness client "([^"]+)" has sent the next rebuild request of that rebuild with "cursor" set to "([^"]*)" and recorded the error body as "([^"]+)"$/,
  async function (this: SyncWorld, name: string, cursor: string, label: string) {
    const reply = await presentContinuation(this, name, cursor);
    if (reply.status !== 400) throw new Error(`a rebuild request presenting the cursor "${cursor}" was answered ${reply.status}, not 400: ${reply.text.slice(0, 500)}`);
    continuationState(this).errorBodies.set(label, reply.text);
  },
);

When(/^the harness client "([^"]+)" requests the next page of that rebuild presenting its continuation (.+)$/, async function (this: SyncWorld, name: string, alteration: string) {
  const genuine = genuineContinuation(latestPagedRebuild(this, name));
  const altered = alteredContinuation(this, name, genuine, alteration);
  if (altered === genuine) throw new Error(`the alteration "${alteration}" left the continuation unchanged`);
  await presentContinuation(this, name, altered);
});

Then('the error body is byte-identical to the {string} error body', function (this: SyncWorld, label: string) {
  const recorded = continuationState(this).errorBodies.get(label);
  if (recorded === undefined) throw new Error(`no error body was recorded as "${label}" in this scenario`);
  this.assert.equal(this.lastReply().text, recorded, `the error body against the one recorded as "${label}"`);
});

Then('the error body does not contain any 8-character substring of the presented token', function (this: SyncWorld) {
  const token = continuationState(this).presented;
  if (token === undefined) throw new Error('no rebuild request of this scenario presented a tampered or carried token');
  const body = this.lastReply().text;
  const echoed = new Set<string>();
  for (let at = 0; at + 8 <= token.length; at += 1) if (body.includes(token.slice(at, at + 8))) echoed.add(token.slice(at, at + 8));
  this.assert.equal([...echoed], [], `8-character pieces of the presented token (${token.length} characters) the error body repeats: ${body.slice(0, 500)}`);
});

When(
  /^the harness client "([^"]+)" sends the next rebuild request of the "([^"]+)" rebuild of "([^"]+)" with (.+)$/,
  async function (this: SyncWorld, sender: string, scope: string, owner: string, change: string) {
    await carryContinuation(this, sender, owner, scope, change);
  },
);

When('the harness client {string} requests the next page of that rebuild with limit {int}', async function (this: SyncWorld, name: string, limit: number) {
  await requestNextPageWithLimit(this, name, limit);
});

Given(/^the server clock advances by (\d+) (minutes?|hours?)$/, async function (this: SyncWorld, count: string, unit: string) {
  await advanceClock(this, Number(count) * (UNIT_MS[unit] as number));
});

Then('the final rebuild page has a non-null {string}', function (this: SyncWorld, memberName: string) {
  const last = generationsState(this).lastRebuild;
  if (last === undefined) throw new Error('no rebuild was fetched to its end in this scenario');
  const final = last.run.pages.at(-1);
  this.assert.equal({ status: final?.status, has_more: final?.json?.has_more }, { status: 200, has_more: false }, `the last page of the rebuild of ${last.scope}: ${final?.text.slice(0, 400)}`);
  this.assert.ok(typeof final?.json?.[memberName] === 'string' && final.json[memberName].length > 0, `the final rebuild page of ${last.scope} carries a non-null "${memberName}": ${final?.text.slice(0, 400)}`);
});
