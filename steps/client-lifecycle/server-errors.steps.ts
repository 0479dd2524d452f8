/**
 * The server's side of failure reporting: a failed request is answered with
 * the error envelope alone, says whether retrying can help, carries only the
 * context members its code allows, and serves no part of a success body.
 */
import { randomUUID } from 'node:crypto';
import { Then, When } from '@cucumber/cucumber';
import type { SyncWorld } from '../support/world.ts';
import { quoted } from './observe.ts';

When('client {string} pulls without an Authorization header', async function (this: SyncWorld, name: string) {
  const wire = this.wire(name);
  await wire.post('/sync/pull', wire.pullBody(), { user: null, endpoint: 'pull' });
});

When('client {string} pushes a second batch reusing the last batch_id with different content', async function (this: SyncWorld, name: string) {
  const wire = this.wire(name);
  const table = this.model.tables.values().next().value;
  if (!table) throw new Error('no table is registered in this scenario');
  const batchId = randomUUID();
  const row = (id: string) =>
    wire.mutation({ op: 'insert', table: table.name, pk: id, columns: Object.fromEntries(table.columns.filter((c) => !c.key).map((c) => [c.name, c.name === 'owner_id' ? wire.userId : `${c.name}-${id}`])) });
  const first = await wire.push([row(`reuse-${batchId.slice(0, 8)}-1`)], { batch_id: batchId });
  if (first.status !== 200) throw new Error(`the first batch was not accepted: ${first.status} ${first.text}`);
  await wire.push([row(`reuse-${batchId.slice(0, 8)}-2`)], { batch_id: batchId });
});

function errorOf(world: SyncWorld): Record<string, unknown> {
  const body = world.lastReply().json;
  world.assert.ok(body !== null && typeof body === 'object' && typeof body.error === 'object' && body.error !== null, `the answer carries no error object: ${world.lastReply().text}`);
  return body.error as Record<string, unknown>;
}

Then(/^the error body has "retryable" (true|false)$/, function (this: SyncWorld, flag: string) {
  this.assert.equal(errorOf(this).retryable, flag === 'true', 'retryable member of the error body');
});

Then(/^the error body has "retryable" (true|false) and exactly the members (.+)$/, function (this: SyncWorld, flag: string, list: string) {
  const error = errorOf(this);
  this.assert.equal(error.retryable, flag === 'true', 'retryable member of the error body');
  this.assert.equal(Object.keys(error).sort(), quoted(list).sort(), `members of the error body ${JSON.stringify(error)}`);
});

const BASE = ['code', 'message', 'retryable'];

Then(/^the error body carries exactly the extra members (.+)$/, function (this: SyncWorld, extras: string) {
  const error = errorOf(this);
  const extra = Object.keys(error)
    .filter((k) => !BASE.includes(k))
    .sort();
  if (extras === 'none') {
    this.assert.equal(extra, [], `extra members of the error body ${JSON.stringify(error)}`);
    return;
  }
  const optional = /^none beyond an optional complete set of (.+)$/.exec(extras);
  if (optional) {
    const set = quoted(optional[1] as string).sort();
    this.assert.ok(extra.length === 0 || JSON.stringify(extra) === JSON.stringify(set), `extra members ${extra.join(', ')} are neither none nor exactly ${set.join(', ')}`);
    return;
  }
  this.assert.equal(extra, quoted(extras).sort(), `extra members of the error body ${JSON.stringify(error)}`);
});

Then(/^the response has none of the members (.+)$/, function (this: SyncWorld, list: string) {
  const body = this.lastReply().json;
  const names = quoted(list);
  this.assert.ok(names.length > 0, `no member could be read from: ${list}`);
  const present = names.filter((n) => body !== null && typeof body === 'object' && Object.hasOwn(body, n));
  this.assert.equal(present, [], `success members in the answer ${this.lastReply().text}`);
});
