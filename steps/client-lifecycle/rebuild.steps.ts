/**
 * Rebuilds as the client under test carries them out: a rebuild the server
 * asks for, the page limit the application configures, the attempt the client
 * keeps across a failure, and what it installs at the end. Under default
 * configuration the application only ever calls syncNow.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import type { Exchange } from '../../harness/proxy/records.ts';
import { processPhrase } from '../support/client-mode.ts';
import type { SyncWorld } from '../support/world.ts';
import { deliveredStatus, failedExchange, json, lastFailure, lifecycle, requestsOf, statusOf } from './observe.ts';

processPhrase(/^client "([^"]+)" uses rebuild page limit \d+$/);
processPhrase(/^client "([^"]+)" will be told by its next pull to rebuild scope /);
processPhrase(/^client "([^"]+)" reports one rebuild attempt for scope /);
processPhrase(/^client "([^"]+)" has exactly the \d+ rows of page 1/);
processPhrase(/^the rebuild requests client "([^"]+)" sent after the failure/);
processPhrase(/^client "([^"]+)" has rows? "/);
processPhrase(/^client "([^"]+)" of user "[^"]+" is opened with the default configuration$/);
processPhrase(/^client "([^"]+)" syncs, with the application making no other call$/);
processPhrase(/^client "([^"]+)" sent (?:at least one|a) rebuild request for scope /);
processPhrase(/^the next rebuild request client "([^"]+)" sent for scope /);
processPhrase(/^client "([^"]+)" did not install any cursor for scope /);
processPhrase(/^after the first of these syncs client "([^"]+)"/);
processPhrase(/^client "([^"]+)" never reported the state /);
processPhrase(/^client "([^"]+)" ended both syncs /);

function rebuildsOf(exchanges: Exchange[], scope: string): Exchange[] {
  return exchanges.filter((e) => e.endpoint === 'rebuild' && json(e.requestBody)?.scope === scope);
}

function answerOf(exchange: Exchange): ReturnType<typeof json> {
  return deliveredStatus(exchange) === 200 ? json((exchange.delivered as { body: Buffer }).body) : undefined;
}

Given('client {string} uses rebuild page limit {int}', async function (this: SyncWorld, name: string, limit: number) {
  // The page limit is application configuration: the application reopens the client with it.
  const client = await this.process(name);
  await client.process.kill();
  client.process.start();
  await client.process.call('open', await this.openParams(client, client.userId, { rebuildLimit: limit }));
});

Given('client {string} will be told by its next pull to rebuild scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const client = await this.process(name);
  const proxy = await this.proxy();
  // A server may answer any pull with "rebuild this scope": the next pull answer says so, without a cursor or changes for it.
  proxy.inject({
    endpoint: 'pull',
    when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === client.clientId,
    fault: {
      kind: 'rewrite',
      describe: `scope ${scope} marked for rebuild`,
      transform: (body) => {
        delete body.scope_cursors?.[scope];
        body.changes = (body.changes ?? []).filter((c: { scope?: string }) => c.scope !== scope);
        body.rebuild = [...new Set([...(body.rebuild ?? []), scope])].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
        return body;
      },
    },
  });
});

Then(
  /^client "([^"]+)" reports one rebuild attempt for scope "([^"]+)" with the rebuild_id of its first request and the continuation returned by page 1$/,
  async function (this: SyncWorld, name: string, scope: string) {
    const client = await this.process(name);
    // The attempt under test is the one whose page the arranged failure interrupted.
    const sent = rebuildsOf(requestsOf(await this.proxy(), client.clientId, { after: lastFailure(this, name).mark }), scope);
    const first = sent[0];
    this.assert.ok(first !== undefined && answerOf(first) !== undefined, `client "${name}" got no first rebuild page for ${scope}`);
    const { rebuilds } = await client.call<{ rebuilds: { scopeId: string; rebuildId: string; token: string | null; pagesApplied: number }[] }>('inspectRebuilds');
    const attempts = rebuilds.filter((r) => r.scopeId === scope);
    this.assert.equal(attempts.length, 1, `rebuild attempts client "${name}" reports for ${scope}`);
    this.assert.equal(attempts[0]?.rebuildId, json(first.requestBody).rebuild_id, `rebuild_id of the attempt client "${name}" keeps`);
    this.assert.equal(attempts[0]?.token, answerOf(first).cursor, `continuation client "${name}" keeps for ${scope}`);
  },
);

Then(/^client "([^"]+)" has exactly the (\d+) rows of page 1 from that rebuild$/, async function (this: SyncWorld, name: string, count: string) {
  const client = await this.process(name);
  const failure = lastFailure(this, name);
  const first = requestsOf(await this.proxy(), client.clientId, { endpoint: 'rebuild', after: failure.mark })[0];
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
  const next = requestsOf(proxy, failure.clientId, { endpoint: 'rebuild', after: failed.seq })[0];
  this.assert.ok(next !== undefined, `client "${name}" sent no rebuild request after the failure`);
  this.assert.equal(next.requestBody.toString('utf8'), failed.requestBody.toString('utf8'), 'the first rebuild request after the failure');
});

async function localKeys(world: SyncWorld, name: string, table: string): Promise<string[]> {
  const key = world.model.keyColumn(table);
  const client = await world.process(name);
  const { rows } = await client.call<{ rows: { id: string }[] }>('query', { sql: `SELECT CAST("${key.name}" AS TEXT) AS id FROM "${table}" ORDER BY 1` });
  return rows.map((r) => r.id);
}

async function installedFinalCursor(world: SyncWorld, name: string, scope: string): Promise<void> {
  const client = await world.process(name);
  const sent = rebuildsOf(requestsOf(await world.proxy(), client.clientId), scope);
  const final = [...sent].reverse().find((e) => answerOf(e)?.has_more === false);
  world.assert.ok(final !== undefined, `client "${name}" completed no rebuild of ${scope}`);
  const { scopes } = await client.call<{ scopes: { scopeId: string; cursor: string | null; rebuildRequired: boolean }[] }>('inspectScopes');
  const row = scopes.find((s) => s.scopeId === scope);
  world.assert.equal(row?.rebuildRequired, false, `client "${name}" still requires a rebuild of ${scope}`);
  // Later pulls may have advanced the cursor; the pull right after the rebuild must present the final one.
  const nextPull = requestsOf(await world.proxy(), client.clientId, { endpoint: 'pull', after: final.seq })[0];
  const presented = nextPull === undefined ? row?.cursor : json(nextPull.requestBody)?.scopes?.[scope]?.cursor;
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

Then(/^client "([^"]+)" has rows? ((?:"[^"]+"(?:, | and )?)+) in table "([^"]+)"$/, async function (this: SyncWorld, name: string, list: string, table: string) {
  const wanted = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
  const keys = await localKeys(this, name, table);
  this.assert.equal(
    wanted.filter((k) => !keys.includes(k)),
    [],
    `rows missing in ${table} on client "${name}" (it has ${keys.join(', ')})`,
  );
});

Given('client {string} of user {string} is opened with the default configuration', async function (this: SyncWorld, name: string, user: string) {
  // No page limits, batch sizes or hooks: only what the open call requires.
  this.clientUsers.set(name, user);
  await this.process(name);
});

When('client {string} syncs, with the application making no other call', async function (this: SyncWorld, name: string) {
  const mark = (await this.proxy()).exchanges.length;
  const started = Date.now();
  await this.syncProcess(name);
  const state = lifecycle(this);
  const previous = state.syncs.get(name);
  state.syncs.set(name, { started, ended: Date.now(), mark });
  if (previous === undefined) state.firstSync.set(name, { started, ended: Date.now(), mark, scopes: await rebuildRequiredScopes(this, name) });
});

async function rebuildRequiredScopes(world: SyncWorld, name: string): Promise<string[]> {
  const { scopes } = await (await world.process(name)).call<{ scopes: { scopeId: string; rebuildRequired: boolean }[] }>('inspectScopes');
  return scopes.filter((s) => s.rebuildRequired).map((s) => s.scopeId);
}

Then(/^the sync of client "([^"]+)" ends with completion "([a-z]+)" within (\d+) seconds$/, async function (this: SyncWorld, name: string, completion: string, seconds: string) {
  const result = this.lastSync.get(name);
  const timing = lifecycle(this).syncs.get(name);
  this.assert.ok(result !== undefined && timing !== undefined, `client "${name}" has not synced in this scenario`);
  this.assert.ok(!('error' in result), `the sync of client "${name}" raised ${'error' in result ? result.error.message : ''}`);
  this.assert.equal((result as { completion: string }).completion, completion, `completion of the sync of client "${name}"`);
  this.assert.ok(timing.ended - timing.started <= Number(seconds) * 1000, `the sync of client "${name}" took ${timing.ended - timing.started} ms`);
});

Then(/^client "([^"]+)" sent at least one rebuild request for scope "([^"]+)" during that sync$/, async function (this: SyncWorld, name: string, scope: string) {
  const client = await this.process(name);
  const timing = lifecycle(this).syncs.get(name);
  this.assert.ok(timing !== undefined, `client "${name}" has not synced in this scenario`);
  const sent = rebuildsOf(requestsOf(await this.proxy(), client.clientId, { after: timing.mark }), scope);
  this.assert.ok(sent.length > 0, `client "${name}" sent no rebuild request for ${scope} during that sync`);
});

Then(/^client "([^"]+)" sent a rebuild request for scope "([^"]+)" with "\/cursor" null and a new "\/rebuild_id" after the 409$/, async function (this: SyncWorld, name: string, scope: string) {
  await checkRestart(this, name, scope);
});

Then(/^the next rebuild request client "([^"]+)" sent for scope "([^"]+)" has "\/cursor" null and a "\/rebuild_id" different from the failed attempt's$/, async function (this: SyncWorld, name: string, scope: string) {
  await checkRestart(this, name, scope);
});

/** After the arranged 409 on a rebuild page, the next rebuild request of that scope starts over with a new attempt. */
async function checkRestart(world: SyncWorld, name: string, scope: string): Promise<void> {
  const failure = lastFailure(world, name);
  const proxy = await world.proxy();
  const failed = failedExchange(proxy, failure);
  world.assert.ok(failed !== undefined && deliveredStatus(failed) === 409, 'the rebuild request to be refused with 409 was never sent');
  const next = rebuildsOf(requestsOf(proxy, failure.clientId, { after: failed.seq }), scope)[0];
  world.assert.ok(next !== undefined, `client "${name}" sent no rebuild request for ${scope} after the 409`);
  const request = json(next.requestBody);
  world.assert.equal(request.cursor, null, 'cursor of the first rebuild request after the 409');
  world.assert.notEqual(request.rebuild_id, json(failed.requestBody).rebuild_id, 'rebuild_id of the first rebuild request after the 409');
}

Then('client {string} did not install any cursor for scope {string} from the failed attempt', async function (this: SyncWorld, name: string, scope: string) {
  const failure = lastFailure(this, name);
  const proxy = await this.proxy();
  const failed = failedExchange(proxy, failure);
  this.assert.ok(failed !== undefined, 'the refused rebuild request was never sent');
  const failedId = json(failed.requestBody).rebuild_id;
  // Cursors of the failed attempt: every continuation and final cursor its pages returned.
  const tokens = new Set<string>();
  for (const e of rebuildsOf(requestsOf(proxy, failure.clientId), scope)) {
    if (json(e.requestBody).rebuild_id !== failedId) continue;
    const page = answerOf(e);
    if (typeof page?.cursor === 'string') tokens.add(page.cursor);
    if (typeof page?.final_scope_cursor === 'string') tokens.add(page.final_scope_cursor);
  }
  const client = await this.process(name);
  const { scopes } = await client.call<{ scopes: { scopeId: string; cursor: string | null }[] }>('inspectScopes');
  const cursor = scopes.find((s) => s.scopeId === scope)?.cursor ?? null;
  this.assert.ok(cursor === null || !tokens.has(cursor), `client "${name}" installed a cursor of the failed attempt for ${scope}`);
  const later = requestsOf(proxy, failure.clientId, { endpoint: 'pull', after: failed.seq }).map((e) => json(e.requestBody)?.scopes?.[scope]?.cursor);
  this.assert.equal(
    later.filter((c) => typeof c === 'string' && tokens.has(c)),
    [],
    `pulls of client "${name}" presenting a cursor of the failed attempt`,
  );
});

Then(/^after the first of these syncs client "([^"]+)" already reported no scope requiring rebuild$/, async function (this: SyncWorld, name: string) {
  const first = lifecycle(this).firstSync.get(name);
  this.assert.ok(first !== undefined, `client "${name}" has not synced in this scenario`);
  this.assert.equal(first.scopes, [], `scopes client "${name}" still required to rebuild after its first sync`);
});

Then(/^client "([^"]+)" never reported the state "([a-z_]+)" for longer than (\d+) seconds$/, async function (this: SyncWorld, name: string, state: string, seconds: string) {
  const { statusLog, statusTimes } = await statusOf(await this.process(name));
  this.assert.ok(Array.isArray(statusTimes) && statusTimes.length === statusLog.length, `client "${name}" reports no time for each state`);
  const now = Date.now();
  const spans = statusLog.map((s, i) => ({ s, span: (statusTimes[i + 1] ?? now) - (statusTimes[i] ?? now) })).filter((e) => e.s === state);
  this.assert.equal(
    spans.filter((e) => e.span > Number(seconds) * 1000),
    [],
    `stays in ${state} of client "${name}"`,
  );
});

Then(/^client "([^"]+)" ended both syncs idle in state "ready" without entering "error" or "stopped"$/, async function (this: SyncWorld, name: string) {
  const result = this.lastSync.get(name);
  this.assert.ok(result !== undefined && !('error' in result), `the last sync of client "${name}" raised or did not run`);
  const { completion, status } = result as { completion: string; status: string };
  this.assert.equal({ completion, status }, { completion: 'idle', status: 'ready' }, `result of the last sync of client "${name}"`);
  const { statusLog } = await statusOf(await this.process(name));
  this.assert.equal(
    statusLog.filter((s) => s === 'error' || s === 'stopped'),
    [],
    `status log ${statusLog.join(' -> ')}`,
  );
});
