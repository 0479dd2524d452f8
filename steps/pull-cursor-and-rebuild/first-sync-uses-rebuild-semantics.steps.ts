/**
 * Steps of SYNC-PULL-021 First Sync Uses Rebuild Semantics: the harness
 * presents null cursors to the server itself, and reads from the proxy's
 * records how a fresh client under test filled each scope (a rebuild from
 * cursor null, then pulls from the final cursor) and what it installed.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf, exchangesOf } from '../support/exchanges.ts';
import { scopeState } from '../support/integrity/context.ts';
import { deliveredBody } from '../support/rebuild-attempts/attempts.ts';
import { answeredRebuilds } from '../support/rebuild-finality/interrupted.ts';
import { lastRebuildPages } from '../support/rebuild-runs/paged.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^for scopes "[^"]+" and "[^"]+", the checksum client "([^"]+)" inspects equals the "[^"]+" of that scope's final rebuild page$/);

const LOWERCASE_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The pointer of a scope's entry in a pull request's "scopes" (JSON Pointer escaping). */
const _scopePointer = (scope: string) => `/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`;

Given('the harness client {string} of user {string} has connected', async function (this: SyncWorld, name: string, user: string) {
  await this.readyServer();
  const client = this.wire(name, user);
  if (client.userId !== user) throw new Error(`client "${name}" already belongs to user ${client.userId}`);
  const reply = await client.connect();
  if (reply.status !== 200) throw new Error(`client "${name}" could not connect: ${reply.status} ${reply.text.slice(0, 300)}`);
});

When(/^the harness client "([^"]+)" pulls presenting the "final_scope_cursor" for "([^"]+)" and cursor null for "([^"]+)"$/, async function (this: SyncWorld, name: string, rebuilt: string, unset: string) {
  const pages = lastRebuildPages(this, rebuilt);
  const final = pages[pages.length - 1];
  const cursor = final?.status === 200 ? final.json.final_scope_cursor : undefined;
  if (typeof cursor !== 'string') throw new Error(`the rebuild of ${rebuilt} gave no final_scope_cursor to present: ${final?.text.slice(0, 500)}`);
  const client = this.wire(name);
  for (const scope of [rebuilt, unset]) if (!client.cursors.has(scope)) throw new Error(`client "${name}" is not assigned ${scope}`);
  client.cursors.set(rebuilt, cursor);
  client.cursors.set(unset, null);
  await client.pull();
});

/** The client's pull exchanges in order, with what it presented and the body it was given. */
async function pullsOf(world: SyncWorld, name: string) {
  return (await exchangesOf(world, name, { endpoints: ['pull'] })).map((e) => ({ seq: e.seq, request: bodyOf(e.requestBody), response: deliveredBody(e) }));
}

Then(
  /^for each of "([^"]+)" and "([^"]+)", client "([^"]+)" sent a rebuild request with "cursor" null and a lowercase UUID "rebuild_id" before any pull request that presented a non-null cursor for that scope$/,
  async function (this: SyncWorld, first: string, second: string, name: string) {
    const pulls = await pullsOf(this, name);
    for (const scope of [first, second]) {
      const presenting = pulls.find((pull) => typeof pull.request?.scopes?.[scope]?.cursor === 'string');
      this.assert.ok(presenting !== undefined, `client "${name}" pulled ${scope} with a cursor at some point`);
      const before = (await answeredRebuilds(this, name, scope)).filter((entry) => entry.exchange.seq < presenting.seq);
      const starts = before.filter((entry) => entry.request?.cursor === null);
      this.assert.ok(starts.length > 0, `client "${name}" started a rebuild of ${scope} (cursor null) before its first pull presenting a cursor for it`);
      for (const start of starts) this.assert.match(String(start.request?.rebuild_id), LOWERCASE_UUID, `the rebuild_id of client "${name}"'s rebuild of ${scope}`);
    }
  },
);

Then(
  /^the first pull request of client "([^"]+)" that presented a non-null cursor for "([^"]+)" presented the "final_scope_cursor" of the rebuild of "([^"]+)"$/,
  async function (this: SyncWorld, name: string, scope: string, same: string) {
    if (same !== scope) throw new Error(`the cursor of ${scope} is compared with the rebuild of ${scope}, not of ${same}`);
    const presenting = (await pullsOf(this, name)).find((pull) => typeof pull.request?.scopes?.[scope]?.cursor === 'string');
    this.assert.ok(presenting !== undefined, `client "${name}" pulled ${scope} with a cursor`);
    const finals = (await answeredRebuilds(this, name, scope)).filter((entry) => entry.exchange.seq < presenting.seq && entry.response?.has_more === false);
    const final = finals[finals.length - 1]?.response;
    this.assert.ok(typeof final?.final_scope_cursor === 'string', `client "${name}" was given a final rebuild page of ${scope} before that pull`);
    this.assert.equal(presenting.request.scopes[scope].cursor, final.final_scope_cursor, `the cursor client "${name}" first presented for ${scope}`);
  },
);

Then(/^no pull response to client "([^"]+)" carried a change for scope "([^"]+)" or "([^"]+)"$/, async function (this: SyncWorld, name: string, first: string, second: string) {
  const pulls = await pullsOf(this, name);
  this.assert.ok(pulls.some((pull) => pull.response !== undefined), `client "${name}" was given at least one pull response`);
  const carried = pulls.flatMap((pull) => ((pull.response?.changes ?? []) as { scope?: unknown; pk?: unknown }[]).filter((change) => change.scope === first || change.scope === second));
  this.assert.equal(carried, [], `changes of ${first} or ${second} in the pull responses to client "${name}"`);
});

Then(
  /^for scopes "([^"]+)" and "([^"]+)", the checksum client "([^"]+)" inspects equals the "checksum" of that scope's final rebuild page$/,
  async function (this: SyncWorld, first: string, second: string, name: string) {
    for (const scope of [first, second]) {
      const finals = (await answeredRebuilds(this, name, scope)).filter((entry) => entry.response?.has_more === false);
      const claimed = finals[finals.length - 1]?.response?.checksum?.digest;
      this.assert.ok(typeof claimed === 'string', `client "${name}" was given a final rebuild page of ${scope} with a checksum`);
      this.assert.equal((await scopeState(this, name, scope))?.checksum, claimed, `the checksum client "${name}" holds for ${scope}`);
    }
  },
);
