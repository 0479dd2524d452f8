/**
 * Scope digests the server emits (terminal pull checksums, final rebuild
 * checksums) compared with the scope digest the harness codec computes over
 * the rows the server sent, including mis-sorted variants that must differ
 * and many generated scope contents.
 */
import { createHash } from 'node:crypto';
import { Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { blob, compareBytes, decodeRowIdentity, fromHex, SCOPE_DOMAIN, ScopeDigestBuilder, text, toHex, u64be } from '../../harness/codec/index.ts';
import type { Exchange } from '../../harness/proxy/records.ts';
import { awaitCapture } from '../common/source-schema.steps.ts';
import type { SyncWorld } from '../support/world.ts';
import { clientExchanges, currentManifest, integrity, manifests } from './context.ts';
import { entryOf, type Manifest, type Obj, plainKey, requestOf, scopeDigestHex, serverBody, tableById } from './oracle.ts';

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
