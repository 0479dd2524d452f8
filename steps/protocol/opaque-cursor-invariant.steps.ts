/**
 * SYNC-PROTO-003 Opaque Cursor Invariant
 * (features/protocol/opaque-cursor-invariant.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { randomUUID } from 'node:crypto';
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { alterToken } from '../support/opaque-tokens/alteration.ts';
import { type HeldContinuation, pullPresenting, pullUntilHeld, snapshotCursors, state } from '../support/opaque-tokens/cursor-authentication.ts';
import { lastPresented, literal } from '../support/opaque-tokens/cursor-presentation.ts';
import { awaitCaptured, placementFor, pushInserts, rowValues } from '../support/opaque-tokens/rows.ts';
import { bodyOf, clientIdOf, exchangesOf } from '../support/exchanges.ts';
import { aliasRelay, deliveredBody, installedRelay, withRequests } from '../support/opaque-tokens/tokens.ts';
import type { SyncWorld } from '../support/world.ts';

/** An intermediate continuation of a fresh rebuild of `scope` by `name`; puts rows in the scope when it has too few for two pages. */
async function intermediateContinuation(world: SyncWorld, name: string, scope: string, limit: number): Promise<HeldContinuation> {
  const client = world.wire(name);
  const first = async () => {
    const rebuildId = randomUUID();
    return { rebuildId, reply: await client.rebuildPage(scope, rebuildId, null, limit) };
  };
  let { rebuildId, reply } = await first();
  if (reply.status === 200 && reply.json.has_more !== true) {
    const { table, values } = placementFor(world, scope);
    const rows = Array.from({ length: limit + 1 }, (_, k) => {
      const id = `rb-${randomUUID().slice(0, 8)}-${k}`;
      return { id, values: rowValues(world, table, values) };
    });
    await pushInserts(client, table, rows);
    await awaitCaptured(world);
    ({ rebuildId, reply } = await first());
  }
  if (reply.status !== 200 || reply.json.has_more !== true || typeof reply.json.cursor !== 'string') {
    throw new Error(`the first rebuild page of ${scope} with limit ${limit} gave no continuation: ${reply.status} ${reply.text}`);
  }
  return { client: name, scope, rebuildId, token: reply.json.cursor, limit };
}

Given('client {string} holds a valid cursor for scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  await pullUntilHeld(this, name, [scope]);
  const token = this.wire(name).cursors.get(scope);
  this.assert.ok(typeof token === 'string' && token.length > 0, `client "${name}" holds a cursor for ${scope}`);
  state(this).cursor = { client: name, scope, token };
  snapshotCursors(this, name);
});

When(/^client "([^"]+)" pulls presenting that cursor (.+)$/, async function (this: SyncWorld, name: string, alteration: string) {
  const held = state(this).cursor;
  if (!held) throw new Error('no cursor is held yet: a step "client ... holds a valid cursor for scope ..." must come first');
  const altered = alterToken(held.token, alteration);
  await pullPresenting(this, name, held.scope, altered.value, altered.invalid, held.token);
});

Given('client {string} holds an intermediate rebuild continuation for scope {string} with limit {int}', async function (this: SyncWorld, name: string, scope: string, limit: number) {
  const held = await intermediateContinuation(this, name, scope, limit);
  this.assert.ok(held.token.length > 0, 'the intermediate page carries a continuation');
  state(this).continuation = held;
});

When(/^client "([^"]+)" requests the next rebuild page presenting that continuation (.+)$/, async function (this: SyncWorld, name: string, alteration: string) {
  const held = state(this).continuation;
  if (!held) throw new Error('no rebuild continuation is held yet');
  const altered = alterToken(held.token, alteration);
  state(this).presented = { original: held.token, value: altered.value };
  await this.wire(name).rebuildPage(held.scope, held.rebuildId, altered.value, held.limit, undefined, { invalid: altered.invalid });
});

When(/^client "([^"]+)" pulls presenting the cursor client "([^"]+)" holds for "([^"]+)" under scope "([^"]+)"$/, async function (this: SyncWorld, presenter: string, holder: string, heldScope: string, scope: string) {
  const token = this.wire(holder).cursors.get(heldScope);
  if (typeof token !== 'string') throw new Error(`client "${holder}" holds no cursor for ${heldScope}`);
  snapshotCursors(this, holder);
  await pullPresenting(this, presenter, scope, token, false, token);
});

When(/^client "([^"]+)" pulls presenting a rebuild continuation client "([^"]+)" holds under scope "([^"]+)"$/, async function (this: SyncWorld, presenter: string, holder: string, scope: string) {
  const held = state(this).continuation?.client === holder ? state(this).continuation : await intermediateContinuation(this, holder, scope, 1);
  if (!held) throw new Error(`client "${holder}" holds no rebuild continuation`);
  snapshotCursors(this, holder);
  await pullPresenting(this, presenter, scope, held.token, false, held.token);
});

When('client {string} presents that cursor as the continuation of a rebuild request for scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const held = state(this).cursor;
  if (!held) throw new Error('no cursor is held yet');
  state(this).presented = { original: held.token, value: held.token };
  await this.wire(name).rebuildPage(scope, randomUUID(), held.token, 1000);
});

Then(/^the error body has exactly the members "([^"]+)", "([^"]+)" and "([^"]+)"$/, function (this: SyncWorld, a: string, b: string, c: string) {
  const reply = this.lastReply();
  const error = reply.json?.error;
  this.assert.ok(error !== null && typeof error === 'object' && !Array.isArray(error), `the response carries an error object: ${reply.text}`);
  this.assert.equal(Object.keys(reply.json).sort(), ['error'], `the error body has only "error" at the top: ${reply.text}`);
  this.assert.equal(Object.keys(error).sort(), [a, b, c].sort(), `members of the error object: ${reply.text}`);
});

Then('the error message does not contain the presented cursor', function (this: SyncWorld) {
  const reply = this.lastReply();
  const presented = state(this).presented;
  if (!presented) throw new Error('no token was presented by an earlier step');
  const message = String(reply.json?.error?.message ?? '');
  this.assert.ok(message.length > 0, `the error carries a message: ${reply.text}`);
  // Short values ("", "null") could appear in any sentence; the token the client really held never may.
  this.assert.ok(!reply.text.includes(presented.original), `the error body repeats the cursor the client held: ${reply.text}`);
  if (presented.value.length >= 8) this.assert.ok(!reply.text.includes(presented.value), `the error body repeats the presented value: ${reply.text}`);
});

processPhrase(/client "([^"]+)" is stopped, started again and syncs/);

const longAliases = new WeakMap<SyncWorld, string>();

Given('the proxy aliases the cursors issued to client {string} for scope {string} with one alias made of the letter {string} repeated {int} times', async function (this: SyncWorld, name: string, scope: string, letter: string, times: number) {
  const alias = letter.repeat(times);
  longAliases.set(this, alias);
  const relay = await aliasRelay(this);
  relay.aliasCursors(await clientIdOf(this, name), scope, [alias]);
});

Given('the proxy issues the alias {string} for every cursor issued to client {string} in the next pull response', async function (this: SyncWorld, alias: string, name: string) {
  const relay = await aliasRelay(this);
  relay.aliasEveryCursorOnce(await clientIdOf(this, name), alias);
});

When('client {string} is stopped, started again and syncs', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  await client.call('stop');
  await client.call('start');
  await this.syncProcess(name);
});

/** Pull requests of a client from the first one that was answered with an alias for `scope` on. */
async function presentedSinceAliasing(world: SyncWorld, name: string, scope: string): Promise<unknown[]> {
  const relay = installedRelay(world);
  if (!relay) throw new Error('no alias was scripted in this scenario');
  const clientId = await clientIdOf(world, name);
  const records = relay.records.filter((r) => r.clientId === clientId);
  const first = records.findIndex((r) => r.aliasedCursors.some((a) => a.scope === scope));
  if (first < 0) return [];
  return records
    .slice(first + 1)
    .filter((r) => r.path === '/sync/pull')
    .map((r) => bodyOf(r.fromClient)?.scopes?.[scope]?.cursor);
}

Then('the raw bytes of that cursor in the request equal the raw bytes the proxy issued', async function (this: SyncWorld) {
  const relay = installedRelay(this);
  if (!relay) throw new Error('no alias was scripted in this scenario');
  // The last pull that presented an alias: its octets as the client wrote them, decoded, against the alias's octets as issued.
  const translated = [...relay.records].reverse().find((r) => r.path === '/sync/pull' && r.translatedCursors.length > 0);
  this.assert.ok(translated, 'a pull request presented a cursor the proxy had issued as an alias');
  const { scope, alias } = translated.translatedCursors[0] as { scope: string; alias: string };
  const issued = relay.records.find((r) => r.clientId === translated.clientId && r.aliasedCursors.some((a) => a.scope === scope && a.alias === alias));
  this.assert.ok(issued?.toClient, `the proxy issued alias ${JSON.stringify(alias)} for ${scope}`);
  const issuedValue = bodyOf(issued.toClient)?.scope_cursors?.[scope] ?? bodyOf(issued.toClient)?.final_scope_cursor;
  const sentValue = bodyOf(translated.fromClient)?.scopes?.[scope]?.cursor;
  this.assert.equal(typeof sentValue, 'string', 'the presented cursor is a JSON string');
  this.assert.equal(Buffer.from(sentValue, 'utf8').toString('hex'), Buffer.from(String(issuedValue), 'utf8').toString('hex'), 'octets of the presented cursor against the octets issued');
});

Then('client {string} presented that {int}-octet alias for scope {string} in its last pull request', async function (this: SyncWorld, name: string, octets: number, scope: string) {
  const alias = longAliases.get(this);
  if (alias === undefined) throw new Error('no long alias was scripted in this scenario');
  this.assert.equal(Buffer.byteLength(alias, 'utf8'), octets, 'the scripted alias has the stated length');
  const { value } = await lastPresented(this, name, scope);
  this.assert.equal(typeof value, 'string', `client "${name}" presented a cursor for ${scope}`);
  this.assert.equal(Buffer.byteLength(value as string, 'utf8'), octets, 'octets of the presented cursor');
  this.assert.ok(value === alias, 'the presented cursor is the alias, unchanged');
});

Then('the cursors client {string} presented for scope {string} in its pull requests were, in order:', async function (this: SyncWorld, name: string, scope: string, table: DataTable) {
  const expected = table.hashes().map((row) => literal(row.cursor ?? ''));
  const presented = await presentedSinceAliasing(this, name, scope);
  this.assert.equal(presented, expected, `cursors client "${name}" presented for ${scope} after the first alias was issued`);
});

Then('the proxy translated each presented cursor back to the token issued for its own scope', async function (this: SyncWorld) {
  const relay = installedRelay(this);
  if (!relay) throw new Error('no alias was scripted in this scenario');
  const last = [...relay.records].reverse().find((r) => r.path === '/sync/pull');
  this.assert.ok(last, 'a pull request crossed the proxy');
  this.assert.ok(last.translatedCursors.length >= 2, `the last pull presented aliases for at least two scopes: ${JSON.stringify(last.translatedCursors)}`);
  const reals = new Set<string>();
  for (const t of last.translatedCursors) {
    const issued = relay.cursorPairs(last.clientId ?? '', t.scope).some(([real, alias]) => real === t.real && alias === t.alias);
    this.assert.ok(issued, `the alias presented for ${t.scope} maps back to the token issued for ${t.scope}`);
    reals.add(t.real);
  }
  this.assert.equal(reals.size, last.translatedCursors.length, 'each scope got back its own, different token');
  this.assert.equal(last.status, 200, `the server accepted the translated cursors: ${last.fromServer?.toString('utf8').slice(0, 300)}`);
  const rebuild = (bodyOf(last.fromServer)?.rebuild ?? []) as string[];
  this.assert.equal(
    last.translatedCursors.filter((t) => rebuild.includes(t.scope)).map((t) => t.scope),
    [],
    'no scope whose cursor was presented is sent to rebuild',
  );
});

/** Incremental cursors delivered to a client before exchange `seq`, by scope. */
async function issuedBefore(world: SyncWorld, name: string): Promise<{ seq: number; scope: string; cursor: string }[]> {
  const clientId = await clientIdOf(world, name);
  const proxy = await world.proxy();
  const issued: { seq: number; scope: string; cursor: string }[] = [];
  for (const e of proxy.exchanges) {
    if (!e.done || bodyOf(e.requestBody)?.client_id !== clientId) continue;
    const answer = deliveredBody(e);
    if (answer?.status !== 200 || !answer.body) continue;
    const b = answer.body;
    const add = (scope: string, cursor: unknown) => {
      if (typeof cursor === 'string') issued.push({ seq: e.seq, scope, cursor });
    };
    if (e.endpoint === 'pull') for (const [s, c] of Object.entries(b.scope_cursors ?? {})) add(s, c);
    if (e.endpoint === 'connect') {
      for (const [s, c] of Object.entries(b.scope_cursor_updates ?? {})) add(s, c);
      for (const a of b.scopes?.add ?? []) add(a.id, a.cursor);
    }
    if (e.endpoint === 'rebuild' && typeof b.scope === 'string') add(b.scope, b.final_scope_cursor);
  }
  return issued;
}

Then('every non-null cursor in every pull request client {string} sent equals a cursor the server issued to client {string} for the same scope', async function (this: SyncWorld, name: string, issuer: string) {
  const issued = await issuedBefore(this, issuer);
  let presentedCount = 0;
  for (const { exchange, request } of withRequests(await exchangesOf(this, name, { endpoints: ['pull'] }))) {
    for (const [scope, ref] of Object.entries((request?.scopes ?? {}) as Record<string, { cursor: unknown }>)) {
      if (ref?.cursor === null) continue;
      presentedCount += 1;
      const match = issued.some((i) => i.seq < exchange.seq && i.scope === scope && i.cursor === ref?.cursor);
      this.assert.ok(match, `pull #${exchange.seq} presented for ${scope} a cursor never issued to client "${issuer}" for that scope: ${JSON.stringify(ref?.cursor)}`);
    }
  }
  const scopesIssued = new Set(issued.map((i) => i.scope));
  this.assert.ok(presentedCount >= scopesIssued.size && presentedCount > 0, `client "${name}" presented cursors at all (${presentedCount} for ${scopesIssued.size} scopes)`);
});

Then('no rebuild request of client {string} carries an incremental cursor in {string}', async function (this: SyncWorld, name: string, pointer: string) {
  if (pointer !== '/cursor') throw new Error(`only "/cursor" is checked, not ${pointer}`);
  const issued = await issuedBefore(this, name);
  const rebuilds = withRequests(await exchangesOf(this, name, { endpoints: ['rebuild'] }));
  this.assert.ok(rebuilds.length > 0, `client "${name}" sent rebuild requests`);
  const continuations = new Set<string>();
  for (const { exchange, request } of rebuilds) {
    const cursor = request?.cursor;
    this.assert.ok(cursor === null || !issued.some((i) => i.cursor === cursor), `rebuild request #${exchange.seq} carries an incremental cursor`);
    this.assert.ok(cursor === null || continuations.has(cursor), `rebuild request #${exchange.seq} carries a continuation no earlier page gave: ${JSON.stringify(cursor)}`);
    const answer = deliveredBody(exchange);
    if (answer?.status === 200 && typeof answer.body?.cursor === 'string') continuations.add(answer.body.cursor);
  }
});

/** The first connect exchange of the client that the proxy rewrote, or undefined. */
async function rewrittenConnect(world: SyncWorld, name: string): Promise<number> {
  const connects = withRequests(await exchangesOf(world, name, { endpoints: ['connect'] }));
  const rewritten = connects.find((c) => c.exchange.rewritten !== undefined && c.exchange.rewritten.error === undefined);
  if (!rewritten) throw new Error(`no connect response to client "${name}" was rewritten by the proxy (connects: ${JSON.stringify(connects.map((c) => ({ seq: c.exchange.seq, fault: c.exchange.fault, rewritten: c.exchange.rewritten?.describe, error: c.exchange.rewritten?.error })))}; all: ${(await world.proxy()).exchanges.map((e) => `${e.seq}:${e.endpoint}`).join(' ')})`);
  return rewritten.exchange.seq;
}

Then('client {string} sent a rebuild request for scope {string} with {string} equal to null', async function (this: SyncWorld, name: string, scope: string, pointer: string) {
  if (pointer !== '/cursor') throw new Error(`only "/cursor" is checked, not ${pointer}`);
  const after = await rewrittenConnect(this, name);
  const rebuilds = (withRequests(await exchangesOf(this, name, { endpoints: ['rebuild'] }))).filter((r) => r.exchange.seq > after && r.request?.scope === scope);
  this.assert.ok(rebuilds.length > 0, `client "${name}" sent a rebuild request for ${scope} after the connect that nulled its cursor`);
  this.assert.equal(rebuilds[0]?.request?.cursor, null, `the first rebuild request for ${scope} starts with a null cursor`);
});

Then('no pull request of client {string} presented a non-null cursor for scope {string} before that rebuild completed', async function (this: SyncWorld, name: string, scope: string) {
  const after = await rewrittenConnect(this, name);
  const done = (withRequests(await exchangesOf(this, name, { endpoints: ['rebuild'] }))).find((r) => r.exchange.seq > after && r.request?.scope === scope && deliveredBody(r.exchange)?.body?.has_more === false);
  this.assert.ok(done, `the rebuild of ${scope} completed after the connect`);
  const early = (withRequests(await exchangesOf(this, name, { endpoints: ['pull'] }))).filter((p) => p.exchange.seq > after && p.exchange.seq < done.exchange.seq && typeof p.request?.scopes?.[scope]?.cursor === 'string');
  this.assert.equal(early.map((p) => p.exchange.seq), [], `pull requests presenting a cursor for ${scope} before its rebuild completed`);
});
