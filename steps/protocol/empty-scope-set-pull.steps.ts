/**
 * SYNC-PROTO-007 Empty Scope Set Pull
 * (features/protocol/empty-scope-set-pull.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { member } from '../support/reply.ts';
import { reportedScopes } from '../support/scopes/client-sync.ts';
import { type ClientExchange, exchangeSummaries } from '../support/scopes/exchanges.ts';
import { scopesState } from '../support/scopes/state.ts';
import { expectedValue } from '../support/values.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the endpoints client "([^"]+)" called/);

processPhrase(/^the pull request client "([^"]+)" sent/);

processPhrase(/^each of the last two syncs of client "([^"]+)"/);

processPhrase(/^the requests client "([^"]+)" sent during that sync/);

processPhrase(/^the proxy (?:will hold the next connect response to|has received the connect response for) client "([^"]+)"$/);

When('client {string} of user {string} starts syncing for the first time', async function (this: SyncWorld, name: string, user: string) {
  this.clientUsers.set(name, user);
  await this.process(name);
  const window = await this.openSyncWindow(name, 'first time');
  const running = this.syncProcess(name).then(async (result) => {
    await this.closeSyncWindow(window);
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

/** The exchanges of the last sync window of process client `name`. */
async function lastWindow(world: SyncWorld, name: string, back = 0): Promise<ClientExchange[]> {
  const windows = world.syncWindows.filter((w) => w.client === name);
  const window = windows[windows.length - 1 - back];
  if (!window) throw new Error(`client "${name}" has no ${back === 0 ? '' : 'earlier '}sync recorded in this scenario`);
  if (window.to === undefined) throw new Error(`the sync of client "${name}" has not ended`);
  const proxy = await world.proxy();
  const seqs = new Set(proxy.exchanges.slice(window.from, window.to).map((e) => e.seq));
  return exchangeSummaries(proxy, (await world.process(name)).clientId).filter((e) => seqs.has(e.seq));
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
  const name = this.syncWindows.at(-1)?.client;
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
  const name = this.syncWindows.at(-1)?.client;
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

Then('client {string} reports no scope that still requires rebuild', async function (this: SyncWorld, name: string) {
  const scopes = await reportedScopes(this, name);
  this.assert.equal(
    scopes.filter((s) => s.rebuildRequired).map((s) => s.scopeId),
    [],
    `scopes client "${name}" still has to rebuild`,
  );
});
