/**
 * SYNC-PULL-006 Per-Scope Cursor Correctness: a client process opened with a
 * small pull limit, pull answers edited in flight (a member removed, a row
 * value changed with its checksum recomputed), and the cursors the client
 * inspects compared with the ones the server issued to it and with a
 * snapshot recorded earlier.
 */
import { Given, Then } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { clientIdOf, exchangesOf } from '../support/exchanges.ts';
import { deliveredBody, requestOf } from '../support/integrity/oracle.ts';
import { recordedCursors } from '../support/scope-cursors/cursors.ts';
import { removeMemberRule } from '../support/scope-cursors/rewrites.ts';
import { pickPullResponse } from '../support/scope-cursors/that-pull-response.ts';
import { setMemberRule } from '../support/wire-values/response-rewrite.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" of user "[^"]+" is opened with pull limit/);

Given('client {string} of user {string} is opened with pull limit {int}', async function (this: SyncWorld, name: string, user: string, limit: number) {
  this.clientUsers.set(name, user);
  if (this.clients.has(name)) throw new Error(`client "${name}" was already opened in this scenario; its pull limit must be set when it is first opened`);
  await this.process(name, { pullLimit: limit });
});

// A set without the recompute is the shared proxy step (steps/common/proxy.steps.ts); this one names the recompute before the answer.
Given(
  /^the proxy will (?:set "([^"]+)" to "([^"]*)" and recompute its row checksum|remove "([^"]+)"( and recompute its row checksum)?) in the next pull response to client "([^"]+)"$/,
  // Cucumber gives an unmatched group as null.
  async function (this: SyncWorld, setPointer: string | null, value: string | null, removePointer: string | null, recompute: string | null, name: string) {
    await this.readyServer();
    const proxy = await this.proxy();
    const clientId = await clientIdOf(this, name);
    if (typeof removePointer === 'string') proxy.inject(removeMemberRule(proxy, clientId, removePointer, Boolean(recompute)));
    else proxy.inject(setMemberRule(proxy, { endpoint: 'pull', clientId, pointer: setPointer as string, value: value as string, recomputeChecksum: true }));
  },
);

Then(
  'the proxy recorded a pull response to client {string} with {string} true that issued a cursor for {string} and none for {string}',
  async function (this: SyncWorld, name: string, pointer: string, issuedFor: string, notFor: string) {
    if (pointer !== '/has_more') throw new Error(`a pull page continues through "/has_more", not "${pointer}"`);
    const pulls = (await exchangesOf(this, name, { endpoints: ['pull'] })).filter((e) => deliveredBody(e) !== undefined);
    const matching = pulls.filter((e) => {
      const body = deliveredBody(e) as Record<string, unknown>;
      const cursors = (body.scope_cursors ?? {}) as Record<string, unknown>;
      return body.has_more === true && typeof cursors[issuedFor] === 'string' && cursors[notFor] === undefined;
    });
    const seen = pulls.map((e) => JSON.stringify({ has_more: deliveredBody(e)?.has_more, cursors: Object.keys((deliveredBody(e)?.scope_cursors ?? {}) as object) }));
    this.assert.ok(matching.length > 0, `pull responses delivered to client "${name}": ${seen.join(' ')}`);
    pickPullResponse(this, name, matching.at(-1) as NonNullable<(typeof matching)[number]>);
  },
);

Then('the first pull request of that sync presented the {string} cursor for scope {string}', async function (this: SyncWorld, label: string, scope: string) {
  const window = this.syncWindows.at(-1);
  if (window === undefined) throw new Error('no client synced in this scenario');
  const old = recordedCursors(this, label).get(scope);
  this.assert.ok(typeof old === 'string', `the cursors recorded as "${label}" hold none for ${scope}`);
  const first = (await exchangesOf(this, window.client, { endpoints: ['pull'], from: window.from, to: window.to }))[0];
  this.assert.ok(first !== undefined, `the last sync of client "${window.client}" sent no pull request`);
  const presented = ((requestOf(first).scopes ?? {}) as Record<string, { cursor?: unknown }>)[scope]?.cursor;
  this.assert.equal(presented, old, `the cursor the first pull request of that sync presented for ${scope}`);
});
