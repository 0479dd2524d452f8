/**
 * SYNC-PROTO-004 Opaque Server Version Invariant
 * (features/protocol/opaque-server-version-invariant.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import type { Exchange } from '../../harness/proxy/records.ts';
import { state } from '../support/opaque-tokens/server-versions.ts';
import { type Body, bodyOf, clientIdOf, exchangesOf } from '../support/exchanges.ts';
import { aliasRelay, deliveredBody, withRequests } from '../support/opaque-tokens/tokens.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { cellValue } from '../support/values.ts';
import { SyncWorld } from '../support/world.ts';

const SERVER_VERSION = /^[\x20\x21\x23-\x5B\x5D-\x7E]{1,64}$/;

/** Server versions in every 200 answer the proxy recorded: push outcomes, pull changes, rebuild records. */
function recordedVersions(exchanges: readonly Exchange[], member: string): { endpoint: string; seq: number; value: unknown }[] {
  const found: { endpoint: string; seq: number; value: unknown }[] = [];
  for (const e of exchanges) {
    const answer = deliveredBody(e);
    if (answer?.status !== 200 || !answer.body) continue;
    const b = answer.body;
    const items: Body[] = e.endpoint === 'push' ? [...(b.accepted ?? []), ...(b.rejected ?? [])] : e.endpoint === 'pull' ? (b.changes ?? []) : e.endpoint === 'rebuild' ? (b.records ?? []) : [];
    for (const item of items) if (item && Object.hasOwn(item, member)) found.push({ endpoint: e.endpoint, seq: e.seq, value: item[member] });
  }
  return found;
}

Then(/^every "([^"]+)" the proxy recorded in push outcomes, pull changes and rebuild records matches "(.+)"$/, async function (this: SyncWorld, member: string, pattern: string) {
  const shape = new RegExp(pattern);
  const found = recordedVersions((await this.proxy()).exchanges, member);
  for (const endpoint of ['push', 'pull', 'rebuild']) this.assert.ok(found.some((f) => f.endpoint === endpoint), `some ${endpoint} answer carried a "${member}" (${found.length} seen in all)`);
  for (const f of found) this.assert.ok(typeof f.value === 'string' && shape.test(f.value), `"${member}" ${JSON.stringify(f.value)} of ${f.endpoint} exchange #${f.seq} matches ${pattern}`);
});

/** The raw JSON string tokens that follow `"<member>":` in a body, as octets. */
function rawStringTokens(body: Buffer, member: string): Buffer[] {
  const text = body.toString('latin1');
  const key = `"${member}"`;
  const tokens: Buffer[] = [];
  let at = text.indexOf(key);
  while (at >= 0) {
    let k = at + key.length;
    while (k < text.length && ' \t\r\n'.includes(text.charAt(k))) k += 1;
    if (text.charAt(k) === ':') {
      k += 1;
      while (k < text.length && ' \t\r\n'.includes(text.charAt(k))) k += 1;
      if (text.charAt(k) === '"') {
        let end = k + 1;
        while (end < text.length && text.charAt(end) !== '"') end += text.charAt(end) === '\\' ? 2 : 1;
        tokens.push(body.subarray(k, end + 1));
      }
    }
    at = text.indexOf(key, at + key.length);
  }
  return tokens;
}

Then(/^for every "([^"]+)" in the recorded response bytes, the raw JSON string token is exactly its decoded length plus 2 octets long$/, async function (this: SyncWorld, member: string) {
  let seen = 0;
  for (const e of (await this.proxy()).exchanges) {
    const answer = deliveredBody(e);
    if (answer?.status !== 200 || !['push', 'pull', 'rebuild'].includes(e.endpoint)) continue;
    for (const token of rawStringTokens(answer.bytes, member)) {
      seen += 1;
      const decoded = JSON.parse(token.toString('utf8')) as string;
      this.assert.equal(token.length, Buffer.byteLength(decoded, 'utf8') + 2, `raw token ${token.toString('utf8')} of exchange #${e.seq} is its decoded length plus 2`);
    }
  }
  const decodedCount = recordedVersions((await this.proxy()).exchanges, member).length;
  this.assert.ok(seen > 0, `the recorded responses carry "${member}" tokens`);
  this.assert.equal(seen, decodedCount, `every "${member}" member was found in the raw bytes`);
});

When(/^client "([^"]+)" sends its next push request updating row "([^"]+)" with "([^"]+)" set to (.+)$/, async function (this: SyncWorld, name: string, id: string, pointer: string, valueText: string) {
  const held = state(this).held.get(id);
  if (!held) throw new Error(`client "${name}" holds no version for row ${id}`);
  const client = this.wire(name);
  const mutation = client.mutation({ op: 'update', table: held.table, pk: id, columns: { title: `${id}-changed` }, base_version: held.version });
  const value = JSON.parse(valueText.trim()) as unknown;
  await client.push([mutation], { [pointer]: value }, { invalid: true });
});

Then('the outcome\'s server_version equals the version client {string} held for row {string}', function (this: SyncWorld, _name: string, id: string) {
  const held = state(this).held.get(id);
  if (!held) throw new Error(`no version is held for row ${id}`);
  const reply = [...this.replies].reverse().find((r) => r.endpoint === 'push');
  this.assert.ok(reply?.status === 200, 'a push was answered 200');
  const outcomes = [...(reply.json.accepted ?? []), ...(reply.json.rejected ?? [])] as Body[];
  this.assert.equal(outcomes.length, 1, 'the push had one outcome');
  this.assert.equal(outcomes[0]?.server_version, held.version, `the conflict reports the version the server really holds for ${id}`);
});

When('client {string} pushes a batch whose mutations all carry the client_version {string}:', async function (this: SyncWorld, name: string, clientVersion: string, table: DataTable) {
  await this.readyServer();
  const client = this.wire(name);
  const mutations = table.hashes().map((row) => {
    const { mutation_id, operation, table: tableName, pk, ...columns } = row;
    if (operation !== 'insert' || !tableName || pk === undefined) throw new Error('this step sends inserts: operation, table and pk are required');
    const model = this.model.table(tableName);
    const values: Record<string, unknown> = {};
    for (const [column, text] of Object.entries(columns)) values[column] = cellValue(model.columns.find((c) => c.name === column), text);
    return client.mutation({ op: 'insert', table: tableName, pk, columns: values, client_version: clientVersion, ...(mutation_id ? { mutation_id } : {}) });
  });
  await client.push(mutations);
});

function lastOutcomeVersions(world: SyncWorld): string[] {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'push');
  world.assert.ok(reply?.status === 200, `a push was answered 200: ${reply?.text}`);
  const versions = ((reply.json.accepted ?? []) as Body[]).map((o) => o.server_version);
  world.assert.equal(versions.length, ((reply.json.accepted ?? []).length + (reply.json.rejected ?? []).length) as number, `every outcome was applied: ${reply.text}`);
  return versions as string[];
}

Then('the server versions of the two outcomes differ', function (this: SyncWorld) {
  const versions = lastOutcomeVersions(this);
  this.assert.equal(versions.length, 2, 'two outcomes');
  this.assert.notEqual(versions[0], versions[1], 'the two versions');
});

Then(/^neither server version contains (.+)$/, function (this: SyncWorld, list: string) {
  const needles = [...list.matchAll(/"([^"]*)"/g)].map((m) => m[1] as string);
  if (needles.length === 0) throw new Error(`no quoted text in ${list}`);
  for (const version of lastOutcomeVersions(this)) {
    for (const needle of needles) this.assert.ok(!version.includes(needle), `server version ${JSON.stringify(version)} contains ${JSON.stringify(needle)}`);
  }
});

type WriteKind = 'push' | 'push-same-title' | 'source';

/** One write to a row; returns the version the server reported for it. */
async function applyWrite(world: SyncWorld, name: string, table: string, id: string, kind: WriteKind, base: string, step: number, lastTitle: string): Promise<{ version: string; title: string }> {
  const client = world.wire(name);
  const title = kind === 'push-same-title' ? lastTitle : `w${step}-${kind}`;
  if (kind === 'source') {
    const server = await world.readyServer();
    if (!server.sourceSql) throw new Error('the server adapter offers no source SQL');
    const key = world.model.keyColumn(table).name;
    await server.sourceSql.query(`UPDATE public."${table}" SET title = $1 WHERE "${key}" = $2`, [title, id]);
    await awaitCapture(world);
    const pages = await client.pullAll();
    const tableId = client.tableId(table);
    const change = pages
      .flatMap((p) => (p.status === 200 ? (p.json.changes as Body[]) : []))
      .filter((c) => c.table === tableId && Object.values(c.pk ?? {})[0] === id)
      .pop();
    if (typeof change?.server_version !== 'string') throw new Error(`the pull after a source update of ${id} delivered no version for it: ${pages.map((p) => p.text).join('\n')}`);
    return { version: change.server_version, title };
  }
  const reply = await client.push([client.mutation({ op: 'update', table, pk: id, columns: { title }, base_version: base })]);
  const outcome = reply.json?.accepted?.[0];
  if (reply.status !== 200 || typeof outcome?.server_version !== 'string') throw new Error(`push update ${step} of ${id} was not applied: ${reply.status} ${reply.text}`);
  return { version: outcome.server_version, title };
}

When(
  /^the harness applies to row "([^"]+)" of table "([^"]+)" (\d+) generated writes, each chosen at random among a push update, a push update that repeats the previous title, and a direct source update$/,
  async function (this: SyncWorld, id: string, table: string, countText: string) {
    const count = Number(countText);
    const held = state(this).held.get(id);
    if (!held) throw new Error(`no version is held for row ${id}: insert it first`);
    const name = [...this.clientUsers.keys()].find((n) => this.hasWire(n));
    if (name === undefined) throw new Error('no protocol client of the harness exists in this scenario');
    let current = held.version;
    let title = id;
    const log: { version: string; base: string; kind: string }[] = [];
    state(this).writes.set(id, log);
    // One generated run of `count` writes, each based on the version the previous one reported. This step only
    // writes and records: whether every version is fresh for the row and differs from its base is for the Then steps.
    // Every kind comes once first, in an order where a repeated title follows a real change, so a server that
    // keeps the version of a write changing nothing is caught on every run, not only when the draw happens to
    // put that case late enough; the rest of the run is drawn at random.
    const fixed: WriteKind[] = ['push', 'push-same-title', 'source'];
    const [drawn] = fc.sample(fc.array(fc.constantFrom<WriteKind>('push', 'push-same-title', 'source'), { minLength: Math.max(0, count - fixed.length), maxLength: Math.max(0, count - fixed.length) }), 1);
    const kinds = [...fixed, ...(drawn ?? [])].slice(0, count);
    for (const [index, kind] of kinds.entries()) {
      const { version, title: written } = await applyWrite(this, name, table, id, kind, current, index + 1, title);
      log.push({ version, base: current, kind });
      current = version;
      title = written;
    }
  },
);

Then(/^the (\d+) versions the server reported for row "([^"]+)" are pairwise different$/, function (this: SyncWorld, countText: string, id: string) {
  const log = state(this).writes.get(id) ?? [];
  this.assert.equal(log.length, Number(countText), `versions recorded for ${id}`);
  const held = state(this).held.get(id)?.version;
  const all = [held, ...log.map((w) => w.version)];
  this.assert.equal(new Set(all).size, all.length, `versions of ${id} (the insert's, then each write's): ${JSON.stringify(all)}; writes in order: ${JSON.stringify(log.map((w) => w.kind))}`);
});

Then('none of them equals the base_version of the write that produced it', function (this: SyncWorld) {
  const logs = [...state(this).writes.values()];
  this.assert.ok(logs.length > 0, 'generated writes were applied');
  for (const log of logs) for (const w of log) this.assert.notEqual(w.version, w.base, `a ${w.kind} write kept its base version`);
});

/** Table ID and key object of a row, read from the server's published manifest. */
async function rowIdentity(world: SyncWorld, table: string, id: string): Promise<{ tableId: string; pk: Record<string, unknown> }> {
  const server = await world.readyServer();
  const response = await fetch(`${server.baseUrl}/sync/schema`, { signal: AbortSignal.timeout(world.deadlineMs) });
  const manifest = ((await response.json()) as { manifest?: { tables?: { name: string; table_id: string; primary_key_field_id: string }[] } }).manifest;
  const entry = manifest?.tables?.find((t) => t.name === table);
  if (!entry) throw new Error(`the server's manifest has no table "${table}"`);
  return { tableId: entry.table_id, pk: { [entry.primary_key_field_id]: cellValue(world.model.keyColumn(table), id) } };
}

Given('the proxy aliases the server versions of row {string} of table {string} sent to client {string} in issue order:', async function (this: SyncWorld, id: string, table: string, name: string, aliases: DataTable) {
  const list = aliases.hashes().map((row) => JSON.parse((row.alias ?? '').trim()) as string);
  for (const alias of list) if (!SERVER_VERSION.test(alias)) throw new Error(`alias ${JSON.stringify(alias)} is not a well-formed server version`);
  const { tableId, pk } = await rowIdentity(this, table, id);
  const relay = await aliasRelay(this);
  relay.aliasVersions(await clientIdOf(this, name), tableId, pk, list);
});

/** Push requests of a client that carry a mutation for row `id`, with that mutation and what the client got back. */
async function pushesFor(world: SyncWorld, name: string, id: string): Promise<{ seq: number; mutation: Body; outcome: Body }[]> {
  const found: { seq: number; mutation: Body; outcome: Body }[] = [];
  for (const { exchange, request } of withRequests(await exchangesOf(world, name, { endpoints: ['push'] }))) {
    for (const m of (request?.mutations ?? []) as Body[]) {
      if (Object.values(m?.pk ?? {})[0] !== id) continue;
      const answer = deliveredBody(exchange)?.body;
      const outcome = [...(answer?.accepted ?? []), ...(answer?.rejected ?? [])].find((o: Body) => o?.mutation_id === m.mutation_id);
      found.push({ seq: exchange.seq, mutation: m, outcome });
    }
  }
  return found;
}

Then(/^the push request client "([^"]+)" sent for row "([^"]+)" carried "([^"]+)" equal to (".*")$/, async function (this: SyncWorld, name: string, id: string, member: string, text: string) {
  const expected = JSON.parse(text) as string;
  const pushes = await pushesFor(this, name, id);
  this.assert.ok(pushes.length > 0, `client "${name}" sent a push for row ${id}`);
  this.assert.equal(pushes[pushes.length - 1]?.mutation?.[member], expected, `"${member}" of the last push mutation for ${id}`);
});

Then('the push outcome for row {string} is {string}', async function (this: SyncWorld, id: string, status: string) {
  const names = [...this.clientUsers.keys()];
  const all = (await Promise.all(names.map((n) => pushesFor(this, n, id)))).flat().sort((a, b) => a.seq - b.seq);
  const last = all[all.length - 1];
  this.assert.ok(last?.outcome, `the push for row ${id} got an outcome`);
  this.assert.equal(last.outcome.status, status, `outcome of the push for ${id}: ${JSON.stringify(last.outcome)}`);
});

Then('every {string} in every push request client {string} sent equals a {string} the server sent to client {string} for the same table and primary key', async function (this: SyncWorld, member: string, name: string, sentMember: string, receiver: string) {
  const clientId = await clientIdOf(this, receiver);
  const proxy = await this.proxy();
  // Versions the receiver was given, per row, with the exchange that gave them.
  const given: { seq: number; key: string; version: string }[] = [];
  for (const e of proxy.exchanges) {
    if (bodyOf(e.requestBody)?.client_id !== clientId) continue;
    const answer = deliveredBody(e);
    if (answer?.status !== 200 || !answer.body) continue;
    const b = answer.body;
    const items: Body[] = e.endpoint === 'push' ? [...(b.accepted ?? []), ...(b.rejected ?? [])] : e.endpoint === 'pull' ? (b.changes ?? []) : e.endpoint === 'rebuild' ? (b.records ?? []) : [];
    for (const item of items) if (typeof item?.[sentMember] === 'string') given.push({ seq: e.seq, key: SyncWorld.rowKey(item.table, item.pk), version: item[sentMember] });
  }
  let checked = 0;
  for (const { exchange, request } of withRequests(await exchangesOf(this, name, { endpoints: ['push'] }))) {
    for (const m of (request?.mutations ?? []) as Body[]) {
      if (!Object.hasOwn(m, member)) continue;
      checked += 1;
      const key = SyncWorld.rowKey(m.table, m.pk);
      this.assert.ok(
        given.some((g) => g.seq < exchange.seq && g.key === key && g.version === m[member]),
        `push #${exchange.seq} sent ${member} ${JSON.stringify(m[member])} for ${key}, which the server never gave client "${receiver}" for that row`,
      );
    }
  }
  this.assert.ok(checked >= 2, `client "${name}" sent base versions (${checked} checked)`);
});

Then('no insert client {string} sent carries a {string}', async function (this: SyncWorld, name: string, member: string) {
  let inserts = 0;
  for (const { request } of withRequests(await exchangesOf(this, name, { endpoints: ['push'] }))) {
    for (const m of (request?.mutations ?? []) as Body[]) {
      if (m?.op !== 'insert') continue;
      inserts += 1;
      this.assert.ok(!Object.hasOwn(m, member), `insert ${m.mutation_id} carries "${member}"`);
    }
  }
  this.assert.ok(inserts > 0, `client "${name}" sent an insert`);
});
