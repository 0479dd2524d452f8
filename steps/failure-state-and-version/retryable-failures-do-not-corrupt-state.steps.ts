/**
 * SYNC-STATE-001 Retryable Failures Do Not Corrupt State
 * (features/failure-state-and-version/retryable-failures-do-not-corrupt-state.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import type { StageEndpoint } from '../../harness/proxy/fault-stage.ts';
import { isValidRetryAfter } from '../../harness/wire/index.ts';
import { arrangeFailure } from '../support/client-lifecycle/arranged-failures.ts';
import { mutationsOf, ofRow } from '../support/client-lifecycle/failures.ts';
import { backoffOf, failedExchange, failureTime, lastFailure, lifecycle, OPERATION_OF, quoted, snapshotDifference, snapshotOf, statusOf } from '../support/client-lifecycle/observe.ts';
import { answerOf, localKeys, rebuildsOf } from '../support/client-lifecycle/rebuild.ts';
import { errorOf } from '../support/client-lifecycle/server-errors.ts';
import { processPhrase } from '../support/client-mode.ts';
import type { SyncWorld } from '../support/world.ts';
import { bodyOf, exchangesIn } from '../support/exchanges.ts';

processPhrase(/^client "([^"]+)" is (?:still )?in state "/);

processPhrase(/the durable sync state of client "([^"]+)"/);

processPhrase(/^the backoff record of client "([^"]+)"/);

processPhrase(/^the proxy will drop the next push response to client "([^"]+)"/);

processPhrase(/^client "([^"]+)" reports no server version for rows /);

processPhrase(/^client "([^"]+)" has no backoff record$/);

processPhrase(/^the (?:connect|push|pull|rebuild) request client "([^"]+)" sent after the failure/);

Given(
  /^when the next (connect|push|pull|rebuild) request of client "([^"]+)" reaches the proxy, the harness will snapshot the durable sync state of client "([^"]+)" and the proxy will answer it with (.+)$/,
  async function (this: SyncWorld, endpoint: StageEndpoint, name: string, snapshotted: string, failure: string) {
    if (snapshotted !== name) throw new Error('the snapshot is taken of the client whose request fails');
    await arrangeFailure(this, name, endpoint, 1, failure, true);
  },
);

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

Then(/^the (connect|push|pull|rebuild) request client "([^"]+)" sent after the failure has exactly the same bytes as the failed one$/, async function (this: SyncWorld, endpoint: StageEndpoint, name: string) {
  const failure = lastFailure(this, name);
  const proxy = await this.proxy();
  const failed = failedExchange(proxy, failure);
  this.assert.ok(failed !== undefined, `the ${endpoint} request to be failed was never sent`);
  const next = exchangesIn(proxy.exchanges, { clientId: failure.clientId, endpoints: [endpoint], from: failed.seq, unfinished: true })[0];
  this.assert.ok(next !== undefined, `client "${name}" sent no ${endpoint} request after the failed one`);
  this.assert.equal(next.requestBody.toString('utf8'), failed.requestBody.toString('utf8'), `the retried ${endpoint} request differs from the failed one`);
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

processPhrase(/^client "([^"]+)" reports one rebuild attempt for scope /);

processPhrase(/^client "([^"]+)" has exactly the \d+ rows of page 1/);

processPhrase(/^the rebuild requests client "([^"]+)" sent after the failure/);

processPhrase(/^client "([^"]+)" has rows? "/);

Then(
  /^client "([^"]+)" reports one rebuild attempt for scope "([^"]+)" with the rebuild_id of its first request and the continuation returned by page 1$/,
  async function (this: SyncWorld, name: string, scope: string) {
    const client = await this.process(name);
    // The attempt under test is the one whose page the arranged failure interrupted.
    const sent = rebuildsOf(exchangesIn((await this.proxy()).exchanges, { clientId: client.clientId, from: lastFailure(this, name).mark, unfinished: true }), scope);
    const first = sent[0];
    this.assert.ok(first !== undefined && answerOf(first) !== undefined, `client "${name}" got no first rebuild page for ${scope}`);
    const { rebuilds } = await client.call<{ rebuilds: { scopeId: string; rebuildId: string; token: string | null; pagesApplied: number }[] }>('inspectRebuilds');
    const attempts = rebuilds.filter((r) => r.scopeId === scope);
    this.assert.equal(attempts.length, 1, `rebuild attempts client "${name}" reports for ${scope}`);
    this.assert.equal(attempts[0]?.rebuildId, bodyOf(first.requestBody).rebuild_id, `rebuild_id of the attempt client "${name}" keeps`);
    this.assert.equal(attempts[0]?.token, answerOf(first).cursor, `continuation client "${name}" keeps for ${scope}`);
  },
);

Then(/^client "([^"]+)" has exactly the (\d+) rows of page 1 from that rebuild$/, async function (this: SyncWorld, name: string, count: string) {
  const client = await this.process(name);
  const failure = lastFailure(this, name);
  const first = exchangesIn((await this.proxy()).exchanges, { clientId: client.clientId, endpoints: ['rebuild'], from: failure.mark, unfinished: true })[0];
  const page = first === undefined ? undefined : answerOf(first);
  this.assert.ok(page !== undefined, `client "${name}" got no first rebuild page`);
  const table = this.model.tables.values().next().value;
  if (!table) throw new Error('no table is registered in this scenario');
  const key = this.model.keyColumn(table.name);
  const { rows } = await client.call<{ rows: { id: string }[] }>('query', { sql: `SELECT CAST("${key.name}" AS TEXT) AS id FROM "${table.name}" ORDER BY 1` });
  const pageKeys = (page.records as { pk: Record<string, unknown> }[]).map((r) => String(Object.values(r.pk)[0])).sort();
  this.assert.equal(pageKeys.length, Number(count), `records on page 1: ${pageKeys.join(', ')}`);
  this.assert.equal(
    rows.map((r) => r.id),
    pageKeys,
    `rows of ${table.name} on client "${name}"`,
  );
});

Then("the rebuild requests client {string} sent after the failure repeat the failed request's bytes first", async function (this: SyncWorld, name: string) {
  const failure = lastFailure(this, name);
  const proxy = await this.proxy();
  const failed = failedExchange(proxy, failure);
  this.assert.ok(failed !== undefined, 'the rebuild request to be failed was never sent');
  const next = exchangesIn(proxy.exchanges, { clientId: failure.clientId, endpoints: ['rebuild'], from: failed.seq, unfinished: true })[0];
  this.assert.ok(next !== undefined, `client "${name}" sent no rebuild request after the failure`);
  this.assert.equal(next.requestBody.toString('utf8'), failed.requestBody.toString('utf8'), 'the first rebuild request after the failure');
});

async function installedFinalCursor(world: SyncWorld, name: string, scope: string): Promise<void> {
  const client = await world.process(name);
  const sent = rebuildsOf(exchangesIn((await world.proxy()).exchanges, { clientId: client.clientId, unfinished: true }), scope);
  const final = [...sent].reverse().find((e) => answerOf(e)?.has_more === false);
  world.assert.ok(final !== undefined, `client "${name}" completed no rebuild of ${scope}`);
  const { scopes } = await client.call<{ scopes: { scopeId: string; cursor: string | null; rebuildRequired: boolean }[] }>('inspectScopes');
  const row = scopes.find((s) => s.scopeId === scope);
  world.assert.equal(row?.rebuildRequired, false, `client "${name}" still requires a rebuild of ${scope}`);
  // Later pulls may have advanced the cursor; the pull right after the rebuild must present the final one.
  const nextPull = exchangesIn((await world.proxy()).exchanges, { clientId: client.clientId, endpoints: ['pull'], from: final.seq, unfinished: true })[0];
  const presented = nextPull === undefined ? row?.cursor : bodyOf(nextPull.requestBody)?.scopes?.[scope]?.cursor;
  world.assert.equal(presented, answerOf(final).final_scope_cursor, `cursor client "${name}" took from the final rebuild page of ${scope}`);
}

Then(/^client "([^"]+)" has rows "([^"]+)" through "([^"]+)" and reports the final rebuild cursor installed for scope "([^"]+)"$/, async function (this: SyncWorld, name: string, first: string, last: string, scope: string) {
  const prefix = /^(.*?)(\d+)$/.exec(first);
  const end = /^(.*?)(\d+)$/.exec(last);
  if (!prefix || !end || prefix[1] !== end[1]) throw new Error(`"${first}" through "${last}" is not a numbered range`);
  const expected: string[] = [];
  for (let i = Number(prefix[2]); i <= Number(end[2]); i += 1) expected.push(`${prefix[1]}${i}`);
  const table = this.model.tables.values().next().value;
  if (!table) throw new Error('no table is registered in this scenario');
  const keys = await localKeys(this, name, table.name);
  this.assert.equal(
    expected.filter((k) => !keys.includes(k)),
    [],
    `rows missing on client "${name}" (it has ${keys.join(', ')})`,
  );
  await installedFinalCursor(this, name, scope);
});

Then(/^the error body has "retryable" (true|false) and exactly the members (.+)$/, function (this: SyncWorld, flag: string, list: string) {
  const error = errorOf(this);
  this.assert.equal(error.retryable, flag === 'true', 'retryable member of the error body');
  this.assert.equal(Object.keys(error).sort(), quoted(list).sort(), `members of the error body ${JSON.stringify(error)}`);
});

interface HeldCursor {
  client: string;
  scope: string;
  cursor: string;
}

const held = new WeakMap<SyncWorld, Map<string, HeldCursor>>();

function labels(world: SyncWorld): Map<string, HeldCursor> {
  let map = held.get(world);
  if (map === undefined) {
    map = new Map();
    held.set(world, map);
  }
  return map;
}

/** A scope id as one JSON pointer token. */
const pointerToken = (text: string) => text.replaceAll('~', '~0').replaceAll('/', '~1');

Given(/^client "([^"]+)" has pulled and holds its cursor ([A-Z][A-Za-z0-9]*) for scope "([^"]+)"$/, async function (this: SyncWorld, name: string, label: string, scope: string) {
  await this.readyServer();
  const client = this.wire(name);
  const pages = await client.pullAll();
  const last = pages[pages.length - 1];
  if (last?.status !== 200) throw new Error(`client "${name}" could not pull: ${last?.status} ${last?.text}`);
  const cursor = client.cursors.get(scope);
  if (typeof cursor !== 'string') throw new Error(`client "${name}" holds no cursor for scope "${scope}" after pulling (${JSON.stringify(cursor)})`);
  labels(this).set(label, { client: name, scope, cursor });
});

When(/^client "([^"]+)" pulls presenting ([A-Z][A-Za-z0-9]*)$/, async function (this: SyncWorld, name: string, label: string) {
  const cursor = labels(this).get(label);
  if (cursor === undefined) throw new Error(`no cursor is held under the label ${label}`);
  if (cursor.client !== name) throw new Error(`cursor ${label} was taken by client "${cursor.client}", not "${name}"`);
  await this.wire(name).pull({ [`/scopes/${pointerToken(cursor.scope)}/cursor`]: cursor.cursor });
});

Then('the response has a valid "Retry-After" header', function (this: SyncWorld) {
  const reply = this.lastReply();
  // Repeated headers arrive joined by ", ", which is no valid value: two headers fail here as they should.
  const value = reply.headers.get('retry-after');
  this.assert.ok(value !== null, `the ${reply.endpoint} answer (${reply.status}) has no Retry-After header`);
  this.assert.ok(isValidRetryAfter(value ?? '', 'sender'), `Retry-After "${value}" of the ${reply.endpoint} answer is neither integer seconds nor an IMF-fixdate`);
});
