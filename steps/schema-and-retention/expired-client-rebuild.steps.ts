/**
 * Steps only SYNC-SCHEMA-005 (Expired Client Rebuild) uses: the server's
 * clock and expiry run, the harness client connecting, pulling and pushing
 * under a noted generation, and what the proxy recorded of the client under
 * test answering a generation refusal with a successor batch. Compaction is
 * shared (steps/common/retained-history.steps.ts).
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import type { StartAttempt } from '../../harness/adapters/server.ts';
import { bodyOf, deliveredOf, exchangesOf, upstreamOf } from '../support/exchanges.ts';
import { batchesOf } from '../support/mutations/queue.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import type { Reply } from '../support/reply.ts';
import { batchLabelled, expiryState, generationNoted, noteGeneration, rawArrayElements, sendBatch, taskBatch } from '../support/retention/expiry.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

// The interval the scenarios count against: 30 days is the protocol's default, the one the harness starts the server with.
const DECLARED_INTERVAL_DAYS = 30;

Given('the server stale-client interval is {int} days', async function (this: SyncWorld, days: number) {
  if (days !== DECLARED_INTERVAL_DAYS) throw new Error(`the harness starts the server with its default stale-client interval of ${DECLARED_INTERVAL_DAYS} days, not ${days}`);
  const server = await this.readyServer();
  if (!server.clock || !server.clients) throw new Error(`server adapter "${server.id}" offers no clock and clients controls to count a stale-client interval with`);
});

When('the operator runs client expiry', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.clients) throw new Error(`server adapter "${server.id}" offers no clients control to run expiry with`);
  await server.clients.runExpiry();
});

function requireOk(reply: Reply, what: string): Reply {
  if (reply.status !== 200) throw new Error(`${what} was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  return reply;
}

When('the harness client {string} pushes batch {string} inserting task {string}', async function (this: SyncWorld, name: string, label: string, task: string) {
  requireOk(await sendBatch(this, name, taskBatch(this, name, label, task)), `batch ${label} of client "${name}"`);
});

When('the harness client {string} pulls presenting the cursors the previous pull returned', async function (this: SyncWorld, name: string) {
  const previous = [...this.replies].reverse().find((r) => r.endpoint === 'pull');
  if (previous?.status !== 200) throw new Error(`the previous pull of client "${name}" was not answered 200`);
  const returned = (previous.json.scope_cursors ?? {}) as Record<string, string>;
  if (Object.keys(returned).length === 0) throw new Error(`the previous pull returned no cursor: ${previous.text.slice(0, 500)}`);
  const held = this.wire(name).cursors;
  for (const [scope, cursor] of Object.entries(returned)) if (held.get(scope) !== cursor) throw new Error(`client "${name}" does not hold the cursor of ${scope} the previous pull returned`);
  await this.wire(name).pull();
});

Given('the harness client {string} of user {string} has connected once and never pulled', async function (this: SyncWorld, name: string, user: string) {
  await this.readyServer();
  requireOk(await this.wire(name, user).connect(), `the connect of client "${name}"`);
});

When('the harness client {string} pulls presenting null cursors', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  if (client.cursors.size === 0) throw new Error(`client "${name}" is assigned no scope to present`);
  await client.pull({ '/scopes': Object.fromEntries([...client.cursors.keys()].map((scope) => [scope, { cursor: null }])) });
});

Given('the harness client {string} of user {string} has completed a sync with generation {string}', async function (this: SyncWorld, name: string, user: string, label: string) {
  await this.readyServer();
  const client = this.wire(name, user);
  await client.connectAndRebuild();
  const pages = await client.pullAll();
  requireOk(pages[pages.length - 1] as Reply, `the last pull of client "${name}"`);
  noteGeneration(this, label, client.generation);
});

When('the harness client {string} connects presenting its installed schema, generation {string} and its cursors', async function (this: SyncWorld, name: string, label: string) {
  const client = this.wire(name);
  if ([...client.cursors.values()].every((c) => c === null)) throw new Error(`client "${name}" holds no cursor to present`);
  await client.connect({ client_generation: generationNoted(this, label) });
});

Then('member {string} is an integer greater than {string}', function (this: SyncWorld, member: string, label: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the ${reply.endpoint} was answered: ${reply.text.slice(0, 500)}`);
  const value = reply.json?.[member];
  const earlier = generationNoted(this, label);
  this.assert.ok(Number.isSafeInteger(value) && (value as number) > earlier, `member "${member}" is ${JSON.stringify(value)}, not an integer greater than ${label} = ${earlier}`);
});

Then('member {string} has null for {string}', function (this: SyncWorld, member: string, scope: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the ${reply.endpoint} was answered: ${reply.text.slice(0, 500)}`);
  const entries = (reply.json?.[member] ?? {}) as Obj;
  this.assert.ok(Object.hasOwn(entries, scope) && entries[scope] === null, `member "${member}" gives ${scope} ${JSON.stringify(entries[scope])}, not null: ${reply.text.slice(0, 500)}`);
});

Given('the harness client {string} has pushed batch {string} inserting task {string} and recorded the response bytes as {string}', async function (this: SyncWorld, name: string, label: string, task: string, responseLabel: string) {
  const batch = taskBatch(this, name, label, task);
  const reply = requireOk(await sendBatch(this, name, batch), `batch ${label} of client "${name}"`);
  const applied = ((reply.json?.accepted ?? []) as Obj[]).filter((o) => o.status === 'applied').length;
  if (applied !== batch.mutations.length) throw new Error(`batch ${label} of client "${name}" was not applied: ${reply.text.slice(0, 500)}`);
  expiryState(this).responses.set(responseLabel, batch.first as Reply);
});

async function reconnect(world: SyncWorld, name: string): Promise<number> {
  const client = world.wire(name);
  const before = client.generation;
  requireOk(await client.connect(), `the reconnect of client "${name}"`);
  const after = client.generation;
  if (before === undefined || after === undefined || !(after > before)) throw new Error(`client "${name}" reconnected with generation ${after}, not a new one after ${before}`);
  return after;
}

Given('the harness client {string} has reconnected and received a new generation', async function (this: SyncWorld, name: string) {
  await reconnect(this, name);
});

Given('the harness client {string} has reconnected and received generation {string}', async function (this: SyncWorld, name: string, label: string) {
  noteGeneration(this, label, await reconnect(this, name));
});

When('the harness client {string} resends batch {string} exactly as first sent, with generation {string}', async function (this: SyncWorld, name: string, label: string, generation: string) {
  const batch = batchLabelled(this, label);
  if (batch.requestText === undefined) throw new Error(`batch ${label} was never sent`);
  const sentWith = (JSON.parse(batch.requestText) as Obj).client_generation;
  if (sentWith !== generationNoted(this, generation)) throw new Error(`batch ${label} was first sent with generation ${String(sentWith)}, not ${generation}`);
  await this.wire(name).post('/sync/push', undefined, { raw: batch.requestText, endpoint: 'push' });
});

Then('the response body is byte-identical to {string}', function (this: SyncWorld, label: string) {
  const first = expiryState(this).responses.get(label);
  if (first === undefined) throw new Error(`no response was recorded as "${label}"`);
  const reply = this.lastReply();
  this.assert.equal(reply.status, first.status, `status of the answer compared with ${label}: ${reply.text.slice(0, 300)}`);
  this.assert.ok(Buffer.from(reply.text, 'utf8').equals(Buffer.from(first.text, 'utf8')), `the answer differs from ${label}:\n${label}: ${first.text.slice(0, 1500)}\nnow: ${reply.text.slice(0, 1500)}`);
});

When(/^the harness client "([^"]+)" sends a valid (push of a new batch|pull|rebuild of "[^"]+") request with generation "([^"]+)"$/, async function (this: SyncWorld, name: string, kind: string, label: string) {
  const client = this.wire(name);
  const generation = generationNoted(this, label);
  const scope = /^rebuild of "([^"]+)"$/.exec(kind)?.[1];
  if (kind === 'pull') await client.pull({ client_generation: generation });
  else if (scope !== undefined) await client.rebuildPage(scope, randomUUID(), null, 100, { client_generation: generation });
  else await sendBatch(this, name, taskBatch(this, name, `new batch ${this.replies.length}`, 'task-after-expiry'), generation);
});

Then('the error body has {string} equal to {string}', function (this: SyncWorld, member: string, label: string) {
  const reply = this.lastReply();
  const error = (reply.json?.error ?? {}) as Obj;
  this.assert.equal(error[member], generationNoted(this, label), `error member "${member}" of the ${reply.endpoint} answer: ${reply.text.slice(0, 500)}`);
});

When('the harness client {string} pushes batch {string} inserting task {string} with generation {string}', async function (this: SyncWorld, name: string, label: string, task: string, generation: string) {
  await sendBatch(this, name, taskBatch(this, name, label, task), generationNoted(this, generation));
});

When('the harness client {string} reconnects and pushes batch {string} inserting task {string} with the new generation', async function (this: SyncWorld, name: string, label: string, task: string) {
  const batch = taskBatch(this, name, label, task);
  if (batch.first === undefined) throw new Error(`batch ${label} was not sent before the reconnect`);
  await reconnect(this, name);
  await sendBatch(this, name, batch);
});

// The client under test answering a generation refusal, as the proxy recorded it.

interface SuccessorView {
  old: { batchId: string; body: Obj; bytes: Buffer };
  connectGeneration: number;
  next: { batchId: string; body: Obj; bytes: Buffer; answer: Obj | undefined; status: number | undefined };
  pushes: { batchId: string; generation: unknown; status: number | undefined }[];
}

function successorClient(world: SyncWorld): string {
  const name = expiryState(world).successorClient;
  if (name === undefined) throw new Error('no step named the client whose batches "old" and "new" are');
  return name;
}

async function successorView(world: SyncWorld, name: string): Promise<SuccessorView> {
  const log = await exchangesOf(world, name, { endpoints: ['push', 'connect'] });
  const refusedAt = log.findIndex((e) => e.endpoint === 'push' && upstreamOf(e)?.status === 409 && bodyOf(upstreamOf(e)?.body)?.error?.code === 'client_generation_expired');
  world.assert.ok(refusedAt >= 0, `the proxy recorded no push of client "${name}" answered 409 client_generation_expired`);
  const refused = log[refusedAt] as (typeof log)[number];
  const connectAt = log.findIndex((e, i) => i > refusedAt && e.endpoint === 'connect');
  world.assert.ok(connectAt > refusedAt, `the proxy recorded no connect of client "${name}" after the refused push`);
  const nextAt = log.findIndex((e, i) => i > connectAt && e.endpoint === 'push');
  world.assert.ok(nextAt > connectAt, `the proxy recorded no push of client "${name}" after the reconnect`);
  const connect = log[connectAt] as (typeof log)[number];
  const next = log[nextAt] as (typeof log)[number];
  const oldBody = bodyOf(refused.requestBody) as Obj;
  const nextBody = bodyOf(next.requestBody) as Obj;
  return {
    old: { batchId: String(oldBody.batch_id), body: oldBody, bytes: refused.requestBody },
    connectGeneration: bodyOf(deliveredOf(connect)?.body)?.client_generation,
    next: { batchId: String(nextBody.batch_id), body: nextBody, bytes: next.requestBody, answer: bodyOf(upstreamOf(next)?.body), status: upstreamOf(next)?.status },
    pushes: log.filter((e) => e.endpoint === 'push').map((e) => ({ batchId: String(bodyOf(e.requestBody)?.batch_id), generation: bodyOf(e.requestBody)?.client_generation, status: upstreamOf(e)?.status })),
  };
}

Then(
  'the proxy recorded, from client {string}, a push of batch {string} answered 409 {string}, then a connect, then a push of a batch {string}',
  async function (this: SyncWorld, name: string, _old: string, code: string, _new: string) {
    if (code !== 'client_generation_expired') throw new Error(`this step follows a client_generation_expired refusal, not ${code}`);
    const view = await successorView(this, name);
    expiryState(this).successorClient = name;
    this.assert.ok(view.next.batchId !== 'undefined', 'the push after the reconnect names a batch_id');
  },
);

Then('batch {string} has a different {string} from batch {string} and carries the new {string}', async function (this: SyncWorld, _new: string, member: string, _old: string, generationMember: string) {
  const view = await successorView(this, successorClient(this));
  this.assert.notEqual(view.next.body[member], view.old.body[member], `the ${member} of the successor batch`);
  this.assert.equal(view.next.body[generationMember], view.connectGeneration, `the ${generationMember} of the successor batch, against the one the reconnect issued`);
  this.assert.notEqual(view.next.body[generationMember], view.old.body[generationMember], `the ${generationMember} of the successor batch, against the refused one`);
});

Then(
  'the mutations of batch {string} have the same {string}s, in the same order, with byte-identical mutation objects as batch {string}',
  async function (this: SyncWorld, _new: string, member: string, _old: string) {
    const view = await successorView(this, successorClient(this));
    const ids = (body: Obj) => ((body.mutations ?? []) as Obj[]).map((m) => m[member]);
    this.assert.equal(ids(view.next.body), ids(view.old.body), `the ${member}s of the successor batch against the refused one`);
    const oldRaw = rawArrayElements(view.old.bytes.toString('utf8'), 'mutations');
    const nextRaw = rawArrayElements(view.next.bytes.toString('utf8'), 'mutations');
    this.assert.ok(oldRaw !== undefined && oldRaw.length > 0, 'the refused push holds a mutations array');
    this.assert.equal(nextRaw, oldRaw, 'the mutation objects of the successor batch, byte for byte, against the refused one');
  },
);

Then('the push of batch {string} is answered 200 with both mutations {string}', async function (this: SyncWorld, _new: string, status: string) {
  const view = await successorView(this, successorClient(this));
  this.assert.equal(view.next.status, 200, `the push of the successor batch: ${JSON.stringify(view.next.answer).slice(0, 500)}`);
  const outcomes = ((view.next.answer?.accepted ?? []) as Obj[]).map((o) => `${String(o.mutation_id)} ${String(o.status)}`);
  const expected = ((view.next.body.mutations ?? []) as Obj[]).map((m) => `${String(m.mutation_id)} ${status}`);
  this.assert.equal(expected.length, 2, 'the successor batch carries both mutations');
  this.assert.equal(outcomes, expected, 'the outcomes of the successor batch');
});

Then('client {string} inspection still shows batch {string} with request bytes identical to what was first sent', async function (this: SyncWorld, name: string, _old: string) {
  const view = await successorView(this, name);
  const stored = (await batchesOf(this, name)).find((b) => b.batchId === view.old.batchId);
  this.assert.ok(stored !== undefined, `client "${name}" no longer shows the refused batch ${view.old.batchId}`);
  this.assert.ok(Buffer.from(stored.requestBytes, 'base64').equals(view.old.bytes), `the stored bytes of the refused batch differ from what the proxy recorded it sending`);
});

Then('the proxy recorded exactly one push of batch {string}', async function (this: SyncWorld, _old: string) {
  const view = await successorView(this, successorClient(this));
  this.assert.equal(view.pushes.filter((p) => p.batchId === view.old.batchId).length, 1, `pushes of the refused batch ${view.old.batchId}: ${JSON.stringify(view.pushes)}`);
});

// The restart scenario: which batch went out under the expired generation, and where the title update ended up.

async function expiredPushes(world: SyncWorld, name: string) {
  const view = await successorView(world, name);
  expiryState(world).successorClient = name;
  const expiredGeneration = view.old.body.client_generation;
  return { view, expired: view.pushes.filter((p) => p.generation === expiredGeneration) };
}

Then('every push the proxy recorded from client {string} with the expired generation has the same {string}', async function (this: SyncWorld, name: string, member: string) {
  if (member !== 'batch_id') throw new Error(`pushes are told apart by "batch_id", not "${member}"`);
  const { view, expired } = await expiredPushes(this, name);
  this.assert.ok(expired.length >= 1, `no push of client "${name}" carried the expired generation`);
  this.assert.equal([...new Set(expired.map((p) => p.batchId))], [view.old.batchId], `batch_ids pushed with the expired generation: ${JSON.stringify(view.pushes)}`);
});

Then('that {string} was answered 409 and never sent again', async function (this: SyncWorld, member: string) {
  if (member !== 'batch_id') throw new Error(`pushes are told apart by "batch_id", not "${member}"`);
  const name = successorClient(this);
  const view = await successorView(this, name);
  const sends = view.pushes.filter((p) => p.batchId === view.old.batchId);
  this.assert.equal(sends.map((p) => p.status), [409], `answers to the pushes of batch ${view.old.batchId}: ${JSON.stringify(view.pushes)}`);
});

Then('the mutation ID of the title update appears in exactly one batch answered 200', async function (this: SyncWorld) {
  const name = successorClient(this);
  const view = await successorView(this, name);
  const refusedIds = ((view.old.body.mutations ?? []) as Obj[]).map((m) => String(m.mutation_id));
  this.assert.equal(refusedIds.length, 1, `the refused batch carries the one title update: ${JSON.stringify(view.old.body.mutations)}`);
  const log = await exchangesOf(this, name, { endpoints: ['push'] });
  const carrying = log.filter((e) => upstreamOf(e)?.status === 200 && ((bodyOf(e.requestBody)?.mutations ?? []) as Obj[]).some((m) => m.mutation_id === refusedIds[0]));
  this.assert.equal(new Set(carrying.map((e) => bodyOf(e.requestBody)?.batch_id)).size, 1, `batches answered 200 carrying mutation ${refusedIds[0]}`);
});

// Start-up: a stale-client interval that is not finite and positive stops the server.

const startAttempts = new WeakMap<SyncWorld, StartAttempt>();

function startAttempt(world: SyncWorld): StartAttempt {
  const attempt = startAttempts.get(world);
  if (attempt === undefined) throw new Error('no server start was attempted in this scenario');
  return attempt;
}

When(/^the operator starts the server with stale-client interval (.+)$/, async function (this: SyncWorld, written: string) {
  const server = await this.readyServer();
  if (server.attemptStart === undefined) return undeterminedWithout(this, `server adapter "${server.id}" offers no attemptStart control to start a server with other settings`);
  // "(empty)" stands for a setting given with no value at all.
  const value = written === '(empty)' ? '' : written;
  startAttempts.set(this, await server.attemptStart({ 'stale-client-interval': value }, this.deadlineMs));
  return undefined;
});

Then('the server refuses to start and names the stale-client interval setting', function (this: SyncWorld) {
  const attempt = startAttempt(this);
  this.assert.equal(attempt.started, false, `the server came up: ${attempt.output.slice(-1000)}`);
  this.assert.match(attempt.output, /stale-client-interval/, `the refusal does not name the stale-client interval setting: ${attempt.output.slice(-1000)}`);
});

Then('the server does not start with a default interval', function (this: SyncWorld) {
  const attempt = startAttempt(this);
  this.assert.ok(!attempt.started && attempt.exit !== undefined && !/status 0\b/.test(attempt.exit), `the server did not end with a failure before listening (${attempt.exit ?? 'it listened'}): ${attempt.output.slice(-1000)}`);
});
