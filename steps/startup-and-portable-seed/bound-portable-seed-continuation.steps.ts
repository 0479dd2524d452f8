/**
 * SYNC-SEED-005 Bound Portable Seed Continuation
 * (features/startup-and-portable-seed/bound-portable-seed-continuation.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import { compareBytes, rowIdentityFromWire } from '../../harness/codec/index.ts';
import { currentManifest } from '../support/integrity/context.ts';
import { artifactState, readReceipt } from '../support/seeds/artifacts.ts';
import { connectsOf, connectWithReceipts, type Obj } from '../support/seeds/receipt-conversion.ts';
import { alterToken, callPage, describe, keptToken, pageLimitOf, scopeEntry, seedConnection, seedSessionsState, servedValue } from '../support/seeds/seed-sessions.ts';
import type { SyncWorld } from '../support/world.ts';

function addedOf(answer: Obj | undefined): { id: string; cursor: unknown }[] {
  return ((answer?.scopes as Obj | undefined)?.add ?? []) as { id: string; cursor: unknown }[];
}

Given('the harness client {string} of user {string} has connected for the first time presenting the schema of {string} and its receipts', async function (this: SyncWorld, name: string, user: string, file: string) {
  await connectWithReceipts(this, name, user, file);
  const reply = this.lastReply();
  if (reply.status !== 200) throw new Error(`the connect of "${name}" was answered ${reply.status}: ${reply.text}`);
});

Then('each connect lists {string} and {string} in {string} with a nonempty cursor', function (this: SyncWorld, first: string, second: string, _where: string) {
  const answers = connectsOf(this);
  this.assert.ok(answers.size >= 2, `${answers.size} harness clients connected presenting receipts`);
  for (const [name, answer] of answers) {
    for (const scope of [first, second]) {
      const cursor = addedOf(answer).find((s) => s.id === scope)?.cursor;
      this.assert.ok(typeof cursor === 'string' && cursor !== '', `the connect of "${name}" lists ${scope} in scopes.add with a nonempty cursor (found ${JSON.stringify(cursor)})`);
    }
  }
});

function receivedCursor(world: SyncWorld, name: string, scope: string): string {
  const cursor = addedOf(connectsOf(world).get(name)).find((s) => s.id === scope)?.cursor;
  if (typeof cursor !== 'string') throw new Error(`"${name}" received no cursor for ${scope} from its connect`);
  return cursor;
}

Then('the cursor {string} received for {string} differs from the one {string} received', function (this: SyncWorld, a: string, scope: string, b: string) {
  this.assert.notEqual(receivedCursor(this, a, scope), receivedCursor(this, b, scope), `the cursors of ${scope} given to "${a}" and "${b}"`);
});

When('the harness client {string} pulls presenting the cursor {string} received for {string}', async function (this: SyncWorld, name: string, owner: string, scope: string) {
  const client = this.wire(name);
  const body = client.pullBody();
  (body.scopes as Obj)[scope] = { cursor: receivedCursor(this, owner, scope) };
  // Another client's cursor is wrong on purpose: the proxy must not hold the request against the harness.
  await client.post('/sync/pull', body, { invalid: true, endpoint: 'pull' });
});

When('the harness client {string} requests a rebuild page of {string} presenting that receipt as {string}', async function (this: SyncWorld, name: string, scope: string, member: string) {
  const receipt = readReceipt(this, scope);
  const client = this.wire(name);
  await client.rebuildPage(scope, randomUUID(), null, 1000, { [member]: receipt }, { invalid: true });
});

When('the harness sends a raw connect for a fresh client with {string} holding that receipt and no {string} header', async function (this: SyncWorld, member: string, _header: string) {
  await this.readyServer();
  const receipts = Object.fromEntries(artifactState(this).receipts);
  if (Object.keys(receipts).length === 0) throw new Error('the harness read no receipt from a seed artifact');
  const probe = this.newWire(`seed-anonymous-${randomUUID().slice(0, 8)}`, 'anonymous');
  const body = probe.connectBody();
  body[member] = receipts;
  // `user: null` sends no Authorization header at all.
  await probe.post('/sync/connect', body, { user: null, endpoint: 'connect' });
});

Then('no entry of {string} or {string} carries a cursor for {string}', function (this: SyncWorld, first: string, second: string, scope: string) {
  const body = this.lastReply().json as Obj;
  const added = ((body.scopes as Obj | undefined)?.add ?? []) as { id: string; cursor: unknown }[];
  this.assert.equal(first, 'scopes.add', 'the first member the step reads');
  this.assert.equal(
    added.filter((s) => s.id === scope && s.cursor !== null),
    [],
    `${first} entries of ${scope} with a cursor`,
  );
  const updates = (body[second] ?? {}) as Obj;
  this.assert.ok(!(scope in updates) || updates[scope] === null, `${second} carries no cursor for ${scope}: ${JSON.stringify(updates)}`);
});

// Rule 1: seed page tokens on a seed connection.

When('seed connection {string} pages through {string} from {string} at ordinals {int}, {int} and {int}', async function (this: SyncWorld, name: string, scope: string, from: string, a: number, b: number, c: number) {
  const connection = await seedConnection(this, name);
  if (connection === 'skipped') return connection;
  const state = seedSessionsState(this);
  state.paged = [];
  let token = keptToken(connection, from);
  for (const ordinal of [a, b, c]) {
    const call = await callPage(this, connection, scope, token, ordinal, pageLimitOf(connection));
    state.paged.push(call);
    const next = servedValue(call.answer, `the seed page of ${scope} at ordinal ${ordinal}`).page_token;
    if (typeof next !== 'string') break;
    token = next;
  }
});

interface SeedRecord {
  table: string;
  pk: Record<string, unknown>;
}

function pagedValues(world: SyncWorld): { ordinal: number; value: Record<string, unknown> }[] {
  const paged = seedSessionsState(world).paged;
  if (paged.length === 0) throw new Error('no seed pages were fetched in this scenario');
  return paged.map((call) => {
    world.assert.equal(call.answer.ok, true, `the seed page at ordinal ${call.ordinal} was served: ${describe(call.answer)}`);
    return { ordinal: call.ordinal, value: (call.answer.ok ? call.answer.value : {}) as Record<string, unknown> };
  });
}

Then('the pages hold {int}, {int} and {int} records in strictly increasing row identity order', async function (this: SyncWorld, a: number, b: number, c: number) {
  const pages = pagedValues(this);
  this.assert.equal(
    pages.map((p) => ((p.value.records ?? []) as unknown[]).length),
    [a, b, c],
    'records per seed page',
  );
  const manifest = await currentManifest(this);
  const identities = pages.flatMap((p) =>
    ((p.value.records ?? []) as SeedRecord[]).map((record) => {
      const table = manifest.tables.find((t) => t.table_id === record.table);
      if (table === undefined) throw new Error(`a seed record names table ${record.table}, which the published manifest lacks`);
      const keyField = table.fields.find((f) => f.field_id === table.primary_key_field_id);
      const [fieldId, value] = Object.entries(record.pk)[0] ?? [];
      this.assert.equal(fieldId, table.primary_key_field_id, `the pk member of a seed record of ${table.name}`);
      return rowIdentityFromWire(record.table, String(fieldId), keyField?.type as never, value);
    }),
  );
  const increasing = identities.every((id, i) => i === 0 || compareBytes(identities[i - 1] as Uint8Array, id) < 0);
  this.assert.ok(increasing, 'the seed records across the pages are in strictly increasing row identity order');
});

Then('the last page has {string} false and {string} null', function (this: SyncWorld, hasMore: string, token: string) {
  const pages = pagedValues(this);
  const last = pages.at(-1)?.value ?? {};
  this.assert.equal([last[hasMore], last[token]], [false, null], `"${hasMore}" and "${token}" of the last seed page`);
  this.assert.ok(
    pages.slice(0, -1).every((p) => p.value[hasMore] === true && typeof p.value[token] === 'string'),
    `every earlier seed page has "${hasMore}" true and a "${token}"`,
  );
});

Then('the {int} records equal the manifest {string} of {string}', async function (this: SyncWorld, count: number, member: string, scope: string) {
  const pages = pagedValues(this);
  const connection = await seedConnection(this, [...seedSessionsState(this).connections.keys()][0] ?? 'S1');
  if (connection === 'skipped') return connection;
  const total = pages.reduce((n, p) => n + ((p.value.records ?? []) as unknown[]).length, 0);
  // The manifest may give the count as a number or an unsigned decimal string; the value is what is compared.
  this.assert.equal(String(total), String(scopeEntry(connection, scope)[member]), `records paged against the manifest "${member}" of ${scope}`);
  this.assert.equal(total, count, `records paged for ${scope}`);
});

Then('calling the seed scope function again with the token of ordinal {int} returns a byte-identical page', async function (this: SyncWorld, ordinal: number) {
  const state = seedSessionsState(this);
  const earlier = state.paged.find((call) => call.ordinal === ordinal);
  if (earlier === undefined) throw new Error(`no seed page at ordinal ${ordinal} was fetched in this scenario`);
  const connection = [...state.connections.values()][0];
  if (connection === undefined) throw new Error('no seed connection is open');
  const again = await callPage(this, connection, earlier.scope, earlier.token, earlier.ordinal, earlier.limit);
  this.assert.equal(again.answer.ok, true, `the repeated page call was served: ${describe(again.answer)}`);
  this.assert.equal(JSON.stringify(again.answer), JSON.stringify(earlier.answer), `the seed page at ordinal ${ordinal} fetched twice`);
});

When(
  /^seed connection "([^"]+)" calls the seed scope function with "([^"]+)"(?: with (.+?))? for "([^"]+)" at ordinal (\d+) with limit (\d+)$/,
  async function (this: SyncWorld, name: string, label: string, alteration: string | null | undefined, scope: string, ordinal: string, limit: string) {
    const connection = await seedConnection(this, name);
    if (connection === 'skipped') return connection;
    const kept = keptToken(connection, label);
    const token = alteration === undefined || alteration === null ? kept : alterToken(kept, alteration);
    await callPage(this, connection, scope, token, Number(ordinal), Number(limit));
  },
);

function lastPageCall(world: SyncWorld) {
  const call = seedSessionsState(world).lastCall;
  if (call === undefined) throw new Error('no seed page call was made in this scenario');
  return call;
}

Then('the page call fails with error code {string} or an SQL error', function (this: SyncWorld, code: string) {
  const { answer } = lastPageCall(this);
  const refused = !answer.ok && ('sql_error' in answer || answer.error.code === code);
  this.assert.ok(refused, `the page call was refused with "${code}" or an SQL error, not answered ${describe(answer)}`);
});

Then('the page call returned no records', function (this: SyncWorld) {
  const { answer } = lastPageCall(this);
  const records = answer.ok ? ((answer.value as { records?: unknown[] } | null)?.records ?? []) : [];
  this.assert.equal(records.length, 0, `records the refused page call returned: ${describe(answer)}`);
});
