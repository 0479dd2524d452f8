/**
 * SYNC-MUT-021 Sealed Batch Retry
 * (features/mutation-and-data-correctness/sealed-batch-retry.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Then } from '@cucumber/cucumber';
import { failedExchange, failureTime, lastFailure } from '../support/client-lifecycle/observe.ts';
import { bodyOf, deliveredOf, exchangesOf } from '../support/exchanges.ts';
import { canonicalMutation, pushesOf, rowMatcher, type SentPush, serverOutcomes, wireColumn } from '../support/mutations/pushes.ts';
import { batchesOf, describeQueue, ofRow, queueOf, written } from '../support/mutations/queue.ts';
import { queueState } from '../support/mutations/state.ts';
import { servedRow } from '../support/server-rows.ts';
import { keyValue, type Obj } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

const THREE = ['n-1', 'n-2', 'n-3'];

async function firstPush(world: SyncWorld, name: string): Promise<SentPush> {
  const first = (await pushesOf(world, name))[0];
  if (first === undefined) throw new Error(`client "${name}" sent no push`);
  return first;
}

Then('client {string} shows one sealed batch whose stored request bytes equal the bytes the proxy holds', async function (this: SyncWorld, name: string) {
  const hold = queueState(this).holds.find((h) => h.client === name && h.what === 'request');
  if (hold === undefined) throw new Error(`the proxy holds no push request of client "${name}"`);
  await hold.engaged;
  const sealed = (await batchesOf(this, name)).filter((b) => b.state === 'sealed');
  this.assert.equal(sealed.length, 1, `sealed batches client "${name}" shows: ${sealed.map((b) => b.batchId).join(', ')}`);
  this.assert.ok(hold.bytes !== undefined, 'the held request has no bytes');
  this.assert.equal(Buffer.from(sealed[0]?.requestBytes ?? '', 'base64').toString('utf8'), hold.bytes.toString('utf8'), 'the stored sealed request against the bytes the proxy holds');
});

Then(/^client "([^"]+)" shows the three inserts with status "([a-z_]+)"(, that batch ID and ordinals 0, 1 and 2)?$/, async function (this: SyncWorld, name: string, status: string, placed: string | undefined) {
  const records = await queueOf(this, name);
  const inserts = THREE.map((row) => written(ofRow(records, row)).find((r) => r.op === 'insert'));
  this.assert.equal(
    inserts.map((r) => r?.status),
    THREE.map(() => status),
    `the inserts of ${THREE.join(', ')} (${describeQueue(records)})`,
  );
  if (!placed) return;
  const sealed = (await batchesOf(this, name)).filter((b) => b.state === 'sealed');
  this.assert.equal(
    inserts.map((r) => ({ batch: r?.batchId, ordinal: r?.ordinal })),
    [0, 1, 2].map((ordinal) => ({ batch: sealed[0]?.batchId, ordinal })),
    'batch and ordinal of each insert',
  );
});

Then('the first push request the proxy recorded from client {string} after the restart is byte-identical to the sealed batch client {string} stored before the crash', async function (this: SyncWorld, name: string, same: string) {
  const state = queueState(this);
  const mark = state.restartMarks.get(name);
  const stored = state.batchesAtRestart.get(same)?.filter((b) => b.state === 'sealed');
  if (mark === undefined || stored === undefined) throw new Error(`client "${name}" was not restarted in this scenario`);
  this.assert.equal(stored.length, 1, `sealed batches client "${name}" had stored when it came back: ${stored.map((b) => b.batchId).join(', ')}`);
  const after = (await pushesOf(this, name, mark))[0];
  this.assert.ok(after !== undefined, `client "${name}" sent no push after the restart`);
  this.assert.equal(after.bytes.toString('utf8'), Buffer.from(stored[0]?.requestBytes ?? '', 'base64').toString('utf8'), 'the first push after the restart against the stored sealed batch');
});

Then('the server accepted each of the three inserts exactly once', async function (this: SyncWorld) {
  const client = this.syncWindows.at(-1)?.client ?? 'A';
  const records = await queueOf(this, client);
  const pushes = await pushesOf(this, client);
  for (const row of THREE) {
    const insert = written(ofRow(records, row)).find((r) => r.op === 'insert');
    this.assert.ok(insert !== undefined, `client "${client}" shows no insert of ${row}`);
    const outcomes = serverOutcomes(pushes, insert.id);
    this.assert.ok(outcomes.length > 0, `the server never answered the insert of ${row}`);
    this.assert.equal([...new Set(outcomes.map((o) => `${o.status} ${o.server_version}`))], [`applied ${outcomes[0]?.server_version}`], `every answer the server gave for the insert of ${row}`);
    const served = await servedRow(this, insert.table, row, (await this.process(client)).userId);
    this.assert.equal(served?.serverVersion, outcomes[0]?.server_version, `the version the server holds for ${row}`);
  }
});

Then(/^the first push request of client "([^"]+)" carries exactly the inserts of rows "([^"]+)", "([^"]+)" and "([^"]+)", with body "([^"]*)" for "([^"]+)"$/, async function (this: SyncWorld, name: string, a: string, b: string, c: string, body: string, row: string) {
  const first = await firstPush(this, name);
  this.assert.equal(
    first.mutations.map((m) => `${String(m.op)} ${String(keyValue(m.pk))}`),
    [a, b, c].map((r) => `insert ${r}`),
    'mutations of the first push request',
  );
  const mutation = first.mutations.find((m) => String(keyValue(m.pk)) === row) as Obj;
  this.assert.equal(await wireColumn(this, 'notes', mutation, 'body'), body, `body of the insert of ${row} in the first push`);
});

Then(/^a later push request of client "([^"]+)" with a different batch_id carries the insert of row "([^"]+)" and the update of row "([^"]+)"$/, async function (this: SyncWorld, name: string, inserted: string, updated: string) {
  const [first, ...later] = await pushesOf(this, name);
  const carrying = later.filter((p) => p.batchId !== first?.batchId && p.mutations.some((m) => m.op === 'insert' && String(keyValue(m.pk)) === inserted) && p.mutations.some((m) => m.op === 'update' && String(keyValue(m.pk)) === updated));
  this.assert.ok(carrying.length > 0, `no later push of client "${name}" carries the insert of ${inserted} and the update of ${updated}: ${later.map((p) => `${p.batchId}: ${p.mutations.map((m) => `${String(m.op)} ${String(keyValue(m.pk))}`).join(', ')}`).join(' | ')}`);
});

Then('the proxy recorded at least {int} push requests from client {string}', async function (this: SyncWorld, count: number, name: string) {
  const pushes = await exchangesOf(this, name, { endpoints: ['push'] });
  this.assert.ok(pushes.length >= count, `client "${name}" sent ${pushes.length} push requests`);
});

Then(/^every push request the proxy recorded from client "([^"]+)"( under the first batch_id)? is byte-identical to the first$/, async function (this: SyncWorld, name: string, underFirst: string | undefined) {
  const pushes = await pushesOf(this, name);
  const first = pushes[0];
  this.assert.ok(first !== undefined && pushes.length >= 2, `client "${name}" sent ${pushes.length} push requests: nothing was retried`);
  const compared = underFirst ? pushes.filter((p) => p.batchId === first.batchId) : pushes;
  if (underFirst) this.assert.ok(compared.length >= 2, `client "${name}" never resent its first batch`);
  this.assert.equal(
    compared.map((p) => p.bytes.toString('utf8')),
    compared.map(() => first.bytes.toString('utf8')),
    `push requests of client "${name}" against the first`,
  );
});

Then('the retry was sent no earlier than {int} seconds after the failed attempt', async function (this: SyncWorld, seconds: number) {
  const failure = lastFailure(this);
  const proxy = await this.proxy();
  const failed = failedExchange(proxy, failure);
  this.assert.ok(failed !== undefined, `the arranged failure "${failure.description}" never happened`);
  const retry = (await exchangesOf(this, failure.client, { endpoints: ['push'] })).find((e) => e.seq > failed.seq);
  this.assert.ok(retry?.receivedAt !== undefined, `client "${failure.client}" sent no push after the failed one`);
  const earliest = failureTime(this, failure) + seconds * 1000;
  this.assert.ok(retry.receivedAt >= earliest, `the retry reached the proxy ${earliest - retry.receivedAt} ms before the failure plus ${seconds} s`);
});

Then('no two push requests the proxy recorded from client {string} share a batch_id but differ in mutations, order or content', async function (this: SyncWorld, name: string) {
  const byBatch = new Map<string, string[]>();
  for (const push of await pushesOf(this, name)) byBatch.set(push.batchId, [...(byBatch.get(push.batchId) ?? []), JSON.stringify(push.mutations.map(canonicalMutation))]);
  this.assert.ok(byBatch.size > 0, `client "${name}" sent no push`);
  this.assert.equal(
    [...byBatch.entries()].filter(([, contents]) => new Set(contents).size > 1).map(([batch]) => batch),
    [],
    'batch IDs sent with more than one content',
  );
});

Then(/^the update of row "([^"]+)" and the delete of row "([^"]+)" reached the server in a later batch with a different batch_id$/, async function (this: SyncWorld, updated: string, deleted: string) {
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const [first, ...later] = await pushesOf(this, name);
  const isUpdate = await rowMatcher(this, 'notes', updated);
  const isDelete = await rowMatcher(this, 'notes', deleted);
  const batch = later.find((p) => p.batchId !== first?.batchId && p.mutations.some((m) => isUpdate(m) && m.op === 'update') && p.mutations.some((m) => isDelete(m) && m.op === 'delete'));
  this.assert.ok(batch !== undefined, `no later batch of client "${name}" carries the update of ${updated} and the delete of ${deleted}`);
  const applied = new Set(((batch.answerBody?.accepted ?? []) as Obj[]).filter((o) => o.status === 'applied').map((o) => o.mutation_id));
  this.assert.ok(
    batch.mutations.filter((m) => isUpdate(m) || isDelete(m)).every((m) => applied.has(m.mutation_id)),
    `the server did not apply both mutations of batch ${batch.batchId}: ${JSON.stringify(batch.answerBody)}`,
  );
});

Then('client {string} connected again before pushing', async function (this: SyncWorld, name: string) {
  const log = await exchangesOf(this, name, { endpoints: ['connect', 'push'] });
  const pushes = log.filter((e) => e.endpoint === 'push');
  const [first, second] = pushes;
  this.assert.ok(first !== undefined && second !== undefined, `client "${name}" sent ${pushes.length} push requests`);
  this.assert.ok(
    log.some((e) => e.endpoint === 'connect' && e.seq > first.seq && e.seq < second.seq),
    `client "${name}" sent no connect between its refused push and the next one`,
  );
});

Then('the next push request of client {string} has a new batch_id, the new client_generation and the same three mutations with byte-identical content', async function (this: SyncWorld, name: string) {
  const [first, next] = await pushesOf(this, name);
  this.assert.ok(first !== undefined && next !== undefined, `client "${name}" sent fewer than two push requests`);
  this.assert.notEqual(next.batchId, first.batchId, 'batch_id of the next push request');
  // The generation the reconnect issued: the last connect answer before the next push.
  const connects = (await exchangesOf(this, name, { endpoints: ['connect'] })).filter((e) => e.seq < next.exchange.seq);
  const last = connects.at(-1);
  const issued = (bodyOf(last === undefined ? undefined : deliveredOf(last)?.body) as Obj | undefined)?.client_generation;
  this.assert.notEqual(next.generation, first.generation, 'client_generation of the next push request');
  this.assert.equal(next.generation, issued, 'client_generation of the next push request: the one the reconnect issued');
  this.assert.equal(next.mutations.map(canonicalMutation), first.mutations.map(canonicalMutation), 'mutations of the next push request against the refused one');
  this.assert.equal(next.mutations.length, 3, 'mutations the next push request carries');
});

Then('the proxy recorded no later push request from client {string} with the first batch_id', async function (this: SyncWorld, name: string) {
  const [first, ...later] = await pushesOf(this, name);
  this.assert.ok(first !== undefined, `client "${name}" sent no push`);
  this.assert.equal(later.filter((p) => p.batchId === first.batchId).length, 0, `later push requests of client "${name}" with batch_id ${first.batchId}`);
});

Then('client {string} shows the first batch unchanged and not scheduled for sending', async function (this: SyncWorld, name: string) {
  const first = await firstPush(this, name);
  const stored = (await batchesOf(this, name)).find((b) => b.batchId === first.batchId);
  this.assert.ok(stored !== undefined, `client "${name}" no longer shows batch ${first.batchId}`);
  this.assert.equal(Buffer.from(stored.requestBytes, 'base64').toString('utf8'), first.bytes.toString('utf8'), `stored request of batch ${first.batchId}`);
  this.assert.ok(stored.state !== 'sealed' && stored.state !== 'pending', `batch ${first.batchId} is still "${stored.state}", due to be sent`);
});
