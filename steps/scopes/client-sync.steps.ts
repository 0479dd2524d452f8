/**
 * A client process's sync cycles seen from the proxy: which endpoints one
 * cycle called, what its pulls carried, which scopes it presented, and the
 * scope state it reports afterwards. A "sync window" is the range of proxy
 * exchanges one sync produced; a connect answer can be held at the proxy so
 * assignment changes land while a cycle is in progress.
 */
import { AfterStep, BeforeStep, type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { expectedValue } from '../common/values.ts';
import { processPhrase } from '../support/client-mode.ts';
import { member } from '../support/reply.ts';
import type { SyncWorld } from '../support/world.ts';
import { assignedSet, byteSorted, type ClientExchange, exchangesOf, type Loose, presentedScopes } from './exchanges.ts';
import { type SyncWindow, scopesState } from './state.ts';

processPhrase(/^client "([^"]+)" of user "[^"]+" (?:syncs|starts syncing) for the first time$/);
processPhrase(/^the endpoints client "([^"]+)" called/);
processPhrase(/^the pull request client "([^"]+)" sent/);
processPhrase(/^each of the last two syncs of client "([^"]+)"/);
processPhrase(/^client "([^"]+)" reports /);
processPhrase(/^the requests client "([^"]+)" sent during that sync/);
processPhrase(/^every scope key in every connect and pull request client "([^"]+)" sent/);
processPhrase(/^the proxy (?:will hold the next connect response to|has received the connect response for) client "([^"]+)"$/);

// The core's sync steps open and close a window too, so "that sync" can name them.
const CORE_SYNC = /^client "([^"]+)" (?:of user "[^"]+" )?(?:syncs|has synced)$/;

BeforeStep({ tags: '@SYNC-PROTO-005 or @SYNC-PROTO-007' }, async function (this: SyncWorld, { pickleStep }) {
  const name = CORE_SYNC.exec(pickleStep.text)?.[1];
  if (name !== undefined) scopesState(this).windows.push({ client: name, from: (await this.proxy()).exchanges.length, to: undefined });
});

AfterStep({ tags: '@SYNC-PROTO-005 or @SYNC-PROTO-007' }, async function (this: SyncWorld, { pickleStep }) {
  const name = CORE_SYNC.exec(pickleStep.text)?.[1];
  if (name === undefined) return;
  const open = [...scopesState(this).windows].reverse().find((w) => w.client === name && w.to === undefined);
  if (open) open.to = (await this.proxy()).exchanges.length;
});

async function openWindow(world: SyncWorld, name: string): Promise<SyncWindow> {
  const window: SyncWindow = { client: name, from: (await world.proxy()).exchanges.length, to: undefined };
  scopesState(world).windows.push(window);
  return window;
}

When('client {string} of user {string} syncs for the first time', async function (this: SyncWorld, name: string, user: string) {
  this.clientUsers.set(name, user);
  await this.process(name);
  const window = await openWindow(this, name);
  await this.syncProcess(name);
  window.to = (await this.proxy()).exchanges.length;
});

When('client {string} of user {string} starts syncing for the first time', async function (this: SyncWorld, name: string, user: string) {
  this.clientUsers.set(name, user);
  await this.process(name);
  const window = await openWindow(this, name);
  const proxy = await this.proxy();
  const running = this.syncProcess(name).then((result) => {
    window.to = proxy.exchanges.length;
    return result;
  });
  scopesState(this).started.set(name, running);
});

// The pause fault has no client filter: it holds the next connect answer whoever asked; the next step checks whose it was.
Given('the proxy will hold the next connect response to client {string}', async function (this: SyncWorld, _name: string) {
  (await this.proxy()).inject({ endpoint: 'connect', fault: { kind: 'pause' } });
});

When('the proxy has received the connect response for client {string}', async function (this: SyncWorld, name: string) {
  const proxy = await this.proxy();
  await proxy.whenHeld(this.deadlineMs);
  const clientId = (await this.process(name)).clientId;
  const held = proxy.exchanges.find((e) => !e.done && e.endpoint === 'connect' && e.upstream.length > 0);
  this.assert.ok(held !== undefined && JSON.parse(held.requestBody.toString('utf8')).client_id === clientId, `the held connect answer is not the one of client "${name}"`);
});

// Releasing lets the started cycle run on; the step returns once it ended (or at the deadline).
When('the proxy releases the held response', async function (this: SyncWorld) {
  (await this.proxy()).release();
  const started = scopesState(this).started;
  const deadline = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`a started sync did not end within ${this.deadlineMs} ms`)), this.deadlineMs).unref());
  await Promise.race([Promise.all(started.values()), deadline]);
  started.clear();
});

/** The exchanges of the last sync window of process client `name`. */
async function lastWindow(world: SyncWorld, name: string, back = 0): Promise<ClientExchange[]> {
  const windows = scopesState(world).windows.filter((w) => w.client === name);
  const window = windows[windows.length - 1 - back];
  if (!window) throw new Error(`client "${name}" has no ${back === 0 ? '' : 'earlier '}sync recorded in this scenario`);
  if (window.to === undefined) throw new Error(`the sync of client "${name}" has not ended`);
  const proxy = await world.proxy();
  const seqs = new Set(proxy.exchanges.slice(window.from, window.to).map((e) => e.seq));
  return exchangesOf(proxy, (await world.process(name)).clientId).filter((e) => seqs.has(e.seq));
}

function firstPull(exchanges: ClientExchange[], name: string): ClientExchange {
  const pull = exchanges.find((e) => e.endpoint === 'pull');
  if (!pull) throw new Error(`client "${name}" sent no pull during that sync (it called: ${exchanges.map((e) => e.endpoint).join(', ') || 'nothing'})`);
  return pull;
}

Then('the endpoints client {string} called during that sync, with consecutive repeats collapsed, were in order:', async function (this: SyncWorld, name: string, table: DataTable) {
  const called = (await lastWindow(this, name)).map((e) => e.endpoint).filter((endpoint, i, all) => i === 0 || all[i - 1] !== endpoint);
  this.assert.equal(called, table.hashes().map((row) => row.endpoint), `endpoints called by client "${name}"`);
});

Then(/^the pull request client "([^"]+)" sent has "([^"]+)" equal to (.+)$/, async function (this: SyncWorld, name: string, pointer: string, expected: string) {
  const pull = firstPull(await lastWindow(this, name), name);
  this.assert.equal(member(pull.request, pointer), expectedValue(expected, this.noted), `${pointer} of the pull request ${JSON.stringify(pull.request)}`);
});

Then(/^the pull response has "([^"]+)" false and "([^"]+)" equal to (.+)$/, async function (this: SyncWorld, flag: string, pointer: string, expected: string) {
  const name = scopesState(this).windows.at(-1)?.client;
  if (name === undefined) throw new Error('no sync was recorded in this scenario');
  const pull = firstPull(await lastWindow(this, name), name);
  this.assert.equal(pull.status, 200, `the pull was answered ${pull.status}`);
  this.assert.equal({ flag: member(pull.response, flag), value: member(pull.response, pointer) }, { flag: false, value: expectedValue(expected, this.noted) }, `the pull response ${JSON.stringify(pull.response)}`);
});

Then(/^each of the last two syncs of client "([^"]+)" sent exactly one pull request with "([^"]+)" equal to (.+)$/, async function (this: SyncWorld, name: string, pointer: string, expected: string) {
  const want = expectedValue(expected, this.noted);
  for (const back of [1, 0]) {
    const pulls = (await lastWindow(this, name, back)).filter((e) => e.endpoint === 'pull');
    this.assert.equal(
      pulls.map((p) => member(p.request, pointer)),
      [want],
      `pull requests of the ${back === 0 ? 'last' : 'second to last'} sync of client "${name}"`,
    );
  }
});

Then(/^the first pull (request|response) of that sync has "([^"]+)" equal to (.+)$/, async function (this: SyncWorld, side: string, pointer: string, expected: string) {
  const name = scopesState(this).windows.at(-1)?.client;
  if (name === undefined) throw new Error('no sync was recorded in this scenario');
  const pull = firstPull(await lastWindow(this, name), name);
  const body = side === 'request' ? pull.request : pull.response;
  this.assert.equal(member(body, pointer), expectedValue(expected, this.noted), `${pointer} of the first pull ${side} ${JSON.stringify(body)}`);
});

Then('the requests client {string} sent during that sync include a rebuild request for scope {string} after that pull', async function (this: SyncWorld, name: string, scope: string) {
  const exchanges = await lastWindow(this, name);
  const pull = firstPull(exchanges, name);
  const rebuild = exchanges.find((e) => e.seq > pull.seq && e.endpoint === 'rebuild' && e.request?.scope === scope);
  this.assert.ok(rebuild !== undefined, `client "${name}" sent no rebuild of ${scope} after its first pull (it called: ${exchanges.map((e) => e.endpoint).join(', ')})`);
});

async function reportedScopes(world: SyncWorld, name: string): Promise<{ scopeId: string; cursor: string | null; rebuildRequired: boolean }[]> {
  const client = await world.process(name);
  return (await client.call<{ scopes: { scopeId: string; cursor: string | null; rebuildRequired: boolean }[] }>('inspectScopes')).scopes;
}

Then('client {string} reports scope {string} as not requiring rebuild, with the final rebuild cursor installed', async function (this: SyncWorld, name: string, scope: string) {
  const row = (await reportedScopes(this, name)).find((s) => s.scopeId === scope);
  this.assert.ok(row !== undefined, `client "${name}" reports no scope ${scope}`);
  this.assert.equal(row.rebuildRequired, false, `client "${name}" still requires a rebuild of ${scope}`);
  const exchanges = exchangesOf(await this.proxy(), (await this.process(name)).clientId);
  const final = [...exchanges].reverse().find((e) => e.endpoint === 'rebuild' && e.status === 200 && e.request?.scope === scope && e.response?.has_more === false);
  this.assert.ok(typeof final?.response?.final_scope_cursor === 'string', `client "${name}" completed no rebuild of ${scope}`);
  const finalCursor = final.response.final_scope_cursor as string;
  // Installed means presented: the next pull carries exactly the final cursor, and the client now holds the newest cursor it was given.
  const nextPull = exchanges.find((e) => e.seq > final.seq && e.endpoint === 'pull');
  if (nextPull) this.assert.equal(nextPull.request?.scopes?.[scope]?.cursor, finalCursor, `the pull after the rebuild of ${scope} presented another cursor`);
  let newest = finalCursor;
  for (const e of exchanges) if (e.seq > final.seq && e.endpoint === 'pull' && e.status === 200 && typeof e.response?.scope_cursors?.[scope] === 'string') newest = e.response.scope_cursors[scope];
  this.assert.equal(row.cursor, newest, `cursor client "${name}" holds for ${scope}`);
});

Then('client {string} reports no scope that still requires rebuild', async function (this: SyncWorld, name: string) {
  const scopes = await reportedScopes(this, name);
  this.assert.equal(
    scopes.filter((s) => s.rebuildRequired).map((s) => s.scopeId),
    [],
    `scopes client "${name}" still has to rebuild`,
  );
});

Then(
  /^every scope key in every connect and pull request client "([^"]+)" sent was assigned to client "\1" in an earlier response's "scopes\.add" or "scope_updates\.add"$/,
  async function (this: SyncWorld, name: string) {
    const exchanges = exchangesOf(await this.proxy(), (await this.process(name)).clientId);
    const unassigned: string[] = [];
    let requests = 0;
    exchanges.forEach((exchange, index) => {
      if (exchange.endpoint !== 'connect' && exchange.endpoint !== 'pull') return;
      requests += 1;
      const held = assignedSet(exchanges.slice(0, index));
      for (const scope of presentedScopes(exchange)) if (!held.has(scope)) unassigned.push(`${exchange.endpoint} #${exchange.seq}: ${scope}`);
    });
    this.assert.ok(requests > 0, `client "${name}" sent no connect or pull`);
    this.assert.equal(unassigned, [], `scopes client "${name}" presented without an assignment`);
  },
);

Then('client {string} reports exactly the scopes the server assigned to it', async function (this: SyncWorld, name: string) {
  const exchanges = exchangesOf(await this.proxy(), (await this.process(name)).clientId);
  const assigned = byteSorted(assignedSet(exchanges));
  this.assert.ok(assigned.length > 0, `the server assigned no scope to client "${name}"`);
  this.assert.equal(byteSorted((await reportedScopes(this, name)).map((s) => s.scopeId)), assigned, `scopes client "${name}" reports`);
});

Then('no response recorded for client {string} contains row {string}', async function (this: SyncWorld, name: string, row: string) {
  const exchanges = exchangesOf(await this.proxy(), this.wire(name).clientId);
  this.assert.ok(exchanges.length > 0, `no exchange of client "${name}" was recorded`);
  const leaking = exchanges.filter((e) => JSON.stringify(e.response ?? null).includes(JSON.stringify(row)));
  this.assert.equal(
    leaking.map((e: Loose) => `${e.endpoint} #${e.seq}`),
    [],
    `responses to client "${name}" carrying row ${row}`,
  );
});
