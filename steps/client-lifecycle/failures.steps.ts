/**
 * Retryable and non-retryable failures seen by a client under test: the
 * harness arranges one failing request, then reads the client's status,
 * backoff record, durable-state snapshot, queue and the requests it sent.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import type { SyncWorld } from '../support/world.ts';
import { arrangeFailure, ORDINALS } from './arranged-failures.ts';
import type { StageEndpoint } from './fault-stage.ts';
import {
  backoffOf,
  deliveredStatus,
  failedExchange,
  failureTime,
  json,
  lastFailure,
  lifecycle,
  OPERATION_OF,
  requestsOf,
  snapshotDifference,
  snapshotOf,
  statusOf,
  waitUntil,
} from './observe.ts';

processPhrase(/^client "([^"]+)" is (?:still )?in state "/);
processPhrase(/^client "([^"]+)" has no rebuild pending$/);
processPhrase(/^client "([^"]+)" has been restarted on the same database/);
processPhrase(/the durable sync state of client "([^"]+)"/);
processPhrase(/^the backoff record of client "([^"]+)"/);
processPhrase(/^the proxy will answer the \w+ \w+ request of client "([^"]+)" with/);
processPhrase(/^the proxy will drop the next push response to client "([^"]+)"/);
processPhrase(/^client "([^"]+)" reports the mutations? for rows? /);
processPhrase(/^client "([^"]+)" reports no server version for rows /);
processPhrase(/^client "([^"]+)" still holds the mutation for row /);
processPhrase(/^client "([^"]+)" has no backoff record$/);
processPhrase(/^the (?:connect|push|pull|rebuild) request client "([^"]+)" sent after the failure/);
processPhrase(/^the (?:connect|push|pull|rebuild) request of client "([^"]+)" was answered/);

Given('client {string} has no rebuild pending', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  const { scopes } = await client.call<{ scopes: { scopeId: string; rebuildRequired: boolean }[] }>('inspectScopes');
  this.assert.equal(
    scopes.filter((s) => s.rebuildRequired).map((s) => s.scopeId),
    [],
    `client "${name}" should start with every scope rebuilt`,
  );
});

/** A client that was ready syncs without reconnecting; a restarted one connects first, so its connect can be failed. */
Given(/^client "([^"]+)" has been restarted on the same database(?:, so that its next sync connects first| with no rebuild pending)$/, async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  await client.process.restart();
  const { scopes } = await client.call<{ scopes: { scopeId: string; rebuildRequired: boolean }[] }>('inspectScopes');
  this.assert.equal(
    scopes.filter((s) => s.rebuildRequired).map((s) => s.scopeId),
    [],
    `client "${name}" should come back with every scope rebuilt`,
  );
});

Given(
  /^when the next (connect|push|pull|rebuild) request of client "([^"]+)" reaches the proxy, the harness will snapshot the durable sync state of client "([^"]+)" and the proxy will answer it with (.+)$/,
  async function (this: SyncWorld, endpoint: StageEndpoint, name: string, snapshotted: string, failure: string) {
    if (snapshotted !== name) throw new Error('the snapshot is taken of the client whose request fails');
    await arrangeFailure(this, name, endpoint, 1, failure, true);
  },
);

Given(/^the proxy will answer the (next|second|third) (connect|push|pull|rebuild) request of client "([^"]+)" with (.+)$/, async function (this: SyncWorld, ordinal: string, endpoint: StageEndpoint, name: string, failure: string) {
  await arrangeFailure(this, name, endpoint, ORDINALS[ordinal] ?? 1, failure);
});

Given('the proxy will drop the next push response to client {string} after the server has answered', async function (this: SyncWorld, name: string) {
  await arrangeFailure(this, name, 'push', 1, 'a transport error after the server committed the push');
});

Then(/^client "([^"]+)" is in state "([a-z_]+)" with operation "([a-z_]+)"$/, async function (this: SyncWorld, name: string, state: string, operation: string) {
  const client = await this.process(name);
  const status = await statusOf(client);
  this.assert.equal(status.status, state, `state of client "${name}"`);
  const backoff = await backoffOf(client);
  this.assert.equal(backoff?.operation, operation, `operation the backoff record of client "${name}" resumes`);
});

Then(/^client "([^"]+)" is (?:still )?in state "([a-z_]+)"$/, async function (this: SyncWorld, name: string, state: string) {
  const status = await statusOf(await this.process(name));
  this.assert.equal(status.status, state, `state of client "${name}"`);
});

Then('the durable sync state of client {string} equals that snapshot except for its backoff record', async function (this: SyncWorld, name: string) {
  const state = lifecycle(this);
  const stageErrors = state.stage?.hookErrors ?? [];
  if (stageErrors.length > 0) throw new Error(`the snapshot could not be taken while the request waited: ${stageErrors.map((e) => e.message).join('; ')}`);
  const before = state.snapshot;
  if (!before) throw new Error(`no snapshot of client "${name}" was taken: the request to be failed never reached the proxy`);
  const after = await snapshotOf(await this.process(name));
  this.assert.equal(after.digest, before.digest, `durable sync state of client "${name}" changed beyond retry bookkeeping (${snapshotDifference(before, after)})`);
});

Then(
  /^the backoff record of client "([^"]+)" names the interrupted (connect|push|pull|rebuild) request, attempt (\d+) and a next retry time no earlier than any Retry-After it was given$/,
  async function (this: SyncWorld, name: string, endpoint: StageEndpoint, attempt: string) {
    const client = await this.process(name);
    const backoff = await backoffOf(client);
    this.assert.ok(backoff !== null, `client "${name}" has no backoff record`);
    this.assert.equal(backoff.operation, OPERATION_OF[endpoint], `interrupted operation in the backoff record of client "${name}"`);
    this.assert.equal(backoff.attempt, Number(attempt), `attempt count in the backoff record of client "${name}"`);
    const failure = lastFailure(this, name);
    const exchange = failedExchange(await this.proxy(), failure);
    this.assert.ok(exchange !== undefined, `the ${endpoint} request to be failed was never sent`);
    // The client cannot have learnt of the failure before it happened, so its schedule must not start earlier.
    const lowerBound = failureTime(this, failure) + (failure.retryAfterSeconds ?? 0) * 1000;
    this.assert.ok(backoff.nextRetryAt >= lowerBound, `next retry at ${new Date(backoff.nextRetryAt).toISOString()} is earlier than ${new Date(lowerBound).toISOString()} (failure plus Retry-After)`);
  },
);

When('the Retry-After delay has passed', async function (this: SyncWorld) {
  const failure = lastFailure(this);
  const backoff = await backoffOf(await this.process(failure.client));
  // The client's own schedule is the condition: the harness waits for that instant, not for a guessed duration.
  this.assert.ok(backoff !== null, `client "${failure.client}" has no retry scheduled after "${failure.description}"`);
  await waitUntil(backoff.nextRetryAt, this.deadlineMs, `the retry of client "${failure.client}"`);
});

Then(/^the (connect|push|pull|rebuild) request client "([^"]+)" sent after the failure has exactly the same bytes as the failed one$/, async function (this: SyncWorld, endpoint: StageEndpoint, name: string) {
  const failure = lastFailure(this, name);
  const proxy = await this.proxy();
  const failed = failedExchange(proxy, failure);
  this.assert.ok(failed !== undefined, `the ${endpoint} request to be failed was never sent`);
  const next = requestsOf(proxy, failure.clientId, { endpoint, after: failed.seq })[0];
  this.assert.ok(next !== undefined, `client "${name}" sent no ${endpoint} request after the failed one`);
  this.assert.equal(next.requestBody.toString('utf8'), failed.requestBody.toString('utf8'), `the retried ${endpoint} request differs from the failed one`);
});

interface InspectedMutation {
  id: string;
  table: string;
  recordId?: string;
  op: string;
  status: string;
  batchId?: string | null;
}

async function mutationsOf(world: SyncWorld, name: string): Promise<InspectedMutation[]> {
  return (await (await world.process(name)).call<{ mutations: InspectedMutation[] }>('inspectMutations')).mutations;
}

/** The mutations of one row, by the `recordId` the client reports (a client that omits it matches nothing, so the check fails). */
function ofRow(mutations: InspectedMutation[], row: string): InspectedMutation[] {
  return mutations.filter((m) => m.recordId === row);
}

Then(/^client "([^"]+)" reports the mutation for row "([^"]+)" as accepted( exactly once)?$/, async function (this: SyncWorld, name: string, row: string, once: string | undefined) {
  const found = ofRow(await mutationsOf(this, name), row);
  if (once) this.assert.equal(found.length, 1, `client "${name}" reports ${found.length} mutations for row ${row}`);
  this.assert.ok(found.length > 0, `client "${name}" reports no mutation for row ${row}`);
  this.assert.equal(
    found.map((m) => m.status),
    found.map(() => 'accepted'),
    `status of the mutations of row ${row}`,
  );
});

Then('client {string} still holds the mutation for row {string} and it is inspectable', async function (this: SyncWorld, name: string, row: string) {
  const found = ofRow(await mutationsOf(this, name), row);
  this.assert.equal(found.length, 1, `client "${name}" should keep exactly one mutation for row ${row}`);
  this.assert.ok(['pending', 'sealed'].includes(found[0]?.status ?? ''), `the mutation of row ${row} is ${found[0]?.status}, not still pending or sealed`);
});

Then(/^client "([^"]+)" reports the mutations for rows "([^"]+)" and "([^"]+)" as sealed and not yet reconciled$/, async function (this: SyncWorld, name: string, first: string, second: string) {
  const mutations = await mutationsOf(this, name);
  for (const row of [first, second]) {
    const found = ofRow(mutations, row);
    this.assert.equal(
      found.map((m) => m.status),
      ['sealed'],
      `mutations of row ${row} on client "${name}"`,
    );
  }
});

Then(/^client "([^"]+)" reports no server version for rows "([^"]+)" and "([^"]+)"$/, async function (this: SyncWorld, name: string, first: string, second: string) {
  const client = await this.process(name);
  const { versions } = await client.call<{ versions: { recordId: string; serverVersion: string }[] }>('inspectRowVersions');
  this.assert.equal(
    versions.filter((v) => v.recordId === first || v.recordId === second),
    [],
    `client "${name}" holds server versions for rows whose push outcome it never received`,
  );
});

Then('the server has exactly one row {string} in table {string}', async function (this: SyncWorld, id: string, table: string) {
  const server = await this.server();
  if (!server.sourceSql) throw new Error('the server adapter offers no source SQL');
  const key = this.model.keyColumn(table);
  const rows = await server.sourceSql.query(`SELECT count(*)::int AS n FROM public."${table}" WHERE "${key.name}"::text = $1`, [id]);
  this.assert.equal(rows[0]?.n, 1, `rows ${id} in ${table} on the server`);
});

Then('client {string} has no backoff record', async function (this: SyncWorld, name: string) {
  this.assert.equal(await backoffOf(await this.process(name)), null, `backoff record of client "${name}"`);
});

Then(/^the (connect|push|pull|rebuild) request of client "([^"]+)" was answered (\d{3}) with error code "([a-z_]+)"$/, async function (this: SyncWorld, endpoint: string, name: string, status: string, code: string) {
  const client = await this.process(name);
  const answered = requestsOf(await this.proxy(), client.clientId, { endpoint }).filter((e) => deliveredStatus(e) === Number(status));
  this.assert.ok(answered.length > 0, `no ${endpoint} request of client "${name}" was answered ${status}`);
  const first = answered[0]?.delivered as { body: Buffer } | undefined;
  const body = first === undefined ? undefined : json(first.body);
  this.assert.equal(body?.error?.code, code, `error code of the ${status} answer`);
});
