/**
 * Continuation receipts presented by the harness's own protocol clients: a
 * first connect carrying the seed's schema and receipts, the cursors each
 * connect yields, and receipts or converted cursors presented where they do
 * not belong (another client's pull, a rebuild, a connect without a
 * credential).
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import type { SyncWorld } from '../support/world.ts';
import { artifactReceipts, artifactState, publishedResult, readReceipt } from './artifacts.ts';

type Obj = Record<string, unknown>;

/** Per scenario: the connect answer each harness client got when it presented receipts. */
const connects = new WeakMap<SyncWorld, Map<string, Obj>>();

function connectsOf(world: SyncWorld): Map<string, Obj> {
  let map = connects.get(world);
  if (map === undefined) {
    map = new Map();
    connects.set(world, map);
  }
  return map;
}

async function connectWithReceipts(world: SyncWorld, name: string, user: string, file: string): Promise<void> {
  await world.readyServer();
  const client = world.newWire(name, user);
  const seed = publishedResult(world, file);
  const reply = await client.connect({ schema: { ...seed.schema }, seed_receipts: artifactReceipts(world, file) });
  connectsOf(world).set(name, (reply.status === 200 ? reply.json : { status: reply.status, body: reply.json }) as Obj);
}

function addedOf(answer: Obj | undefined): { id: string; cursor: unknown }[] {
  return ((answer?.scopes as Obj | undefined)?.add ?? []) as { id: string; cursor: unknown }[];
}

When('the harness client {string} of user {string} connects for the first time presenting the schema of {string} and its receipts', async function (this: SyncWorld, name: string, user: string, file: string) {
  await connectWithReceipts(this, name, user, file);
});

Given('the harness client {string} of user {string} has connected for the first time presenting the schema of {string} and its receipts', async function (this: SyncWorld, name: string, user: string, file: string) {
  await connectWithReceipts(this, name, user, file);
  const reply = this.lastReply();
  if (reply.status !== 200) throw new Error(`the connect of "${name}" was answered ${reply.status}: ${reply.text}`);
});

Then('each connect lists {string} and {string} in {string} with a nonempty cursor', function (this: SyncWorld, first: string, second: string, _where: string) {
  const answers = connectsOf(this);
  this.assert.ok(answers.size >= 2, `${answers.size} harness clients connected presenting receipts`);
  for (const [name, answer] of answers) {
    for (const scope of [first, second]) {
      const cursor = addedOf(answer).find((s) => s.id === scope)?.cursor;
      this.assert.ok(typeof cursor === 'string' && cursor !== '', `the connect of "${name}" lists ${scope} in scopes.add with a nonempty cursor (found ${JSON.stringify(cursor)})`);
    }
  }
});

function receivedCursor(world: SyncWorld, name: string, scope: string): string {
  const cursor = addedOf(connectsOf(world).get(name)).find((s) => s.id === scope)?.cursor;
  if (typeof cursor !== 'string') throw new Error(`"${name}" received no cursor for ${scope} from its connect`);
  return cursor;
}

Then('the cursor {string} received for {string} differs from the one {string} received', function (this: SyncWorld, a: string, scope: string, b: string) {
  this.assert.notEqual(receivedCursor(this, a, scope), receivedCursor(this, b, scope), `the cursors of ${scope} given to "${a}" and "${b}"`);
});

When('the harness client {string} pulls presenting the cursor {string} received for {string}', async function (this: SyncWorld, name: string, owner: string, scope: string) {
  const client = this.wire(name);
  const body = client.pullBody();
  (body.scopes as Obj)[scope] = { cursor: receivedCursor(this, owner, scope) };
  // Another client's cursor is wrong on purpose: the proxy must not hold the request against the harness.
  await client.post('/sync/pull', body, { invalid: true, endpoint: 'pull' });
});

When('the harness client {string} requests a rebuild page of {string} presenting that receipt as {string}', async function (this: SyncWorld, name: string, scope: string, member: string) {
  const receipt = readReceipt(this, scope);
  const client = this.wire(name);
  await client.rebuildPage(scope, randomUUID(), null, 1000, { [member]: receipt }, { invalid: true });
});

When('the harness sends a raw connect for a fresh client with {string} holding that receipt and no {string} header', async function (this: SyncWorld, member: string, _header: string) {
  await this.readyServer();
  const receipts = Object.fromEntries(artifactState(this).receipts);
  if (Object.keys(receipts).length === 0) throw new Error('the harness read no receipt from a seed artifact');
  const probe = this.newWire(`seed-anonymous-${randomUUID().slice(0, 8)}`, 'anonymous');
  const body = probe.connectBody();
  body[member] = receipts;
  // `user: null` sends no Authorization header at all.
  await probe.post('/sync/connect', body, { user: null, endpoint: 'connect' });
});

Then('member {string} does not list {string}', function (this: SyncWorld, pointer: string, scope: string) {
  const body = this.lastReply().json as Obj;
  const list = pointer.split('.').reduce<unknown>((v, k) => (v as Obj | undefined)?.[k], body) as { id?: string }[] | undefined;
  this.assert.ok(Array.isArray(list), `member ${pointer} is a list`);
  this.assert.ok(!(list ?? []).some((s) => s.id === scope), `${pointer} does not list ${scope}: ${JSON.stringify(list)}`);
});

Then('no entry of {string} or {string} carries a cursor for {string}', function (this: SyncWorld, first: string, second: string, scope: string) {
  const body = this.lastReply().json as Obj;
  const added = ((body.scopes as Obj | undefined)?.add ?? []) as { id: string; cursor: unknown }[];
  this.assert.equal(first, 'scopes.add', 'the first member the step reads');
  this.assert.equal(
    added.filter((s) => s.id === scope && s.cursor !== null),
    [],
    `${first} entries of ${scope} with a cursor`,
  );
  const updates = (body[second] ?? {}) as Obj;
  this.assert.ok(!(scope in updates) || updates[scope] === null, `${second} carries no cursor for ${scope}: ${JSON.stringify(updates)}`);
});
