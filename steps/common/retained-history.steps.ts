/**
 * Shared steps (used by several requirements: SYNC-SCHEMA-004, SYNC-SCHEMA-006).
 * Retained change history: source rows committed one transaction each,
 * cursors recorded after each change, pulls presenting those cursors, the
 * changes such a pull listed, and the retained effects of a scope as server
 * inspection shows them.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { advanceClock } from '../support/mutations/ledger-retention.ts';
import { DAY_MS } from '../support/retention/expiry.ts';
import { commitRowsOneEach, idRange, listedIds, pullPresenting, recordCursorsAfterEachChange, retainedEffectCount, upsertsOf } from '../support/retention/history.ts';
import { lastPull } from '../support/wire-values/operations.ts';
import type { SyncWorld } from '../support/world.ts';

const tasksOwnedBy = (ids: string[], owner: string) => ids.map((id) => ({ id, values: { owner_id: owner, title: `task ${id}` } }));
const notesInTeam = (ids: string[], team: string) => ids.map((id) => ({ id, values: { team_id: team, body: `note ${id}` } }));

Given('the server table {string} gains rows {string} to {string} owned by {string}, one committed transaction each', async function (this: SyncWorld, table: string, first: string, last: string, owner: string) {
  await commitRowsOneEach(this, table, tasksOwnedBy(idRange(first, last), owner));
});

Given('the server table {string} gains row {string} owned by {string}', async function (this: SyncWorld, table: string, id: string, owner: string) {
  await commitRowsOneEach(this, table, tasksOwnedBy([id], owner));
});

Given(
  'the server table {string} gains rows {string} to {string} in team {string} and rows {string} to {string} in team {string}, one committed transaction each',
  async function (this: SyncWorld, table: string, firstA: string, lastA: string, teamA: string, firstB: string, lastB: string, teamB: string) {
    await commitRowsOneEach(this, table, [...notesInTeam(idRange(firstA, lastA), teamA), ...notesInTeam(idRange(firstB, lastB), teamB)]);
  },
);

Given(/^the server table "([^"]+)" gains rows? ("[^"]+"(?: (?:and|to) "[^"]+")?) in team "([^"]+)"$/, async function (this: SyncWorld, table: string, ids: string, team: string) {
  await commitRowsOneEach(this, table, notesInTeam(listedIds(ids), team));
});

Given(
  'the harness client {string} has pulled scope {string} from its synced cursor with limits 1 to {int}, recording the cursor after each change as {string} to {string}',
  async function (this: SyncWorld, name: string, scope: string, count: number, firstLabel: string, lastLabel: string) {
    const labels = idRange(firstLabel, lastLabel);
    if (labels.length !== count) throw new Error(`${count} pulls but ${labels.length} labels "${firstLabel}" to "${lastLabel}"`);
    await recordCursorsAfterEachChange(this, name, scope, labels);
  },
);

Given('the harness client {string} has completed a sync', async function (this: SyncWorld, name: string) {
  await this.readyServer();
  const client = this.wire(name);
  await client.connectAndRebuild();
  const pages = await client.pullAll();
  const last = pages[pages.length - 1];
  if (last?.status !== 200) throw new Error(`client "${name}" could not pull to the end: ${last?.status} ${last?.text.slice(0, 500)}`);
});

When('the harness client {string} pulls presenting cursor {string} for scope {string}', async function (this: SyncWorld, name: string, label: string, scope: string) {
  await pullPresenting(this, name, { [scope]: label });
});

When('the harness client {string} pulls presenting cursor {string} for scope {string} and its current cursor for {string}', async function (this: SyncWorld, name: string, label: string, scope: string, other: string) {
  const held = this.wire(name).cursors.get(other);
  if (typeof held !== 'string') throw new Error(`client "${name}" holds no current cursor of ${other}`);
  await pullPresenting(this, name, { [scope]: label });
});

function assertUpserts(world: SyncWorld, ids: string[], scope?: string): void {
  const reply = lastPull(world);
  const listed = upsertsOf(reply);
  const expected = ids.map((id) => (scope === undefined ? `upsert ${id}` : `${scope} upsert ${id}`));
  const actual = scope === undefined ? listed.map((c) => c.slice(c.indexOf(' ') + 1)) : listed;
  world.assert.equal(actual, expected, `the changes of the pull, in order: ${reply.text.slice(0, 1500)}`);
}

Then(/^the changes are exactly the upserts? of ("[^"]+"(?: (?:and|to) "[^"]+")?)$/, function (this: SyncWorld, ids: string) {
  assertUpserts(this, listedIds(ids));
});

Then('the changes are exactly the upsert of {string} in scope {string}', function (this: SyncWorld, id: string, scope: string) {
  assertUpserts(this, [id], scope);
});

Then(/^member "rebuild" is (\[.*\]) and the changes are exactly the upserts? of ("[^"]+"(?: (?:and|to) "[^"]+")?)$/, function (this: SyncWorld, rebuild: string, ids: string) {
  const reply = lastPull(this);
  this.assert.equal(JSON.stringify(reply.json.rebuild), JSON.stringify(JSON.parse(rebuild)), `member "rebuild" of the pull response: ${reply.text.slice(0, 500)}`);
  assertUpserts(this, listedIds(ids));
});

Then(/^member "rebuild" is (\[.*\]) and member "scope_cursors" has no entry for "([^"]+)"$/, function (this: SyncWorld, rebuild: string, scope: string) {
  const reply = lastPull(this);
  this.assert.equal(JSON.stringify(reply.json.rebuild), JSON.stringify(JSON.parse(rebuild)), `member "rebuild" of the pull response: ${reply.text.slice(0, 500)}`);
  this.assert.ok(!Object.hasOwn((reply.json.scope_cursors ?? {}) as object, scope), `member "scope_cursors" has an entry for ${scope}: ${reply.text.slice(0, 500)}`);
});

Then('member {string} has an entry for {string}', function (this: SyncWorld, name: string, scope: string) {
  const reply = lastPull(this);
  const value = reply.json?.[name];
  this.assert.ok(typeof value === 'object' && value !== null && Object.hasOwn(value, scope), `member "${name}" has no entry for ${scope}: ${reply.text.slice(0, 500)}`);
});

When(/^the server clock advances by (\d+) days$/, async function (this: SyncWorld, days: string) {
  await advanceClock(this, Number(days) * DAY_MS);
});

When('the operator compacts every scope', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.compaction) throw new Error(`server adapter "${server.id}" offers no compaction control`);
  await server.compaction.compact();
});

Then('server inspection shows no effect left for scope {string}', async function (this: SyncWorld, scope: string) {
  this.assert.equal(await retainedEffectCount(this, scope), 0, `effects the server retains for ${scope}`);
});
