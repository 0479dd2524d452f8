/**
 * Shared steps (used by several requirements).
 * The harness's own client pulling with an explicit page limit: one page
 * with the cursors it holds or with cursors recorded earlier under a label,
 * and drains to the last page; the pages and changes such a drain delivered,
 * and the terminal checksums against the rows the client was given.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { drain, drainChanges, lastDrain } from '../support/pull-drains/drain.ts';
import { heldRows } from '../support/pull-eligibility/held-rows.ts';
import { memberText, recordedPull, recordLastPull } from '../support/pull-eligibility/recorded.ts';
import { codecScopeDigest, presentedSchemaHash } from '../support/rebuild-runs/digests.ts';
import { member, type Reply } from '../support/reply.ts';
import { pullPresentingRecorded, recordCursors } from '../support/scope-cursors/cursors.ts';
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
async function pullPresentingRecordedFor(world: SyncWorld, name: string, label: string, scope: string, limit?: number): Promise<Reply> {
  const cursor = generationsState(world).cursors.get(label)?.get(scope);
  if (typeof cursor !== 'string') throw new Error(`no cursor of ${scope} was recorded as "${label}" earlier in this scenario`);
  const client = world.wire(name);
  if (!client.cursors.has(scope)) throw new Error(`client "${name}" is not assigned ${scope}`);
  return await client.pull({ [`/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`]: { cursor } }, limit === undefined ? {} : { limit });
}

When('the harness client {string} pulls with limit {int} presenting cursor {string} for scope {string}', async function (this: SyncWorld, name: string, limit: number, label: string, scope: string) {
  await pullPresentingRecordedFor(this, name, label, scope, limit);
});

Given('the harness client {string} has pulled with limit {int} presenting cursor {string} for scope {string}', async function (this: SyncWorld, name: string, limit: number, label: string, scope: string) {
  const reply = await pullPresentingRecordedFor(this, name, label, scope, limit);
  if (reply.status !== 200) throw new Error(`the pull presenting cursor "${label}" for ${scope} was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

Given('the harness client {string} has pulled presenting cursor {string} for scope {string}', async function (this: SyncWorld, name: string, label: string, scope: string) {
  const reply = await pullPresentingRecordedFor(this, name, label, scope);
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

// Every page before the last is full and says more follows (has_more the boolean true, changes an array of exactly the limit);
// the last holds what is left: at least one change when the drain took more than one page, never more than the limit.
// A drain of one page has no page before the last, so then only the bound on the last page speaks.
Then('every response of the drain except the last has member {string} true and exactly {int} changes', function (this: SyncWorld, member: string, count: number) {
  if (member !== 'has_more') throw new Error(`a drain page says more follows through "has_more", not "${member}"`);
  const pages = lastDrain(this);
  const changeCount = (page: Reply | undefined): unknown => (Array.isArray(page?.json?.changes) ? page.json.changes.length : page?.json?.changes);
  pages.slice(0, -1).forEach((page, k) => {
    this.assert.equal({ has_more: page.json?.has_more, changes: changeCount(page) }, { has_more: true, changes: count }, `page ${k + 1} of ${pages.length} of the drain`);
  });
  const last = changeCount(pages.at(-1));
  const least = pages.length > 1 ? 1 : 0;
  this.assert.ok(typeof last === 'number' && last >= least && last <= count, `the last response of the drain holds ${JSON.stringify(last)} changes, not between ${least} and ${count}`);
});

// Every scope the client holds is checked, so a map that leaves a scope out cannot pass by omission; the whole
// checksum object is compared, so a right digest under a wrong algorithm, version or encoding does not pass either.
Then(
  'each value of {string} in the last response equals the scope digest the harness computes from the rows {string} now holds for that scope',
  async function (this: SyncWorld, pointer: string, name: string) {
    if (pointer !== '/checksums') throw new Error(`terminal scope digests are in "/checksums", not "${pointer}"`);
    if (this.isProcess(name)) throw new Error(`client "${name}" is a client process here; the rows a harness client holds are replayed from what the proxy delivered to it`);
    const reply = this.lastReply();
    this.assert.equal({ endpoint: reply.endpoint, status: reply.status, has_more: reply.json?.has_more }, { endpoint: 'pull', status: 200, has_more: false }, `the last response is a terminal pull page: ${reply.text.slice(0, 500)}`);
    const checksums = reply.json?.checksums as unknown;
    this.assert.ok(checksums !== null && typeof checksums === 'object' && !Array.isArray(checksums), `the last response carries a "checksums" object: ${reply.text.slice(0, 500)}`);
    const scopes = [...this.wire(name).cursors.keys()].sort();
    this.assert.ok(scopes.length > 0, `harness client "${name}" holds some scope`);
    this.assert.equal(Object.keys(checksums as Obj).sort(), scopes, 'the scopes of "/checksums" in the last response');
    const held = await heldRows(this, name);
    const schemaHash = presentedSchemaHash(reply.requestText);
    for (const [scope, checksum] of Object.entries(checksums as Obj)) {
      const rows = [...(held.get(scope)?.values() ?? [])];
      const digest = await codecScopeDigest(this, scope, schemaHash, rows);
      this.assert.equal(checksum, { algorithm: 'sha256', version: 1, encoding: 'hex', digest }, `"/checksums/${scope}" over the ${rows.length} rows client "${name}" holds for it`);
    }
  },
);

When('the harness records that response as {string}', function (this: SyncWorld, label: string) {
  recordLastPull(this, label);
});

Then('member {string} of {string} and of {string} are byte-identical', function (this: SyncWorld, name: string, first: string, second: string) {
  const [a, b] = [memberText(recordedPull(this, first), name), memberText(recordedPull(this, second), name)];
  this.assert.ok(a !== undefined, `response "${first}" has no member "${name}"`);
  this.assert.equal(b, a, `member "${name}" of "${second}" against "${first}"`);
});

// The one store of recorded cursors (steps/support/scope-cursors/cursors.ts): a label is recorded once, and never as a set without any cursor.
Given('the harness has recorded the cursors of {string} as {string}', async function (this: SyncWorld, name: string, label: string) {
  if (this.isProcess(name)) throw new Error(`client "${name}" is a client process here; only a harness protocol client's cursors are recorded this way`);
  await recordCursors(this, name, label);
});

// Every scope presents the recorded cursor (a scope recorded without one presents null), whatever the client holds now.
When('the harness client {string} pulls with limit {int} presenting the {string} cursors', async function (this: SyncWorld, name: string, limit: number, label: string) {
  await pullPresentingRecorded(this, name, label, limit);
});

Given('the harness client {string} has pulled presenting the {string} cursors', async function (this: SyncWorld, name: string, label: string) {
  const reply = await pullPresentingRecorded(this, name, label);
  if (reply.status !== 200) throw new Error(`the pull presenting the "${label}" cursors was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

/** The object at `pointer` of a 200 pull answer has exactly the quoted keys. */
function assertExactKeys(world: SyncWorld, reply: Reply, pointer: string, keys: string[], what: string): void {
  world.assert.equal(`${reply.endpoint} ${reply.status}`, 'pull 200', `${what}: ${reply.text.slice(0, 500)}`);
  const value = member(reply.json, pointer);
  world.assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value), `${what} has an object at "${pointer}": ${reply.text.slice(0, 500)}`);
  world.assert.equal(Object.keys(value as object).sort(), [...keys].sort(), `the keys of "${pointer}" in ${what}`);
}

const quotedKeys = (text: string) => [...text.matchAll(/"([^"]*)"/g)].map((m) => m[1] as string);

Then(/^the last response of the drain has member "([^"]+)" with exactly the keys (.+)$/, function (this: SyncWorld, pointer: string, keys: string) {
  const pages = lastDrain(this);
  assertExactKeys(this, pages[pages.length - 1] as Reply, pointer, quotedKeys(keys), 'the last response of the drain');
});

Then(/^the response has member "([^"]+)" with exactly the keys (.+)$/, function (this: SyncWorld, pointer: string, keys: string) {
  assertExactKeys(this, this.lastReply(), pointer, quotedKeys(keys), 'the last response');
});

When('the harness client {string} pulls with limit {int} presenting cursor null for scope {string}', async function (this: SyncWorld, name: string, limit: number, scope: string) {
  const client = this.wire(name);
  if (!client.cursors.has(scope)) throw new Error(`client "${name}" is not assigned ${scope}`);
  await client.pull({ [`/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`]: { cursor: null } }, { limit });
});
