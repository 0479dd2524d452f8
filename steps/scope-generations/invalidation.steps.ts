/**
 * What a client sees of a membership change: pulls presenting cursors taken
 * before it, rebuild sessions opened before it and continued after it, the
 * "rebuild" list, the changes and cursors of pull answers, and the contents
 * and checksums of rebuilds.
 */
import { randomUUID } from 'node:crypto';
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import type { Exchange } from '../../harness/proxy/records.ts';
import { clientExchanges, currentManifest, parsePlain, requestOf } from '../integrity/context.ts';
import { deliveredOf, type Obj, scopeDigestHex } from '../integrity/oracle.ts';
import type { Reply } from '../support/reply.ts';
import type { SyncWorld } from '../support/world.ts';
import { keyValue } from '../wire-values/recorded.ts';
import { generationsState, labelled, scopeList } from './state.ts';

Given('the harness records the cursors client {string} inspects as {string}', function (this: SyncWorld, name: string, label: string) {
  if (!this.hasWire(name)) throw new Error(`client "${name}" is not a harness protocol client: its cursors cannot be read here`);
  generationsState(this).cursors.set(label, new Map(this.wire(name).cursors));
});

/** One pull page of `name` presenting exactly the cursors recorded under `label`. */
async function pullPresenting(world: SyncWorld, name: string, label: string): Promise<Reply> {
  const cursors = labelled(generationsState(world).cursors, label, 'set of cursors');
  const scopes = Object.fromEntries([...cursors].map(([scope, cursor]) => [scope, { cursor }]));
  return world.wire(name).pull({ scopes });
}

When('client {string} pulls presenting the {string} cursors', async function (this: SyncWorld, name: string, label: string) {
  await pullPresenting(this, name, label);
});

// The first page presents the recorded cursors; later pages present what the client was given since.
When('client {string} pulls presenting the {string} cursors until {string} is false', async function (this: SyncWorld, name: string, label: string, member: string) {
  if (member !== 'has_more') throw new Error(`a pull is followed until "has_more" is false, not "${member}"`);
  let reply = await pullPresenting(this, name, label);
  for (let page = 1; reply.status === 200 && reply.json?.has_more === true; page += 1) {
    if (page >= 1000) throw new Error(`client "${name}": the pull still had more after 1000 pages`);
    reply = await this.wire(name).pull();
  }
});

function lastPull(world: SyncWorld): Reply {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'pull');
  if (!reply) throw new Error('no pull response has been received in this scenario');
  world.assert.equal(reply.status, 200, `the last pull was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  return reply;
}

function listed(world: SyncWorld, member: string): unknown[] {
  const reply = lastPull(world);
  const list = reply.json?.[member];
  world.assert.ok(Array.isArray(list), `the pull response has no list "${member}": ${reply.text.slice(0, 500)}`);
  return list as unknown[];
}

function assertListed(world: SyncWorld, scopes: string[], member: string): void {
  const list = listed(world, member);
  world.assert.equal(
    scopes.filter((scope) => !list.includes(scope)),
    [],
    `scopes missing from "${member}" of the pull response (it lists ${JSON.stringify(list)})`,
  );
}

Then('the pull response lists scope {string} in {string}', function (this: SyncWorld, scope: string, member: string) {
  assertListed(this, [scope], member);
});

Then('the pull response lists scopes {string} in {string}', function (this: SyncWorld, scopes: string, member: string) {
  assertListed(this, scopeList(scopes), member);
});

Then('the pull response does not list scope {string} in {string}', function (this: SyncWorld, scope: string, member: string) {
  const list = listed(this, member);
  this.assert.ok(!list.includes(scope), `the pull response lists scope "${scope}" in "${member}": ${JSON.stringify(list)}`);
});

Then('the pull response lists no change in scope {string}', function (this: SyncWorld, scope: string) {
  const changes = (lastPull(this).json?.changes ?? []) as { scope?: unknown }[];
  this.assert.equal(
    changes.filter((change) => change.scope === scope),
    [],
    `changes of scope "${scope}" in the pull response`,
  );
});

Then('the pull response has no entry for scope {string} in {string}', function (this: SyncWorld, scope: string, member: string) {
  const reply = lastPull(this);
  const map = reply.json?.[member];
  this.assert.ok(map !== null && typeof map === 'object' && !Array.isArray(map), `the pull response has no object "${member}": ${reply.text.slice(0, 500)}`);
  this.assert.ok(!Object.hasOwn(map, scope), `the pull response has an entry for scope "${scope}" in "${member}": ${JSON.stringify(map[scope])}`);
});

const rebuildKey = (name: string, scope: string) => `${name}/${scope}`;

Given('client {string} has started a rebuild of scope {string} with limit {int} and holds its continuation', async function (this: SyncWorld, name: string, scope: string, limit: number) {
  const rebuildId = randomUUID();
  const reply = await this.wire(name).rebuildPage(scope, rebuildId, null, limit);
  if (reply.status !== 200) throw new Error(`client "${name}" could not start a rebuild of ${scope}: ${reply.status} ${reply.text.slice(0, 500)}`);
  if (reply.json.has_more !== true || typeof reply.json.cursor !== 'string') throw new Error(`the first rebuild page of ${scope} with limit ${limit} is already final: the scope holds too few rows to leave a continuation`);
  generationsState(this).openRebuilds.set(rebuildKey(name, scope), { rebuildId, cursor: reply.json.cursor, limit });
});

When('client {string} continues its rebuild of scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const open = generationsState(this).openRebuilds.get(rebuildKey(name, scope));
  if (open === undefined) throw new Error(`client "${name}" holds no open rebuild of scope "${scope}"`);
  await this.wire(name).rebuildPage(scope, open.rebuildId, open.cursor, open.limit);
});

Then('the error body has {string} {string}', function (this: SyncWorld, member: string, value: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.json?.error?.[member], value, `member "${member}" of the ${reply.endpoint} error body ${reply.text.slice(0, 500)}`);
});

When('client {string} rebuilds scope {string} to its final page', async function (this: SyncWorld, name: string, scope: string) {
  const run = await this.wire(name).rebuildAll(scope);
  generationsState(this).lastRebuild = { scope, run };
});

Then('the rebuild pages hold exactly these records:', function (this: SyncWorld, table: DataTable) {
  const last = generationsState(this).lastRebuild;
  if (last === undefined) throw new Error('no rebuild was fetched to its final page in this scenario');
  const final = last.run.pages.at(-1);
  this.assert.equal(final?.status, 200, `a rebuild page of ${last.scope} was answered ${final?.status}: ${final?.text.slice(0, 500)}`);
  const client = [...this.clientUsers.keys()].find((name) => this.hasWire(name) && this.wire(name).manifest !== undefined);
  if (client === undefined) throw new Error('no harness client holds a manifest to name the tables of rebuild records');
  const wire = this.wire(client);
  const named = (tableId: string) => wire.manifest?.tables.find((t) => t.table_id === tableId)?.name ?? tableId;
  const actual = last.run.records.map((record) => `${named(String(record.table))}/${String(keyValue(record.pk))}`).sort();
  const expected = table.hashes().map((row) => `${row.table}/${row.pk}`).sort();
  this.assert.equal(actual, expected, `records of the rebuild of ${last.scope}`);
});

/**
 * The checksum of the last complete rebuild of `scope` client `name` was
 * given, after checking it the way a client does: it must be the scope digest
 * of the records of that rebuild's pages under the current manifest.
 */
async function verifiedRebuildChecksum(world: SyncWorld, name: string, scope: string): Promise<Obj | undefined> {
  const pages = (await clientExchanges(world, name, 'rebuild')).filter((e) => requestOf(e).scope === scope);
  const bodyOf = (e: Exchange) => {
    const answer = deliveredOf(e);
    return answer?.status === 200 ? (parsePlain(answer.body) as Obj | undefined) : undefined;
  };
  const final = [...pages].reverse().find((e) => bodyOf(e)?.has_more === false);
  if (final === undefined) throw new Error(`client "${name}" was given no final rebuild page of scope "${scope}"`);
  const attempt = pages.filter((e) => requestOf(e).rebuild_id === requestOf(final).rebuild_id);
  const records = attempt.flatMap((e) => (bodyOf(e)?.records as Obj[] | undefined) ?? []);
  const checksum = bodyOf(final)?.checksum as Obj | undefined;
  const digest = scopeDigestHex(await currentManifest(world), scope, records.map((r) => ({ table: String(r.table), row: r.row, serverVersion: String(r.server_version) })));
  world.assert.equal(checksum?.digest, digest, `the checksum of the last rebuild of ${scope} against the digest of its records`);
  return checksum;
}

Then(
  'the final pull response carries a checksum for scope {string} equal to the checksum client {string} verified at its last rebuild of that scope',
  async function (this: SyncWorld, scope: string, name: string) {
    const reply = lastPull(this);
    this.assert.equal(reply.json.has_more, false, 'the last pull response is not the final page');
    const rebuilt = await verifiedRebuildChecksum(this, name, scope);
    this.assert.ok(rebuilt !== undefined, `the final rebuild page of ${scope} carries no checksum`);
    this.assert.equal(reply.json.checksums?.[scope], rebuilt, `checksum of scope "${scope}" in the final pull response`);
  },
);
