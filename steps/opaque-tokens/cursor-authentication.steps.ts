/**
 * The server side of opaque cursors: the harness, acting as the protocol
 * client, presents altered, foreign and wrong-kind tokens and checks that
 * each is refused as a whole request, with a generic error, before any scope
 * is served; and that refusing it cost the rightful holder nothing.
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import type { Reply } from '../support/reply.ts';
import type { SyncWorld } from '../support/world.ts';
import { alterToken } from './alteration.ts';
import { awaitCaptured, placementFor, pushInserts, rowValues } from './rows.ts';

interface HeldCursor {
  client: string;
  scope: string;
  token: string;
}

interface HeldContinuation {
  client: string;
  scope: string;
  rebuildId: string;
  token: string;
  limit: number;
}

interface CursorState {
  cursor?: HeldCursor;
  continuation?: HeldContinuation;
  /** What the last step presented, so the error body can be checked for it. */
  presented?: { original: string; value: string };
}

const states = new WeakMap<SyncWorld, CursorState>();
function state(world: SyncWorld): CursorState {
  let s = states.get(world);
  if (!s) {
    s = {};
    states.set(world, s);
  }
  return s;
}

/** Pulls until the client holds a pull-issued cursor for every scope it knows; scopes waiting for a rebuild are rebuilt first. */
async function pullUntilHeld(world: SyncWorld, name: string, scopes: string[]): Promise<void> {
  const client = world.wire(name);
  for (let round = 0; round < 3; round += 1) {
    const pages = await client.pullAll();
    const last = pages[pages.length - 1];
    if (last?.status !== 200) throw new Error(`client "${name}" could not pull: ${last?.status} ${last?.text}`);
    const missing = scopes.filter((s) => typeof client.cursors.get(s) !== 'string');
    if (missing.length === 0) return;
    for (const scope of missing) {
      if (!client.cursors.has(scope)) continue;
      const run = await client.rebuildAll(scope);
      const end = run.pages[run.pages.length - 1];
      if (end?.status !== 200) throw new Error(`client "${name}" could not rebuild ${scope}: ${end?.status} ${end?.text}`);
    }
  }
  const lacking = scopes.filter((s) => typeof client.cursors.get(s) !== 'string');
  if (lacking.length > 0) throw new Error(`client "${name}" holds no cursor for ${lacking.join(', ')} after pulling and rebuilding`);
}

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

/** The cursors a wire client holds, as a plain object for comparison. */
function heldCursors(world: SyncWorld, name: string): Record<string, string | null> {
  return Object.fromEntries(world.wire(name).cursors);
}

const snapshots = new WeakMap<SyncWorld, Map<string, Record<string, string | null>>>();
function snapshotCursors(world: SyncWorld, name: string): void {
  if (!snapshots.has(world)) snapshots.set(world, new Map());
  snapshots.get(world)?.set(name, heldCursors(world, name));
}

async function pullPresenting(world: SyncWorld, presenter: string, scope: string, value: string, invalid: boolean, original: string): Promise<void> {
  state(world).presented = { original, value };
  await world.wire(presenter).pull({ [`/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}/cursor`]: value }, { invalid });
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

Given('client {string} has pulled and holds cursors for scopes {string} and {string}', async function (this: SyncWorld, name: string, first: string, second: string) {
  await pullUntilHeld(this, name, [first, second]);
  const cursors = this.wire(name).cursors;
  this.assert.ok(typeof cursors.get(first) === 'string' && typeof cursors.get(second) === 'string', `client "${name}" holds cursors for ${first} and ${second}: ${JSON.stringify(Object.fromEntries(cursors))}`);
  snapshotCursors(this, name);
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

When(/^client "([^"]+)" pulls presenting its cursor for "([^"]+)" unchanged and its cursor for "([^"]+)" (.+)$/, async function (this: SyncWorld, name: string, kept: string, altered: string, alteration: string) {
  const client = this.wire(name);
  const keptToken = client.cursors.get(kept);
  const token = client.cursors.get(altered);
  if (typeof keptToken !== 'string' || typeof token !== 'string') throw new Error(`client "${name}" must hold cursors for ${kept} and ${altered}`);
  snapshotCursors(this, name);
  const change = alterToken(token, alteration);
  await pullPresenting(this, name, altered, change.value, change.invalid, token);
});

When(/^client "([^"]+)" pulls presenting its cursor for "([^"]+)" (?!unchanged and )(.+)$/, async function (this: SyncWorld, name: string, scope: string, alteration: string) {
  const token = this.wire(name).cursors.get(scope);
  if (typeof token !== 'string') throw new Error(`client "${name}" holds no cursor for ${scope}`);
  snapshotCursors(this, name);
  const change = alterToken(token, alteration);
  await pullPresenting(this, name, scope, change.value, change.invalid, token);
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

/**
 * Nothing moved for the holder: the refused answer issued no cursor, the
 * holder still holds exactly what it held before, and the server still
 * accepts those cursors (a follow-up pull serves every one of them, none is
 * sent to rebuild). The follow-up pull is not the scenario's "last response".
 */
Then('no scope cursor of client {string} advanced', async function (this: SyncWorld, name: string) {
  if (this.isProcess(name)) throw new Error(`"no scope cursor advanced" is checked on the harness's own protocol client, and client "${name}" is a client process here`);
  const reply = this.lastReply();
  this.assert.ok(reply.status !== 200, `the request was refused, not answered 200: ${reply.text.slice(0, 400)}`);
  for (const member of ['scope_cursors', 'final_scope_cursor', 'scope_cursor_updates']) this.assert.ok(reply.json?.[member] === undefined, `the refused answer carries no "${member}": ${reply.text.slice(0, 400)}`);
  const before = snapshots.get(this)?.get(name);
  const now = heldCursors(this, name);
  if (before !== undefined) this.assert.equal(now, before, `client "${name}" holds the same cursors as before the refused request`);
  const saved = { reply: this.reply, count: this.replies.length };
  let check: Reply;
  try {
    check = await this.wire(name).pull();
  } finally {
    this.reply = saved.reply;
    this.replies.splice(saved.count);
  }
  // While the client's own accepted write awaits capture (a paused worker), 503 capture_pending is the only
  // right answer; cursors are verified before that gate, so a cursor the server no longer accepts would
  // have been refused with 400 first. Whether one is sent to rebuild shows only once capture catches up.
  if (check.status === 503 && check.json?.error?.code === 'capture_pending') return;
  this.assert.equal(check.status, 200, `a pull presenting the cursors client "${name}" holds is served: ${check.text.slice(0, 400)}`);
  const held = Object.entries(now).filter(([, c]) => typeof c === 'string').map(([s]) => s);
  const rebuilt = (check.json.rebuild ?? []) as string[];
  this.assert.equal(held.filter((s) => rebuilt.includes(s)), [], `no scope whose cursor client "${name}" holds is sent to rebuild`);
});

Then('the response member {string} contains {string}', function (this: SyncWorld, pointer: string, item: string) {
  const reply = this.lastReply();
  let at: unknown = reply.json;
  for (const raw of pointer.slice(1).split('/')) at = (at as Record<string, unknown> | undefined)?.[raw.replaceAll('~1', '/').replaceAll('~0', '~')];
  this.assert.ok(Array.isArray(at), `the response member ${pointer} is an array: ${reply.text.slice(0, 400)}`);
  this.assert.ok((at as unknown[]).includes(item), `the response member ${pointer} contains "${item}": ${JSON.stringify(at)}`);
});

Then('the pull response lists no change for scope {string}', function (this: SyncWorld, scope: string) {
  const reply = this.lastReply();
  this.assert.equal({ endpoint: reply.endpoint, status: reply.status }, { endpoint: 'pull', status: 200 }, `the last response is a pull page: ${reply.text.slice(0, 400)}`);
  const changes = (reply.json.changes ?? []) as { scope: string }[];
  this.assert.equal(changes.filter((c) => c.scope === scope), [], `the pull page lists no change for ${scope}`);
});
