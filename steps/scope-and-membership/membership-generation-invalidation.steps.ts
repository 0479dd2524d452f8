/**
 * SYNC-SCOPE-004 Membership Generation Invalidation
 * (features/scope-and-membership/membership-generation-invalidation.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import type { Exchange } from '../../harness/proxy/records.ts';
import { clientExchanges, currentManifest } from '../support/integrity/context.ts';
import { type Obj, requestOf, scopeDigestHex } from '../support/integrity/oracle.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { lastPull as lastPullAnswer, listed, pullPresenting as pullPresentingLabelled } from '../support/scope-generations/invalidation.ts';
import { applyCompositionChange, applyNewDependency, applyNewRule, applyRelationRebinding } from '../support/scope-generations/rule-changes.ts';
import { generationOf, generationsState, labelled, membershipGenerations, scopeList } from '../support/scope-generations/state.ts';
import type { SyncWorld } from '../support/world.ts';
import { bodyOf, deliveredOf } from '../support/exchanges.ts';

Given('the harness records the membership generation of every scope as {string}', async function (this: SyncWorld, label: string) {
  generationsState(this).generations.set(label, await membershipGenerations(this));
});

When('the operator applies a new membership function for {string} that places each row in scope {string}', async function (this: SyncWorld, table: string, template: string) {
  await applyNewRule(this, table, template);
});

When('the operator applies a new dependency of {string} on a capture-only table {string}', async function (this: SyncWorld, table: string, dependency: string) {
  await applyNewDependency(this, table, dependency);
});

When('the operator applies a composition change of {string} from {string} to {string}', async function (this: SyncWorld, table: string, from: string, to: string) {
  const missing = await applyCompositionChange(this, table, from, to);
  if (missing !== undefined) return undeterminedWithout(this, missing);
  return undefined;
});

When('the operator applies a controlled reconfiguration that binds {string} to a renamed relation {string}', async function (this: SyncWorld, table: string, renamed: string) {
  const missing = await applyRelationRebinding(this, table, renamed);
  if (missing !== undefined) return undeterminedWithout(this, missing);
  return undefined;
});

Then('server inspection shows the membership generation of scopes {string} greater than in {string}', async function (this: SyncWorld, scopes: string, label: string) {
  const before = labelled(generationsState(this).generations, label, 'set of membership generations');
  const now = await membershipGenerations(this);
  const notGreater = scopeList(scopes)
    .filter((scope) => !(generationOf(now, scope) > generationOf(before, scope)))
    .map((scope) => `${scope}: ${generationOf(before, scope)} → ${generationOf(now, scope)}`);
  this.assert.equal(notGreater, [], `membership generations that did not advance past "${label}"`);
});

Then('server inspection shows the membership generation of scope {string} equal to {string}', async function (this: SyncWorld, scope: string, label: string) {
  const before = labelled(generationsState(this).generations, label, 'set of membership generations');
  const now = await membershipGenerations(this);
  this.assert.equal(generationOf(now, scope), generationOf(before, scope), `membership generation of scope "${scope}" against "${label}"`);
});

Then('server inspection shows the membership generation of every scope equal to {string}', async function (this: SyncWorld, label: string) {
  const before = labelled(generationsState(this).generations, label, 'set of membership generations');
  const now = await membershipGenerations(this);
  const scopes = [...new Set([...before.keys(), ...now.keys()])].sort();
  const moved = scopes.filter((scope) => generationOf(now, scope) !== generationOf(before, scope)).map((scope) => `${scope}: ${generationOf(before, scope)} → ${generationOf(now, scope)}`);
  this.assert.equal(moved, [], `membership generations that changed since "${label}"`);
});

// The first page presents the recorded cursors; later pages present what the client was given since.
When('client {string} pulls presenting the {string} cursors until {string} is false', async function (this: SyncWorld, name: string, label: string, member: string) {
  if (member !== 'has_more') throw new Error(`a pull is followed until "has_more" is false, not "${member}"`);
  let reply = await pullPresentingLabelled(this, name, label);
  for (let page = 1; reply.status === 200 && reply.json?.has_more === true; page += 1) {
    if (page >= 1000) throw new Error(`client "${name}": the pull still had more after 1000 pages`);
    reply = await this.wire(name).pull();
  }
});

Then('the pull response does not list scope {string} in {string}', function (this: SyncWorld, scope: string, member: string) {
  const list = listed(this, member);
  this.assert.ok(!list.includes(scope), `the pull response lists scope "${scope}" in "${member}": ${JSON.stringify(list)}`);
});

Then('the pull response has no entry for scope {string} in {string}', function (this: SyncWorld, scope: string, member: string) {
  const reply = lastPullAnswer(this);
  const map = reply.json?.[member];
  this.assert.ok(map !== null && typeof map === 'object' && !Array.isArray(map), `the pull response has no object "${member}": ${reply.text.slice(0, 500)}`);
  this.assert.ok(!Object.hasOwn(map, scope), `the pull response has an entry for scope "${scope}" in "${member}": ${JSON.stringify(map[scope])}`);
});

Then('the error body has {string} {string}', function (this: SyncWorld, member: string, value: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.json?.error?.[member], value, `member "${member}" of the ${reply.endpoint} error body ${reply.text.slice(0, 500)}`);
});

/**
 * The checksum of the last complete rebuild of `scope` client `name` was
 * given, after checking it the way a client does: it must be the scope digest
 * of the records of that rebuild's pages under the current manifest.
 */
async function verifiedRebuildChecksum(world: SyncWorld, name: string, scope: string): Promise<Obj | undefined> {
  const pages = (await clientExchanges(world, name, 'rebuild')).filter((e) => requestOf(e).scope === scope);
  const pageOf = (e: Exchange) => {
    const answer = deliveredOf(e);
    return answer?.status === 200 ? (bodyOf(answer.body) as Obj | undefined) : undefined;
  };
  const final = [...pages].reverse().find((e) => pageOf(e)?.has_more === false);
  if (final === undefined) throw new Error(`client "${name}" was given no final rebuild page of scope "${scope}"`);
  const attempt = pages.filter((e) => requestOf(e).rebuild_id === requestOf(final).rebuild_id);
  const records = attempt.flatMap((e) => (pageOf(e)?.records as Obj[] | undefined) ?? []);
  const checksum = pageOf(final)?.checksum as Obj | undefined;
  const digest = scopeDigestHex(await currentManifest(world), scope, records.map((r) => ({ table: String(r.table), row: r.row, serverVersion: String(r.server_version) })));
  world.assert.equal(checksum?.digest, digest, `the checksum of the last rebuild of ${scope} against the digest of its records`);
  return checksum;
}

Then(
  'the final pull response carries a checksum for scope {string} equal to the checksum client {string} verified at its last rebuild of that scope',
  async function (this: SyncWorld, scope: string, name: string) {
    const reply = lastPullAnswer(this);
    this.assert.equal(reply.json.has_more, false, 'the last pull response is not the final page');
    const rebuilt = await verifiedRebuildChecksum(this, name, scope);
    this.assert.ok(rebuilt !== undefined, `the final rebuild page of ${scope} carries no checksum`);
    this.assert.equal(reply.json.checksums?.[scope], rebuilt, `checksum of scope "${scope}" in the final pull response`);
  },
);
