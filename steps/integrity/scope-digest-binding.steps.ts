/**
 * SYNC-INTEG-003 Scope Digest Binding
 * (features/integrity/scope-digest-binding.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { createHash } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { blob, compareBytes, decodeRowIdentity, fromHex, readChecksumObject, SCOPE_DOMAIN, ScopeDigestBuilder, text, toHex, u64be } from '../../harness/codec/index.ts';
import type { Exchange } from '../../harness/proxy/records.ts';
import { processPhrase } from '../support/client-mode.ts';
import { clientExchanges, currentManifest, integrity, manifests, scopeState } from '../support/integrity/context.ts';
import { entryOf, type Manifest, manifestsSeen, type Obj, plainKey, requestOf, scopeDigestHex, serverBody, tableById } from '../support/integrity/oracle.ts';
import { arm, expectedClientId, keyOf, requestHash } from '../support/integrity/tampering.ts';
import { exportSchema, lastExport, pagesOf, entryOf as portableEntryOf, recordsOf } from '../support/seeds/exports.ts';
import { exportScope } from '../support/seeds/seed-export.ts';
import { awaitCapture } from '../support/source-schema.ts';
import type { SyncWorld } from '../support/world.ts';
import { bodyOf, deliveredOf } from '../support/exchanges.ts';

processPhrase(/^the checksum client "([^"]+)" stores/);

processPhrase(/^client "([^"]+)" (?:reports|still reports|never presented|sent no|has neither row "[^"]+" nor row "[^"]+"$)/);

Then(/^client "([^"]+)" reports scope "([^"]+)" as requiring rebuild or has started a new attempt with a new rebuild_id$/, async function (this: SyncWorld, name: string, scopeId: string) {
  const scope = await scopeState(this, name, scopeId);
  const refused = integrity(this).claims.get('rebuild_id');
  const later = (await clientExchanges(this, name, 'rebuild')).map((e) => requestOf(e)).filter((r) => r.scope === scopeId);
  const lastId = later[later.length - 1]?.rebuild_id;
  this.assert.ok(
    scope?.rebuildRequired === true || (refused !== undefined && lastId !== undefined && lastId !== refused),
    `client "${name}" neither requires a rebuild of ${scopeId} (${JSON.stringify(scope)}) nor started a new attempt after ${refused ?? '?'} (last ${String(lastId)})`,
  );
});

Then(/^client "([^"]+)" never presented that attempt's "final_scope_cursor" in a pull request$/, async function (this: SyncWorld, name: string) {
  const finalCursor = integrity(this).claims.get('final_scope_cursor');
  this.assert.ok(finalCursor !== undefined, 'the tampered attempt reached its final page');
  const pulls = await clientExchanges(this, name, 'pull');
  for (const e of pulls) {
    const presented = Object.values((requestOf(e).scopes ?? {}) as Record<string, Obj>).map((s) => s.cursor);
    this.assert.ok(!presented.includes(finalCursor), `client "${name}" presented the refused final cursor in pull #${e.seq}`);
  }
});

Then(/^client "([^"]+)" reports scope "([^"]+)" as requiring rebuild or has rebuilt it within that sync$/, async function (this: SyncWorld, name: string, scopeId: string) {
  const scope = await scopeState(this, name, scopeId);
  const armedAt = integrity(this).armedAt.get(name) ?? 0;
  const rebuilt = (await clientExchanges(this, name, 'rebuild', armedAt)).some((e) => requestOf(e).scope === scopeId);
  this.assert.ok(scope?.rebuildRequired === true || rebuilt, `client "${name}" neither requires nor ran a rebuild of ${scopeId} after the refused digest: ${JSON.stringify(scope)}`);
});

Then(/^the checksum client "([^"]+)" stores for scope "([^"]+)" is never the XOR claim$/, async function (this: SyncWorld, name: string, scopeId: string) {
  const claim = integrity(this).claims.get('xor');
  this.assert.ok(claim !== undefined, 'the XOR claim was delivered to the client');
  const scope = await scopeState(this, name, scopeId);
  this.assert.notEqual(scope?.checksum, claim, `client "${name}" stores the XOR claim as the checksum of ${scopeId}`);
  this.assert.notEqual(scope?.localChecksum, claim, `client "${name}" computed the XOR claim as its local checksum of ${scopeId}`);
});

/** The records of the last complete rebuild the named client fetched, with the final page. */
async function lastRebuild(world: SyncWorld, name: string): Promise<{ scope: string; hash: string; records: Obj[]; final: Obj; pages: Exchange[] }> {
  const rebuilds = await clientExchanges(world, name, 'rebuild');
  const finalExchange = [...rebuilds].reverse().find((e) => serverBody(e)?.has_more === false);
  if (finalExchange === undefined) throw new Error(`client "${name}" fetched no final rebuild page`);
  const request = requestOf(finalExchange);
  const pages = rebuilds.filter((e) => requestOf(e).rebuild_id === request.rebuild_id);
  const records = pages.flatMap((e) => (serverBody(e)?.records as Obj[]) ?? []);
  return { scope: String(request.scope), hash: String((request.schema as Obj).hash), records, final: serverBody(finalExchange) as Obj, pages };
}

function asRows(records: readonly Obj[]) {
  return records.map((r) => ({ table: String(r.table), row: r.row, serverVersion: String(r.server_version) }));
}

function nameOfOnlyClient(world: SyncWorld): string {
  const [name] = [...world.clientUsers.keys()];
  return name ?? 'A';
}

Then(/^the checksum for scope "([^"]+)" in "\/checksums" equals the harness codec scope digest of scope "([^"]+)" with cardinality 0 under the current manifest$/, async function (this: SyncWorld, scopeId: string, same: string) {
  this.assert.equal(same, scopeId, 'the step names one scope');
  const reply = this.lastReply();
  const checksum = reply.json?.checksums?.[scopeId];
  this.assert.ok(checksum !== undefined, `the pull response has a checksum for ${scopeId}: ${reply.text}`);
  const manifest = await currentManifest(this);
  const empty = toHex(new ScopeDigestBuilder(fromHex(manifest.schema_hash), scopeId).finish());
  this.assert.equal(checksum, { algorithm: 'sha256', version: 1, encoding: 'hex', digest: empty }, `checksum of the empty scope ${scopeId}`);
});

Then('the final rebuild "checksum" equals the harness codec scope digest over the rebuilt records', async function (this: SyncWorld) {
  const run = await lastRebuild(this, nameOfOnlyClient(this));
  const manifest = (await manifests(this)).get(run.hash) as Manifest;
  this.assert.ok(run.records.length > 0, 'the rebuild returned records');
  this.assert.equal((run.final.checksum as Obj).digest, scopeDigestHex(manifest, run.scope, asRows(run.records)), `final checksum of ${run.scope}`);
});

/** The scope-digest preimage streamed over entries in the given order. */
function streamed(schemaHash: string, scopeId: string, entries: readonly { identity: Uint8Array; digest: Uint8Array }[]): string {
  const h = createHash('sha256');
  h.update(SCOPE_DOMAIN);
  h.update(fromHex(schemaHash));
  h.update(text(scopeId));
  h.update(u64be(entries.length));
  for (const e of entries) {
    h.update(blob(e.identity));
    h.update(e.digest);
  }
  return h.digest('hex');
}

Then(
  'the final rebuild "checksum" differs from each of these mis-sorted variants the codec computes: sorted by table name then key text, sorted by identity without length prefixes, in arrival order reversed',
  async function (this: SyncWorld) {
    const run = await lastRebuild(this, nameOfOnlyClient(this));
    const manifest = (await manifests(this)).get(run.hash) as Manifest;
    const entries = run.records.map((r) => ({ record: r, ...entryOf(manifest, String(r.table), r.row, String(r.server_version)) }));
    const canonical = [...entries].sort((a, b) => compareBytes(a.identity, b.identity));
    const withoutPrefixes = (e: (typeof entries)[number]) => {
      const id = decodeRowIdentity(e.identity);
      return Buffer.concat([Buffer.from(id.tableId), Buffer.from(id.pkFieldId), Buffer.from(String(plainKey(e.record.pk)))]);
    };
    const nameKey = (e: (typeof entries)[number]) => `${tableById(manifest, String(e.record.table)).name}\u0000${String(plainKey(e.record.pk))}`;
    const variants = [
      { what: 'sorted by table name then key text', order: [...entries].sort((a, b) => (nameKey(a) < nameKey(b) ? -1 : nameKey(a) > nameKey(b) ? 1 : 0)) },
      { what: 'sorted by identity without length prefixes', order: [...entries].sort((a, b) => compareBytes(withoutPrefixes(a), withoutPrefixes(b))) },
      { what: 'in arrival order reversed', order: [...entries].reverse() },
    ];
    const claimed = String((run.final.checksum as Obj).digest);
    this.assert.equal(claimed, streamed(run.hash, run.scope, canonical), 'the server digest streams the entries in complete identity order');
    for (const v of variants) {
      // Each variant must really be another order for its digest to say anything.
      this.assert.ok(v.order.some((e, k) => e !== canonical[k]), `the variant ${v.what} is a different order for these rows`);
      this.assert.notEqual(streamed(run.hash, run.scope, v.order), claimed, `the digest ${v.what}`);
    }
  },
);

Then(/^the terminal pull checksum of scope "([^"]+)" equals the final rebuild checksum$/, async function (this: SyncWorld, scopeId: string) {
  const name = nameOfOnlyClient(this);
  const pulls = await clientExchanges(this, name, 'pull');
  const terminal = [...pulls].reverse().map(serverBody).find((b) => b?.has_more === false);
  const fromPull = ((terminal?.checksums as Record<string, Obj> | undefined)?.[scopeId] as Obj | undefined)?.digest;
  const run = await lastRebuild(this, name);
  this.assert.ok(fromPull !== undefined, `a terminal pull page carried a checksum for ${scopeId}`);
  this.assert.equal(fromPull, (run.final.checksum as Obj).digest, `terminal pull and final rebuild checksums of ${scopeId}`);
});

Then(/^both equal the harness codec scope digest over rows "([^"]+)" and "([^"]+)" with their current versions$/, async function (this: SyncWorld, first: string, second: string) {
  const run = await lastRebuild(this, nameOfOnlyClient(this));
  const manifest = (await manifests(this)).get(run.hash) as Manifest;
  this.assert.equal(run.records.map((r) => String(plainKey(r.pk))).sort(), [first, second].sort(), 'the rows of the scope at that boundary');
  this.assert.equal((run.final.checksum as Obj).digest, scopeDigestHex(manifest, run.scope, asRows(run.records)), 'the codec digest over both rows');
});

// --- generated scope contents ---------------------------------------------

interface Round {
  limit: number;
  expected: string;
  claimed: string;
  cardinality: number;
  distinct: number;
}

When(
  /^the harness runs (\d+) rounds, each pushing a generated mix of inserts, updates and deletes over up to (\d+) keys of tables "([^"]+)" and "([^"]+)" with client "([^"]+)", then rebuilding scope "([^"]+)" with a generated page limit from (\d+) to (\d+)$/,
  async function (this: SyncWorld, rounds: string, keys: string, tableA: string, tableB: string, name: string, scopeId: string, low: string, high: string) {
    const wire = this.wire(name);
    const all = await manifests(this);
    const held = new Map<string, string>(); // "table key" -> server version of a live row
    // A deleted key keeps its deletion fence: inserting it again is a conflict by design, so it is retired.
    const retired = new Set<string>();
    const results: Round[] = [];
    const keyCount = Number(keys);
    const keyOf = (table: string, k: number) => (this.model.keyColumn(table).type === 'int' ? k : `k-${k}`);
    const opArb = fc.record({ table: fc.constantFrom(tableA, tableB), key: fc.integer({ min: 0, max: keyCount - 1 }), text: fc.string({ maxLength: 6 }).filter((s) => !s.includes('\u0000')) });
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(opArb, { minLength: 1, maxLength: 8, selector: (o) => `${o.table} ${o.key}` }), fc.integer({ min: Number(low), max: Number(high) }), async (drawn, limit) => {
        const ops = drawn.filter((o) => !retired.has(`${o.table} ${o.key}`));
        const mutations = ops.map((o) => {
          const slot = `${o.table} ${o.key}`;
          const version = held.get(slot);
          const text = this.model.table(o.table).columns.find((c) => !c.key && c.name !== 'owner_id')?.name as string;
          if (version === undefined) return wire.mutation({ op: 'insert', table: o.table, pk: keyOf(o.table, o.key), columns: { owner_id: wire.userId, [text]: o.text } });
          if (o.text.length % 2 === 0) return wire.mutation({ op: 'delete', table: o.table, pk: keyOf(o.table, o.key), base_version: version });
          return wire.mutation({ op: 'update', table: o.table, pk: keyOf(o.table, o.key), columns: { [text]: o.text }, base_version: version });
        });
        if (mutations.length > 0) {
          const reply = await wire.push(mutations);
          if (reply.status !== 200) throw new Error(`push answered ${reply.status}: ${reply.text}`);
          for (const [k, o] of ops.entries()) {
            const outcome = [...reply.json.accepted, ...reply.json.rejected].find((x: Obj) => x.mutation_id === mutations[k]?.mutation_id) as Obj;
            if (outcome.status !== 'applied') throw new Error(`mutation ${k} was not applied: ${JSON.stringify(outcome)}`);
            const slot = `${o.table} ${o.key}`;
            if (mutations[k]?.op === 'delete') {
              held.delete(slot);
              retired.add(slot);
            } else held.set(slot, String(outcome.server_version));
          }
          await awaitCapture(this);
        }
        const run = await wire.rebuildAll(scopeId, limit);
        const last = run.pages[run.pages.length - 1];
        if (last?.status !== 200) throw new Error(`rebuild page answered ${last?.status}: ${last?.text}`);
        const hash = String(wire.schema.hash);
        const manifest = all.get(hash) as Manifest;
        const records = run.records as Obj[];
        const identities = new Set(records.map((r) => toHex(entryOf(manifest, String(r.table), r.row, String(r.server_version)).identity)));
        // The codec refuses a duplicate identity: a repeated record fails the round here.
        const expected = scopeDigestHex(manifest, scopeId, asRows(records));
        const rebuiltKeys = records.map((r) => `${tableById(manifest, String(r.table)).name} ${String(plainKey(r.pk)).replace(/^k-/, '')}`).sort();
        const live = [...held.keys()].sort();
        if (JSON.stringify(rebuiltKeys) !== JSON.stringify(live)) throw new Error(`the rebuild holds ${rebuiltKeys.join(',')} but the live rows are ${live.join(',')}`);
        const round: Round = { limit, expected, claimed: String(run.checksum?.digest), cardinality: records.length, distinct: identities.size };
        if (round.claimed !== round.expected) throw new Error(`final rebuild checksum ${round.claimed} differs from the codec digest ${round.expected} over ${records.length} records`);
        results.push(round);
      }),
      { numRuns: Number(rounds), endOnFailure: true },
    );
    integrity(this).noted.set('rounds', results);
  },
);

function rounds(world: SyncWorld): Round[] {
  const found = integrity(world).noted.get('rounds') as Round[] | undefined;
  if (found === undefined) throw new Error('no generated rounds ran');
  return found;
}

Then('in every round the final rebuild checksum equals the harness codec scope digest over the union of the rebuilt records', function (this: SyncWorld) {
  const all = rounds(this);
  this.assert.ok(all.length > 0, 'rounds ran');
  for (const [k, r] of all.entries()) this.assert.equal(r.claimed, r.expected, `round ${k + 1} (page limit ${r.limit})`);
});

Then('in every round the cardinality the codec used equals the number of distinct row identities rebuilt', function (this: SyncWorld) {
  const all = rounds(this);
  this.assert.ok(all.length > 0, 'rounds ran');
  for (const [k, r] of all.entries()) this.assert.equal(r.cardinality, r.distinct, `round ${k + 1}: records vs distinct identities`);
});

/** Records of the rebuild attempt `rebuildId` the client was given before, plus this page's. */
function attemptRecords(exchanges: readonly Exchange[], current: Exchange, page: Obj): Obj[] {
  const rebuildId = (bodyOf(current.requestBody) as Obj | undefined)?.rebuild_id;
  const earlier = exchanges.filter((e) => e !== current && e.done && e.endpoint === 'rebuild' && (bodyOf(e.requestBody) as Obj | undefined)?.rebuild_id === rebuildId);
  const records: Obj[] = [];
  for (const e of earlier) {
    const answer = deliveredOf(e);
    if (answer?.status === 200) records.push(...(((bodyOf(answer.body) as Obj).records ?? []) as Obj[]));
  }
  return [...records, ...((page.records ?? []) as Obj[])];
}

interface Entry {
  key: string;
  identity: Uint8Array;
  digest: Uint8Array;
}

function entriesOf(manifest: Manifest, records: readonly Obj[]): Entry[] {
  return records
    .map((r) => ({ key: keyOf(r), ...entryOf(manifest, String(r.table), r.row, String(r.server_version)) }))
    .sort((a, b) => compareBytes(a.identity, b.identity));
}

/** The scope-digest preimage streamed by hand, so a wrong count or order can be written on purpose. */
function rawScopeDigest(schemaHash: string, scopeId: string, cardinality: number, entries: readonly { identity: Uint8Array; digest: Uint8Array }[]): string {
  const h = createHash('sha256');
  h.update(SCOPE_DOMAIN);
  h.update(fromHex(schemaHash));
  h.update(text(scopeId));
  h.update(u64be(cardinality));
  for (const e of entries) {
    h.update(blob(e.identity));
    h.update(e.digest);
  }
  return h.digest('hex');
}

function xor(digests: readonly Uint8Array[]): string {
  const out = new Uint8Array(32);
  for (const d of digests) for (let k = 0; k < 32; k++) out[k] = (out[k] ?? 0) ^ (d[k] ?? 0);
  return toHex(out);
}

/** The digest a shortcut implementation would claim, named as in the feature. */
function claimFor(claim: string, schemaHash: string, scopeId: string, entries: readonly Entry[]): string {
  const find = (key: string) => {
    const index = entries.findIndex((e) => e.key === key);
    if (index < 0) throw new Error(`row ${key} is not among the rebuilt records`);
    return index;
  };
  let m: RegExpExecArray | null;
  if (/^the XOR of the (\w+ )?row digests$/.test(claim)) return xor(entries.map((e) => e.digest));
  if (/^the SHA-256 of the \w+ row digests concatenated in identity order, without identities$/.test(claim)) {
    const h = createHash('sha256');
    for (const e of entries) h.update(e.digest);
    return h.digest('hex');
  }
  m = /^the codec scope digest with the row digests of "([^"]+)" and "([^"]+)" exchanged$/.exec(claim);
  if (m) {
    const swapped = entries.map((e) => ({ ...e }));
    const [a, b] = [find(m[1] as string), find(m[2] as string)];
    [(swapped[a] as Entry).digest, (swapped[b] as Entry).digest] = [(entries[b] as Entry).digest, (entries[a] as Entry).digest];
    return rawScopeDigest(schemaHash, scopeId, entries.length, swapped);
  }
  m = /^the codec scope digest with cardinality (\d+)( over the same \w+ entries)?$/.exec(claim);
  if (m) return rawScopeDigest(schemaHash, scopeId, Number(m[1]), entries);
  if (/^the codec scope digest over the entries in descending identity order$/.test(claim)) return rawScopeDigest(schemaHash, scopeId, entries.length, [...entries].reverse());
  m = /^the codec scope digest computed with scope ID "([^"]+)"$/.exec(claim);
  if (m) return rawScopeDigest(schemaHash, m[1] as string, entries.length, entries);
  if (/^a SHA-256 tree: the hash of the hashes of each identity and digest pair$/.test(claim)) {
    const root = createHash('sha256');
    for (const e of entries) root.update(createHash('sha256').update(blob(e.identity)).update(e.digest).digest());
    return root.digest('hex');
  }
  throw new Error(`unknown digest claim "${claim}"`);
}

Given(/^the proxy will replace the final "checksum" of the next rebuild of scope "([^"]+)" for client "([^"]+)" by (.+)$/, async function (this: SyncWorld, scopeId: string, name: string, claim: string) {
  const proxy = await this.proxy();
  const state = integrity(this);
  await arm(this, name, 'rebuild', `final checksum replaced by ${claim}`, (json, exchange) => {
    if (json.scope !== scopeId || json.has_more !== false) return undefined;
    const hash = requestHash(exchange);
    const manifest = manifestsSeen(proxy.exchanges).get(hash) as Manifest;
    const claimed = claimFor(claim, hash, scopeId, entriesOf(manifest, attemptRecords(proxy.exchanges, exchange, json)));
    if (claimed === (json.checksum as Obj).digest) throw new Error(`the claim "${claim}" equals the true digest: it tests nothing`);
    (json.checksum as Obj).digest = claimed;
    state.claims.set('claim', claimed);
    state.claims.set('final_scope_cursor', String(json.final_scope_cursor));
    state.claims.set('rebuild_id', String((bodyOf(exchange.requestBody) as Obj).rebuild_id));
    return json;
  });
});

Given(/^the proxy will apply (dropping|repeating) the record of row "([^"]+)" to the next rebuild response of scope "([^"]+)" for client "([^"]+)"$/, async function (this: SyncWorld, how: string, key: string, scopeId: string, name: string) {
  const state = integrity(this);
  await arm(this, name, 'rebuild', `${how} the record of ${key}`, (json, exchange) => {
    if (json.scope !== scopeId) return undefined;
    const records = (json.records ?? []) as Obj[];
    const index = records.findIndex((r) => keyOf(r) === key);
    if (index < 0) return undefined;
    if (how === 'dropping') records.splice(index, 1);
    else records.splice(index + 1, 0, structuredClone(records[index] as Obj));
    // The final page of this attempt names the cursor that must never be installed.
    state.claims.set('rebuild_id', String((bodyOf(exchange.requestBody) as Obj).rebuild_id));
    if (json.has_more === false) state.claims.set('final_scope_cursor', String(json.final_scope_cursor));
    return json;
  });
});

/** The XOR claim over the rows the client holds for `scopeId` once this page is applied. */
Given(
  /^the proxy will replace the "checksums" entry of scope "([^"]+)" in the next terminal pull response to client "([^"]+)" by the XOR of the row digests client "[^"]+" would hold after the page$/,
  async function (this: SyncWorld, scopeId: string, name: string) {
    const proxy = await this.proxy();
    const clientId = expectedClientId(this, name);
    const state = integrity(this);
    await arm(this, name, 'pull', `XOR claim for ${scopeId}`, (json, exchange) => {
      if (json.has_more !== false) return undefined;
      const held = new Map<string, string>();
      const apply = (item: Obj, scope: unknown, upsert: boolean) => {
        if (scope !== scopeId) return;
        const key = `${String(item.table)}\u0000${keyOf(item)}`;
        if (upsert && item.row_checksum !== undefined) held.set(key, String((item.row_checksum as Obj).digest));
        else held.delete(key);
      };
      for (const e of proxy.exchanges) {
        if (e === exchange || !e.done || (bodyOf(e.requestBody) as Obj | undefined)?.client_id !== clientId()) continue;
        const answer = deliveredOf(e);
        if (answer?.status !== 200) continue;
        const body = bodyOf(answer.body) as Obj;
        if (e.endpoint === 'rebuild') for (const r of (body.records ?? []) as Obj[]) apply(r, body.scope, true);
        if (e.endpoint === 'pull') for (const c of (body.changes ?? []) as Obj[]) apply(c, c.scope, c.op === 'upsert');
      }
      for (const c of (json.changes ?? []) as Obj[]) apply(c, c.scope, c.op === 'upsert');
      const claimed = xor([...held.values()].map((hex) => fromHex(hex)));
      const checksums = json.checksums as Record<string, Obj>;
      if (checksums[scopeId] === undefined) return undefined;
      (checksums[scopeId] as Obj).digest = claimed;
      state.claims.set('xor', claimed);
      return json;
    });
  },
);

When('the harness exports the portable seed pages of scope {string} in one seed export transaction with page limit {int}', async function (this: SyncWorld, scope: string, limit: number) {
  await exportScope(this, scope, limit);
});

Then('the seed manifest entry of scope {string} has {string} {int}', function (this: SyncWorld, scope: string, member: string, value: number) {
  const entry = portableEntryOf(lastExport(this), scope);
  this.assert.ok(entry !== undefined, `the seed manifest lists scope ${scope}`);
  this.assert.equal(entry?.[member], value, `"${member}" of the seed manifest entry of ${scope}`);
});

Then('its "checksum" equals the harness codec scope digest over the exported records under the export\'s schema hash', async function (this: SyncWorld) {
  const done = lastExport(this);
  const entry = portableEntryOf(done, done.scope) as Obj;
  const manifest = await exportSchema(this, done);
  this.assert.ok(manifest !== undefined, "the export's schema hash names a manifest the server published");
  if (manifest === undefined) return;
  const records = recordsOf(done, done.scope);
  const pages = pagesOf(done, done.scope);
  // The digest is only evidence for the records when they are all of them: every page fetched, the last one final.
  this.assert.equal(records.length, entry.cardinality, `records exported for ${done.scope} against the manifest cardinality`);
  this.assert.equal(pages.at(-1)?.has_more, false, `the last seed page of ${done.scope} says it is the last`);
  let claimed: string | undefined;
  try {
    claimed = toHex(readChecksumObject(entry.checksum));
  } catch (error) {
    this.assert.ok(false, `the manifest "checksum" of ${done.scope} is a checksum object: ${(error as Error).message}`);
  }
  const rows = records.map((r) => ({ table: String(r.table), row: r.row, serverVersion: String(r.server_version) }));
  this.assert.equal(claimed, scopeDigestHex(manifest, done.scope, rows), `the seed manifest checksum of ${done.scope}`);
});
