/**
 * Checks on the scope sets the server reports: what a connect added, what a
 * harness client holds after applying a pull, and how scope_updates, rebuild
 * and checksums of one pull answer agree with each other.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { expectedValue } from '../common/values.ts';
import { member, type Reply } from '../support/reply.ts';
import type { SyncWorld } from '../support/world.ts';
import { byteSorted, type Loose, quotedList } from './exchanges.ts';
import { scopesState } from './state.ts';

function addedIds(world: SyncWorld, reply: Reply): string[] {
  world.assert.equal(reply.status, 200, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const add = member(reply.json, reply.endpoint === 'pull' ? '/scope_updates/add' : '/scopes/add');
  if (!Array.isArray(add)) throw new Error(`the ${reply.endpoint} answer has no scope additions: ${reply.text.slice(0, 500)}`);
  return add.map((entry: Loose) => entry.id);
}

Then(/^the scopes added in the response are exactly ((?:"[^"]+"(?:, | and )?)+)$/, function (this: SyncWorld, list: string) {
  const reply = this.lastReply();
  this.assert.equal(addedIds(this, reply), byteSorted(quotedList(list)), `scopes added by ${reply.text.slice(0, 500)}`);
});

Then('the scopes added in the response are exactly the scopes client {string} holds', function (this: SyncWorld, name: string) {
  const reply = this.lastReply();
  const held = byteSorted(this.wire(name).cursors.keys());
  this.assert.ok(held.length > 0, `client "${name}" holds no scope to compare with`);
  this.assert.equal(addedIds(this, reply), held, `scopes added by ${reply.text.slice(0, 500)}`);
});

Then(/^when client "([^"]+)" of user "([^"]+)" connects as a fresh client, the scopes added are exactly ((?:"[^"]+"(?:, | and )?)+)$/, async function (this: SyncWorld, name: string, user: string, list: string) {
  await this.readyServer();
  const reply = await this.newWire(name, user).connect();
  this.assert.equal(addedIds(this, reply), byteSorted(quotedList(list)), `scopes added by ${reply.text.slice(0, 500)}`);
});

Then('the response member {string} lists exactly these scopes, each with cursor null:', function (this: SyncWorld, pointer: string, table: DataTable) {
  const reply = this.lastReply();
  const expected = byteSorted(table.hashes().map((row) => row.scope ?? '')).map((id) => ({ id, cursor: null }));
  this.assert.equal(member(reply.json, pointer), expected, `member ${pointer} of ${reply.text.slice(0, 800)}`);
});

Then(/^the response member "([^"]+)" holds (\d+) scopes: "([^"]+)" and "([a-z_]+):(\d+)" through "\4:(\d+)", each once$/, function (this: SyncWorld, pointer: string, count: string, single: string, prefix: string, from: string, to: string) {
  const reply = this.lastReply();
  const ids = ((member(reply.json, pointer) ?? []) as Loose[]).map((entry) => entry.id);
  const expected = [single];
  for (let n = Number(from); n <= Number(to); n += 1) expected.push(`${prefix}:${n}`);
  this.assert.equal(ids.length, Number(count), `number of scopes in ${pointer}`);
  this.assert.equal(ids, byteSorted(expected), `scopes in ${pointer}`);
});

Then(/^the response member "([^"]+)" has keys ((?:"[^"]+"(?:, | and )?)+)$/, function (this: SyncWorld, pointer: string, list: string) {
  const reply = this.lastReply();
  const value = member(reply.json, pointer);
  this.assert.equal(byteSorted(Object.keys((value ?? {}) as object)), byteSorted(quotedList(list)), `keys of ${pointer} in ${reply.text.slice(0, 500)}`);
});

Then('the response member {string} has a non-null entry for {string}', function (this: SyncWorld, pointer: string, key: string) {
  const reply = this.lastReply();
  const value = member(reply.json, pointer) as Record<string, unknown> | undefined;
  this.assert.ok(value !== undefined && typeof value[key] === 'string' && value[key] !== '', `${pointer} has no non-null entry for ${key}: ${reply.text.slice(0, 500)}`);
});

Then('every scope in {string} is listed in {string}', function (this: SyncWorld, from: string, to: string) {
  const reply = this.lastReply();
  const added = ((member(reply.json, from) ?? []) as Loose[]).map((entry) => (typeof entry === 'string' ? entry : entry.id));
  const listed = (member(reply.json, to) ?? []) as string[];
  this.assert.equal(
    added.filter((scope) => !listed.includes(scope)),
    [],
    `scopes of ${from} missing from ${to} in ${reply.text.slice(0, 500)}`,
  );
});

Then('when {string} is false the keys of {string} include every added scope and no removed scope', function (this: SyncWorld, flag: string, pointer: string) {
  const reply = this.lastReply();
  if (member(reply.json, flag) !== false) {
    this.assert.ok(member(reply.json, pointer) === undefined, `an intermediate page carries ${pointer}`);
    return;
  }
  const keys = Object.keys((member(reply.json, pointer) ?? {}) as object);
  const added = ((member(reply.json, '/scope_updates/add') ?? []) as Loose[]).map((entry) => entry.id as string);
  const removed = (member(reply.json, '/scope_updates/remove') ?? []) as string[];
  this.assert.equal(
    { missing: added.filter((s) => !keys.includes(s)), stale: removed.filter((s) => keys.includes(s)) },
    { missing: [], stale: [] },
    `keys of ${pointer}: ${keys.join(', ')}`,
  );
});

/** The last answered request of harness client `name` to `endpoint`. */
function lastReplyOf(world: SyncWorld, name: string, endpoint: string): Reply {
  const clientId = world.wire(name).clientId;
  const found = [...world.replies].reverse().find((r) => r.endpoint === endpoint && JSON.parse(r.requestText || '{}').client_id === clientId);
  if (!found) throw new Error(`no ${endpoint} of client "${name}" was answered`);
  return found;
}

Then('the scopes client {string} holds after applying the pull\'s scope_updates equal the scopes the connect of client {string} added', function (this: SyncWorld, puller: string, connector: string) {
  const pulled = lastReplyOf(this, puller, 'pull');
  this.assert.equal(pulled.status, 200, `the pull of client "${puller}" answered ${pulled.status}: ${pulled.text.slice(0, 300)}`);
  const added = addedIds(this, lastReplyOf(this, connector, 'connect'));
  this.assert.equal(byteSorted(this.wire(puller).cursors.keys()), added, `set of client "${puller}" against the connect of client "${connector}"`);
  scopesState(this).comparedSets = { puller, connector };
});

Then(/^both sets are exactly ((?:"[^"]+"(?:, | and )?)+)$/, function (this: SyncWorld, list: string) {
  const pair = scopesState(this).comparedSets;
  if (!pair) throw new Error('no two sets were compared before this step');
  const expected = byteSorted(quotedList(list));
  this.assert.equal(byteSorted(this.wire(pair.puller).cursors.keys()), expected, `set held by client "${pair.puller}"`);
  this.assert.equal(addedIds(this, lastReplyOf(this, pair.connector, 'connect')), expected, `set added by the connect of client "${pair.connector}"`);
});

/** The last two replies, which the "both responses" steps compare. */
function lastTwo(world: SyncWorld): [Reply, Reply] {
  const [a, b] = world.replies.slice(-2);
  if (!a || !b) throw new Error('fewer than two responses were recorded');
  return [a, b];
}

Then(/^both responses have "([^"]+)" equal to (.+)$/, function (this: SyncWorld, pointer: string, expected: string) {
  const want = expectedValue(expected, this.noted);
  for (const reply of lastTwo(this)) {
    this.assert.equal(reply.status, 200, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 300)}`);
    this.assert.equal(member(reply.json, pointer), want, `${pointer} of ${reply.text.slice(0, 500)}`);
  }
});

Then('every rebuild response has status {int}', function (this: SyncWorld, status: number) {
  const rebuilds = this.replies.filter((r) => r.endpoint === 'rebuild');
  this.assert.ok(rebuilds.length > 0, 'no rebuild response was recorded');
  this.assert.equal(
    rebuilds.map((r) => r.status),
    rebuilds.map(() => status),
    'statuses of the rebuild responses',
  );
});

// The pull a client makes after a rebuild and before any other pull: nothing assigned changes, only the cursor is installed.
Given('client {string} has pulled and rebuilt every assigned scope', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const pages = await client.pullAll();
  const last = pages[pages.length - 1];
  if (last?.status !== 200) throw new Error(`client "${name}" could not pull: ${last?.status} ${last?.text}`);
  for (const [scope, cursor] of [...client.cursors]) {
    if (cursor !== null) continue;
    const run = await client.rebuildAll(scope);
    const page = run.pages[run.pages.length - 1];
    if (page?.status !== 200) throw new Error(`client "${name}" could not rebuild ${scope}: ${page?.status} ${page?.text}`);
  }
});

When('client {string} pulls presenting the final rebuild cursor for {string}', async function (this: SyncWorld, name: string, scope: string) {
  const rebuilt = [...this.replies].reverse().find((r) => r.endpoint === 'rebuild' && r.status === 200 && JSON.parse(r.requestText).scope === scope && r.json.has_more === false);
  const final = rebuilt?.json.final_scope_cursor;
  if (typeof final !== 'string') throw new Error(`client "${name}" has no completed rebuild of ${scope} with a final cursor`);
  await this.wire(name).pull({ [`/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`]: { cursor: final } });
});
