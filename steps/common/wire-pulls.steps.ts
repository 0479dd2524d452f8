/**
 * Shared steps (used by several requirements).
 * The harness's own client pulling with an explicit page limit: one page
 * with the cursors it holds or with a cursor recorded earlier under a label,
 * and drains to the last page; and the changes such a drain delivered.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { drain, drainChanges, lastDrain } from '../support/pull-drains/drain.ts';
import { memberText, recordedPull, recordLastPull } from '../support/pull-eligibility/recorded.ts';
import type { Reply } from '../support/reply.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import { keyValue, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

When('the harness client {string} pulls with limit {int} presenting its current cursors', async function (this: SyncWorld, name: string, limit: number) {
  await this.wire(name).pull(undefined, { limit });
});

When('the harness client {string} pulls with limit {int} until {string} is false', async function (this: SyncWorld, name: string, limit: number, member: string) {
  if (member !== 'has_more') throw new Error(`a drain follows "has_more", not "${member}"`);
  await drain(this, name, limit);
});

Given('the harness has recorded the cursor of {string} for scope {string} as {string}', function (this: SyncWorld, name: string, scope: string, label: string) {
  const client = this.wire(name);
  const cursor = client.cursors.get(scope);
  if (typeof cursor !== 'string') throw new Error(`client "${name}" holds no cursor for ${scope} to record`);
  const cursors = generationsState(this).cursors;
  cursors.set(label, new Map([...(cursors.get(label) ?? new Map<string, string | null>()), [scope, cursor]]));
});

/** One pull presenting the cursor recorded as `label` for `scope`; every other scope keeps the cursor the client holds. */
async function pullPresentingRecorded(world: SyncWorld, name: string, label: string, scope: string, limit?: number): Promise<Reply> {
  const cursor = generationsState(world).cursors.get(label)?.get(scope);
  if (typeof cursor !== 'string') throw new Error(`no cursor of ${scope} was recorded as "${label}" earlier in this scenario`);
  const client = world.wire(name);
  if (!client.cursors.has(scope)) throw new Error(`client "${name}" is not assigned ${scope}`);
  return await client.pull({ [`/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`]: { cursor } }, limit === undefined ? {} : { limit });
}

When('the harness client {string} pulls with limit {int} presenting cursor {string} for scope {string}', async function (this: SyncWorld, name: string, limit: number, label: string, scope: string) {
  await pullPresentingRecorded(this, name, label, scope, limit);
});

Given('the harness client {string} has pulled with limit {int} presenting cursor {string} for scope {string}', async function (this: SyncWorld, name: string, limit: number, label: string, scope: string) {
  const reply = await pullPresentingRecorded(this, name, label, scope, limit);
  if (reply.status !== 200) throw new Error(`the pull presenting cursor "${label}" for ${scope} was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

Given('the harness client {string} has pulled presenting cursor {string} for scope {string}', async function (this: SyncWorld, name: string, label: string, scope: string) {
  const reply = await pullPresentingRecorded(this, name, label, scope);
  if (reply.status !== 200) throw new Error(`the pull presenting cursor "${label}" for ${scope} was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

Then('the changes of the drain, concatenated in order, are exactly:', async function (this: SyncWorld, table: DataTable) {
  const changes = drainChanges(lastDrain(this));
  const columns = (table.raw()[0] ?? []).filter((c) => !['scope', 'table', 'op', 'pk'].includes(c));
  const describe = async (change: Obj): Promise<string> => {
    const shape = await tableNamed(this, String(change.table));
    const row = (change.row ?? {}) as Obj;
    const values = columns.map((column) => `${column}=${change.op === 'upsert' ? String(row[shape.fields.find((f) => f.name === column)?.field_id ?? column]) : ''}`);
    return [change.scope, shape.name, change.op, keyValue(change.pk), ...values].map(String).join(' ');
  };
  const actual: string[] = [];
  for (const change of changes) actual.push(await describe(change));
  const expected = table.hashes().map((row) => [row.scope, row.table, row.op, row.pk, ...columns.map((column) => `${column}=${row[column] ?? ''}`)].join(' '));
  this.assert.equal(actual, expected, 'the changes of the drain, in the order the pages delivered them');
});

Then('the drain took {int} pull responses', function (this: SyncWorld, count: number) {
  const pages = lastDrain(this);
  const shape = pages.map((page) => `has_more=${page.json?.has_more} changes=${page.json?.changes?.length}`);
  this.assert.equal(pages.length, count, `pull responses of the drain: ${shape.join('; ')}`);
});

Then('every response of the drain except the last has member {string} true and exactly {int} changes', function (this: SyncWorld, member: string, count: number) {
  const pages = lastDrain(this);
  const nonterminal = pages.slice(0, -1);
  const shape = nonterminal.map((page) => `${member}=${page.json?.[member]} changes=${page.json?.changes?.length}`);
  this.assert.equal(shape, nonterminal.map(() => `${member}=true changes=${count}`), `the responses of the drain before its last`);
  // The last page holds what is left: at least one change when the drain took more than one page, never more than the limit.
  const last = pages.at(-1)?.json?.changes?.length ?? -1;
  this.assert.ok(last >= (pages.length > 1 ? 1 : 0) && last <= count, `the last response of the drain holds ${last} changes, not between ${pages.length > 1 ? 1 : 0} and ${count}`);
});

When('the harness records that response as {string}', function (this: SyncWorld, label: string) {
  recordLastPull(this, label);
});

Then('member {string} of {string} and of {string} are byte-identical', function (this: SyncWorld, name: string, first: string, second: string) {
  const [a, b] = [memberText(recordedPull(this, first), name), memberText(recordedPull(this, second), name)];
  this.assert.ok(a !== undefined, `response "${first}" has no member "${name}"`);
  this.assert.equal(b, a, `member "${name}" of "${second}" against "${first}"`);
});

Given('the harness has recorded the cursors of {string} as {string}', function (this: SyncWorld, name: string, label: string) {
  const cursors = generationsState(this).cursors;
  if (cursors.has(label)) throw new Error(`cursors were already recorded as "${label}" in this scenario`);
  const held = new Map(this.wire(name).cursors);
  if (![...held.values()].some((c) => typeof c === 'string')) throw new Error(`client "${name}" holds no cursor to record as "${label}"`);
  cursors.set(label, held);
});

// Every scope presents the recorded cursor (a scope recorded without one presents null), whatever the client holds now.
async function pullPresentingRecordedSet(world: SyncWorld, name: string, label: string, limit?: number): Promise<Reply> {
  const recorded = generationsState(world).cursors.get(label);
  if (recorded === undefined) throw new Error(`no cursors were recorded as "${label}" earlier in this scenario`);
  const scopes = Object.fromEntries([...recorded].map(([scope, cursor]) => [scope, { cursor }]));
  return await world.wire(name).pull({ '/scopes': scopes }, limit === undefined ? {} : { limit });
}

When('the harness client {string} pulls with limit {int} presenting the {string} cursors', async function (this: SyncWorld, name: string, limit: number, label: string) {
  await pullPresentingRecordedSet(this, name, label, limit);
});

Given('the harness client {string} has pulled presenting the {string} cursors', async function (this: SyncWorld, name: string, label: string) {
  const reply = await pullPresentingRecordedSet(this, name, label);
  if (reply.status !== 200) throw new Error(`the pull presenting the "${label}" cursors was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});
