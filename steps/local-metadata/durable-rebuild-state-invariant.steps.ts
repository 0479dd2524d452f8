/**
 * SYNC-LOCAL-002 Durable Rebuild State Invariant
 * (features/local-metadata/durable-rebuild-state-invariant.feature): the steps
 * only this requirement uses. The client is killed (SIGKILL) at its named
 * rebuild crash points; what it does after the restart is read on the wire
 * (the proxy's rebuild and pull requests) and through inspection (its scopes,
 * its rebuild attempts, its rows and their provenance). Helpers are in
 * steps/support/local-queue/rebuild-state.ts.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf } from '../support/exchanges.ts';
import { scopeState } from '../support/integrity/context.ts';
import { assertFinalInstalled, attemptsOf, heldRows, onlyAttempt, provenanceOf, rebuildsAfterRestart, recordKeys, restoreNetwork, truncateSecondPage } from '../support/local-queue/rebuild-state.ts';
import { deliveredBody } from '../support/rebuild-attempts/attempts.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" (?:applied each of|holds exactly the rows of page|started a new rebuild attempt)/);
processPhrase(/^the network of client "([^"]+)" is restored$/);

Then(/^the rebuild requests of client "([^"]+)" for "([^"]+)" all carry the same "rebuild_id" and "limit" (\d+)$/, async function (this: SyncWorld, name: string, scope: string, limit: string) {
  const requests = (await attemptsOf(this, name, scope)).flatMap((a) => a.exchanges).map((e) => bodyOf(e.requestBody));
  this.assert.ok(requests.length >= 2, `client "${name}" sent ${requests.length} rebuild requests for ${scope}, not a rebuild of several pages`);
  this.assert.equal(
    [...new Set(requests.map((r) => JSON.stringify({ rebuild_id: r?.rebuild_id, limit: r?.limit })))],
    [JSON.stringify({ rebuild_id: requests[0]?.rebuild_id, limit: Number(limit) })],
    `the rebuild_id and limit of every rebuild request of ${scope} by client "${name}"`,
  );
});

Then('the first rebuild request after the restart presents the {string} page 1 returned', async function (this: SyncWorld, member: string) {
  const { name, scope, before, after } = await rebuildsAfterRestart(this);
  const pageOne = before[0];
  this.assert.ok(pageOne !== undefined && bodyOf(pageOne.requestBody)?.cursor === null, `client "${name}" asked for page 1 of ${scope} before the kill`);
  const given = pageOne === undefined ? undefined : deliveredBody(pageOne)?.[member];
  this.assert.ok(typeof given === 'string', `page 1 of ${scope} gave client "${name}" a "${member}"`);
  this.assert.equal(bodyOf(after[0]?.requestBody)?.[member], given, `"${member}" of the first rebuild request of ${scope} after the restart`);
});

Then(/^client "([^"]+)" applied each of "([^"]+)" to "([^"]+)" once, with provenance "([^"]+)"$/, async function (this: SyncWorld, name: string, first: string, last: string, scope: string) {
  const prefix = first.replace(/\d+$/, '');
  const [from, to] = [Number(first.slice(prefix.length)), Number(last.slice(prefix.length))];
  const expected = Array.from({ length: to - from + 1 }, (_, i) => `${prefix}${from + i}`);
  // Once on the wire: across the attempt, every record was served (and so applied) in exactly one page.
  const served = (await attemptsOf(this, name, scope)).flatMap((a) => a.exchanges).flatMap((e) => recordKeys(e));
  this.assert.equal([...served].sort(), expected, `records the rebuild of ${scope} delivered to client "${name}", over all its pages`);
  this.assert.equal(await heldRows(this, name), expected, `rows client "${name}" holds`);
  this.assert.equal(await provenanceOf(this, name, scope), expected, `rows client "${name}" shows with provenance ${scope}`);
});

Then(
  /^client "([^"]+)" inspection shows for "([^"]+)" the "final_scope_cursor" and the checksum of the final page(?: recorded before the kill)?$/,
  async function (this: SyncWorld, name: string, scope: string) {
    await assertFinalInstalled(this, name, scope, await onlyAttempt(this, name, scope));
  },
);

Then('client {string} inspection shows one rebuild attempt for {string} with no page applied and no continuation', async function (this: SyncWorld, name: string, scope: string) {
  const { rebuilds } = await (await this.process(name)).call<{ rebuilds: { scopeId: string; rebuildId: string; token: unknown; pagesApplied: number }[] }>('inspectRebuilds');
  const mine = rebuilds.filter((r) => r.scopeId === scope);
  this.assert.equal(mine.map((r) => ({ token: r.token ?? null, pagesApplied: r.pagesApplied, named: typeof r.rebuildId === 'string' && r.rebuildId !== '' })), [{ token: null, pagesApplied: 0, named: true }], `rebuild attempts client "${name}" shows for ${scope}`);
  recordedAttempt.set(this, { scope, rebuildId: mine[0]?.rebuildId });
});

const recordedAttempt = new WeakMap<SyncWorld, { scope: string; rebuildId: string | undefined }>();

Then(
  /^the first rebuild request after the restart carries the "rebuild_id" recorded in that attempt, "limit" (\d+) and "cursor" null$/,
  async function (this: SyncWorld, limit: string) {
    const recorded = recordedAttempt.get(this);
    if (recorded?.rebuildId === undefined) throw new Error('no rebuild attempt was recorded through inspection in this scenario');
    const { rebuildId } = recorded;
    const { name, scope, after } = await rebuildsAfterRestart(this, undefined, recorded.scope);
    const first = bodyOf(after[0]?.requestBody);
    this.assert.equal({ rebuild_id: first?.rebuild_id, limit: first?.limit, cursor: first?.cursor }, { rebuild_id: rebuildId, limit: Number(limit), cursor: null }, `the first rebuild request of ${scope} by client "${name}" after the restart`);
  },
);

Then('the proxy recorded no rebuild request for {string} from client {string} after the restart', async function (this: SyncWorld, scope: string, name: string) {
  const { after, before } = await rebuildsAfterRestart(this, name, scope);
  this.assert.ok(before.length > 0, `client "${name}" sent no rebuild request for ${scope} before the kill`);
  this.assert.equal(after.map((e) => JSON.stringify(bodyOf(e.requestBody)?.cursor)), [], `rebuild requests of ${scope} client "${name}" sent after the restart`);
});

Then('the next pull of client {string} presents that {string} for {string}', async function (this: SyncWorld, name: string, member: string, scope: string) {
  const final = (await onlyAttempt(this, name, scope)).finalPage;
  const { pulls } = await rebuildsAfterRestart(this, name, scope);
  const presented = (bodyOf(pulls[0]?.requestBody)?.scopes as Record<string, { cursor?: unknown }> | undefined)?.[scope]?.cursor;
  this.assert.ok(pulls.length > 0, `client "${name}" sent no pull after the restart`);
  this.assert.equal(presented, final?.[member], `the cursor client "${name}" presented for ${scope} in its first pull after the restart`);
});

Then(/^client "([^"]+)" inspection shows for "([^"]+)" no cursor, no checksum and the scope still marked for rebuild$/, async function (this: SyncWorld, name: string, scope: string) {
  const state = await scopeState(this, name, scope);
  this.assert.equal({ cursor: state?.cursor ?? null, checksum: state?.checksum ?? null, rebuildRequired: state?.rebuildRequired }, { cursor: null, checksum: null, rebuildRequired: true }, `scope ${scope} as client "${name}" reports it: ${JSON.stringify(state)}`);
});

Then('client {string} inspection shows for {string} no cursor and no checksum', async function (this: SyncWorld, name: string, scope: string) {
  const state = await scopeState(this, name, scope);
  this.assert.equal({ cursor: state?.cursor ?? null, checksum: state?.checksum ?? null }, { cursor: null, checksum: null }, `scope ${scope} as client "${name}" reports it: ${JSON.stringify(state)}`);
});

When('the network of client {string} is restored', async function (this: SyncWorld, name: string) {
  await restoreNetwork(this, name);
});

Then(/^client "([^"]+)" started a new rebuild attempt for "([^"]+)" with a new "rebuild_id" and "cursor" null$/, async function (this: SyncWorld, name: string, scope: string) {
  const attempts = await attemptsOf(this, name, scope);
  const last = attempts.at(-1);
  this.assert.ok(attempts.length >= 2, `client "${name}" made ${attempts.length} rebuild attempts of ${scope}`);
  this.assert.equal(bodyOf(last?.exchanges[0]?.requestBody)?.cursor, null, `the first request of the last attempt of ${scope}`);
  this.assert.equal(
    attempts.slice(0, -1).filter((a) => a.rebuildId === last?.rebuildId).length,
    0,
    `earlier attempts of ${scope} that used the rebuild_id ${String(last?.rebuildId)} of the last one`,
  );
});

Then("client {string} inspection shows for {string} the cursor and checksum of that new attempt's final page", async function (this: SyncWorld, name: string, scope: string) {
  await assertFinalInstalled(this, name, scope, (await attemptsOf(this, name, scope)).at(-1));
});

Given('the proxy truncates the response to the second rebuild page for {string} of client {string}', async function (this: SyncWorld, scope: string, name: string) {
  await truncateSecondPage(this, name, scope);
});

Then(/^client "([^"]+)" holds exactly the rows of page 1 with provenance "([^"]+)"$/, async function (this: SyncWorld, name: string, scope: string) {
  const pageOne = (await attemptsOf(this, name, scope))[0]?.exchanges[0];
  this.assert.ok(pageOne !== undefined, `client "${name}" never asked for page 1 of ${scope}`);
  const keys = pageOne === undefined ? [] : recordKeys(pageOne).sort();
  this.assert.ok(keys.length > 0, `page 1 of ${scope} delivered no record`);
  this.assert.equal(await heldRows(this, name), keys, `rows client "${name}" holds`);
  this.assert.equal(await provenanceOf(this, name, scope), keys, `rows client "${name}" shows with provenance ${scope}`);
});
