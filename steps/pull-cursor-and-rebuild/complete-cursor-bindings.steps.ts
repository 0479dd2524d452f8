/**
 * SYNC-PULL-008 Complete Cursor Bindings
 * (features/pull-cursor-and-rebuild/complete-cursor-bindings.feature): the
 * steps only this requirement uses. The harness client presents genuine
 * incremental cursors altered, carried to another client or user, or made
 * stale by operator controls (membership rule, stream reset, client expiry,
 * schema change), and reads the status, the body and the server's
 * checkpoints. Helpers are in steps/support/cursor-bindings/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { checkpointAndCursor, recordedCursor } from '../support/cursor-acknowledgement/checkpoints.ts';
import { alteredCursor, excludeTitled, pullPresenting } from '../support/cursor-bindings/tokens.ts';
import { continuationState } from '../support/rebuild-continuations/continuation.ts';
import { checkpointsOf, recordedOf } from '../support/rebuild-replays/recorded.ts';
import { member } from '../support/reply.ts';
import { pullPresentingRecorded } from '../support/scope-cursors/cursors.ts';
import type { SyncWorld } from '../support/world.ts';

Given(
  /^the harness client "([^"]+)" has sent a pull with limit (\d+) presenting the cursor "([^"]*)" for scope "([^"]+)" and recorded the error body as "([^"]+)"$/,
  async function (this: SyncWorld, name: string, limit: string, cursor: string, scope: string, label: string) {
    const reply = await pullPresenting(this, name, scope, cursor, Number(limit));
    if (reply.status !== 400) throw new Error(`a pull presenting the cursor "${cursor}" for ${scope} was answered ${reply.status}, not 400: ${reply.text.slice(0, 500)}`);
    continuationState(this).errorBodies.set(label, reply.text);
  },
);

When(
  /^the harness client "([^"]+)" pulls with limit (\d+) presenting for scope "([^"]+)" the "([^"]+)" cursor ((?:with|replaced by) .+)$/,
  async function (this: SyncWorld, name: string, limit: string, scope: string, label: string, alteration: string) {
    const altered = await alteredCursor(this, label, scope, alteration);
    if (altered === recordedCursor(this, label, scope)) throw new Error(`the alteration "${alteration}" left the cursor unchanged`);
    await pullPresenting(this, name, scope, altered, Number(limit));
  },
);

When(
  /^the harness client "([^"]+)" pulls with limit (\d+) presenting for scope "([^"]+)" the "([^"]+)" cursor that "([^"]+)" holds for scope "([^"]+)"$/,
  async function (this: SyncWorld, presenter: string, limit: string, scope: string, label: string, holder: string, heldScope: string) {
    // The label was recorded from the holder's cursors; the presenter is a different client or user assigned the same scope.
    if (presenter === holder) throw new Error('a carried cursor is presented by another client than the one holding it');
    await pullPresenting(this, presenter, scope, recordedCursor(this, label, heldScope), Number(limit));
  },
);

When(
  /^the harness client "([^"]+)" pulls with limit (\d+) presenting the "([^"]+)" cursor for scope "([^"]+)" and, for scope "([^"]+)", the "([^"]+)" cursor with the character at its middle position replaced$/,
  async function (this: SyncWorld, name: string, limit: string, label: string, staleScope: string, forgedScope: string, forgedLabel: string) {
    const forged = await alteredCursor(this, forgedLabel, forgedScope, 'with the character at its middle position replaced');
    const client = this.wire(name);
    const others = [...client.cursors.keys()].filter((s) => s !== staleScope && s !== forgedScope);
    if (others.length > 0) throw new Error(`client "${name}" holds other scopes (${others.join(', ')}) this request would present too`);
    await pullPresenting(this, name, forgedScope, forged, Number(limit), label);
  },
);

When(/^the operator changes the membership rule of table "([^"]+)" so that rows titled "([^"]+)" belong to no scope$/, async function (this: SyncWorld, table: string, title: string) {
  await excludeTitled(this, table, title);
});

Given('the harness client {string} has pulled presenting its current cursors', async function (this: SyncWorld, name: string) {
  const reply = await this.wire(name).pull();
  if (reply.status !== 200) throw new Error(`the pull of client "${name}" was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

When(/^the harness client "([^"]+)" pulls with limit (\d+) under (?:its new client generation|the new schema) presenting the "([^"]+)" cursors$/, async function (this: SyncWorld, name: string, limit: string, label: string) {
  await pullPresentingRecorded(this, name, label, Number(limit));
});

Then(/^member "([^"]+)" is (\[.*\]) in any order$/, function (this: SyncWorld, name: string, list: string) {
  const reply = this.lastReply();
  const value = member(reply.json, `/${name}`);
  this.assert.ok(Array.isArray(value), `member "${name}" of the last answer is a list: ${reply.text.slice(0, 500)}`);
  const sorted = (items: unknown[]) => items.map((item) => JSON.stringify(item)).sort();
  this.assert.equal(sorted(Array.isArray(value) ? value : []), sorted(JSON.parse(list) as unknown[]), `member "${name}" of the last answer, in any order`);
});

Then(
  'server inspection shows the checkpoint of {string} for scope {string} at the position of the cursor issued for {string} in the previous response',
  async function (this: SyncWorld, name: string, scope: string, issuedFor: string) {
    const pulls = this.replies.filter((r) => r.endpoint === 'pull');
    const previous = pulls.at(-2);
    const cursor = member(previous?.json, `/scope_cursors/${issuedFor}`);
    this.assert.ok(typeof cursor === 'string', `the pull response before the last issued a cursor for ${issuedFor}: ${previous?.text.slice(0, 500)}`);
    const { checkpoint, position } = await checkpointAndCursor(this, this.wire(name).clientId, scope, String(cursor));
    this.assert.equal(checkpoint, position, `the checkpoint of client "${name}" for ${scope} against the cursor issued for ${issuedFor} in the previous response`);
  },
);

Then('server inspection shows the checkpoint of {string} for scope {string} equal to the {string} one', async function (this: SyncWorld, name: string, scope: string, label: string) {
  const before = recordedOf(this).checkpoints.get(label)?.find((c) => c.scope_id === scope);
  if (before === undefined) throw new Error(`no checkpoint of ${scope} was recorded as "${label}" earlier in this scenario`);
  const now = (await checkpointsOf(this, name)).find((c) => c.scope_id === scope);
  this.assert.equal(now, before, `the checkpoint of client "${name}" for ${scope} against the one recorded as "${label}"`);
});
