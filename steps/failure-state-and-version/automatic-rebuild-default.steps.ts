/**
 * SYNC-STATE-003 Automatic Rebuild Default
 * (features/failure-state-and-version/automatic-rebuild-default.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { lifecycle, statusOf } from '../support/client-lifecycle/observe.ts';
import { checkRestart, localKeys, rebuildsOf } from '../support/client-lifecycle/rebuild.ts';
import { processPhrase } from '../support/client-mode.ts';
import type { SyncWorld } from '../support/world.ts';
import { exchangesIn } from '../support/exchanges.ts';

processPhrase(/^client "([^"]+)" of user "[^"]+" is opened with the default configuration$/);

processPhrase(/^client "([^"]+)" syncs, with the application making no other call$/);

processPhrase(/^client "([^"]+)" sent (?:at least one|a) rebuild request for scope /);

processPhrase(/^after the first of these syncs client "([^"]+)"/);

processPhrase(/^client "([^"]+)" never reported the state /);

processPhrase(/^client "([^"]+)" ended both syncs /);

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
  const sent = rebuildsOf(exchangesIn((await this.proxy()).exchanges, { clientId: client.clientId, from: timing.mark, unfinished: true }), scope);
  this.assert.ok(sent.length > 0, `client "${name}" sent no rebuild request for ${scope} during that sync`);
});

Then(/^client "([^"]+)" sent a rebuild request for scope "([^"]+)" with "\/cursor" null and a new "\/rebuild_id" after the 409$/, async function (this: SyncWorld, name: string, scope: string) {
  await checkRestart(this, name, scope);
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
