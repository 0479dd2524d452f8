/**
 * Steps of SYNC-PULL-010 Immutable Rebuild Snapshot: two identical first
 * rebuild requests raced against each other, the order and keys of the
 * records all pages delivered, and the versions they carry compared with
 * what the harness client was given before the rebuild began.
 */
import { Then, When } from '@cucumber/cucumber';
import { bodyOf, clientIdOf, deliveredOf, exchangesIn } from '../support/exchanges.ts';
import { adoptPagedRebuild, pagedRebuild, showPagesSoFar, strictRecords } from '../support/rebuild-runs/paged.ts';
import type { Reply } from '../support/reply.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

/** The two answers of the raced first requests, per scenario. */
const raced = new WeakMap<SyncWorld, Reply[]>();

When(
  'the harness client {string} sends these two first rebuild requests concurrently, both for {string} with limit {int} and rebuild ID {string}',
  async function (this: SyncWorld, name: string, scope: string, limit: number, rebuildId: string) {
    const client = this.wire(name);
    const replies = await Promise.all([client.rebuildPage(scope, rebuildId, null, limit), client.rebuildPage(scope, rebuildId, null, limit)]);
    raced.set(this, replies);
    // The remaining pages follow from the first answer; the check below requires both to be the same.
    showPagesSoFar(this, adoptPagedRebuild(this, name, scope, limit, rebuildId, replies[0] as Reply));
  },
);

Then('both responses have status {int} and byte-identical bodies', function (this: SyncWorld, status: number) {
  const replies = raced.get(this);
  if (replies === undefined || replies.length !== 2) throw new Error('no two racing requests were sent in this scenario');
  const [first, second] = replies as [Reply, Reply];
  this.assert.equal([first.status, second.status], [status, status], `statuses of the two racing first requests: ${first.text.slice(0, 300)} / ${second.text.slice(0, 300)}`);
  this.assert.equal(second.text, first.text, 'the bodies of the two racing first requests');
});

Then(/^the records of all pages, concatenated in order, have "pk" values ([0-9]+(?:, [0-9]+)*) with no repeat$/, function (this: SyncWorld, list: string) {
  const last = generationsState(this).lastRebuild;
  if (last === undefined) throw new Error('no rebuild was fetched in this scenario');
  const keys = strictRecords(last.run.pages).map((record) => String(keyValue(record.pk)));
  this.assert.equal(keys, list.split(', '), `the keys of the records of the rebuild of ${last.scope}, in page order`);
  this.assert.equal(new Set(keys).size, keys.length, `no key repeats across the pages of the rebuild of ${last.scope}`);
});

Then('the {string} of each record equals the one the harness received for that row when it completed its sync', async function (this: SyncWorld, member: string) {
  if (member !== 'server_version') throw new Error(`records are compared by "server_version", not "${member}"`);
  const last = generationsState(this).lastRebuild;
  if (last === undefined) throw new Error('no rebuild was fetched in this scenario');
  const name = [...this.clientUsers.keys()].find((n) => this.hasWire(n));
  if (name === undefined) throw new Error('no harness client completed a sync in this scenario');
  const attempt = pagedRebuild(this, name, last.scope);
  const proxy = await this.proxy();
  const exchanges = exchangesIn(proxy.exchanges, { clientId: await clientIdOf(this, name), endpoints: ['pull', 'rebuild'] });
  // What the client was given before its paged attempt began: its sync.
  const start = exchanges.findIndex((e) => bodyOf(e.requestBody)?.rebuild_id === attempt.rebuildId);
  const received = new Map<string, string>();
  for (const exchange of exchanges.slice(0, start < 0 ? exchanges.length : start)) {
    const answer = deliveredOf(exchange);
    const body = answer?.status === 200 ? bodyOf(answer.body) : undefined;
    for (const row of [...(body?.records ?? []), ...(body?.changes ?? [])]) if (row.scope === undefined || row.scope === last.scope) received.set(`${row.table} ${JSON.stringify(keyValue(row.pk))}`, String(row.server_version));
  }
  const records = last.run.records;
  this.assert.ok(records.length > 0, `the rebuild of ${last.scope} delivered records`);
  for (const record of records) {
    const key = `${record.table} ${JSON.stringify(keyValue(record.pk))}`;
    this.assert.ok(received.has(key), `client "${name}" received ${key} when it completed its sync`);
    this.assert.equal(String(record.server_version), received.get(key), `the server_version of record ${key} of the rebuild of ${last.scope}`);
  }
});
