/**
 * SYNC-SEED-005 Bound Portable Seed Continuation
 * (features/startup-and-portable-seed/bound-portable-seed-continuation.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import { artifactState, readReceipt } from '../support/seeds/artifacts.ts';
import { connectsOf, connectWithReceipts, type Obj } from '../support/seeds/receipt-conversion.ts';
import type { SyncWorld } from '../support/world.ts';

function addedOf(answer: Obj | undefined): { id: string; cursor: unknown }[] {
  return ((answer?.scopes as Obj | undefined)?.add ?? []) as { id: string; cursor: unknown }[];
}

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
