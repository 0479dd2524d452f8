/**
 * Tampered server answers, to see whether a client verifies row and scope
 * digests before it applies rows, reconciles outcomes or moves cursors. The
 * proxy edits the next matching 200 answer to the named client (the server's
 * own answer stays on record); each step arms one rewrite.
 */
import { createHash } from 'node:crypto';
import { Given } from '@cucumber/cucumber';
import { blob, compareBytes, fromHex, SCOPE_DOMAIN, schemaManifestHashUnchecked, text, toHex, u64be } from '../../harness/codec/index.ts';
import type { FaultRule } from '../../harness/proxy/faults.ts';
import type { Exchange } from '../../harness/proxy/records.ts';
import { processPhrase } from '../support/client-mode.ts';
import type { SyncWorld } from '../support/world.ts';
import { integrity, markArmed, scopeState } from './context.ts';
import { deliveredOf, entryOf, type Manifest, manifestsSeen, type Obj, parsePlain, plainKey, tableById } from './oracle.ts';
import { applyEdit, flipDigest, recomputeLeniently, type Target } from './tamper.ts';

processPhrase(/^the proxy will (?:apply|flip|replace|set the "type").* (?:to|for) client "([^"]+)"/);
processPhrase(/^client "([^"]+)" has rebuild required for scope/);

/** The client ID the named client will present, known even before its process is opened. */
function expectedClientId(world: SyncWorld, name: string): () => string {
  if (!world.isProcess(name)) {
    const id = world.wire(name).clientId;
    return () => id;
  }
  // The process client ID is fixed by the World when it opens the process.
  return () => `${world.scenarioName}-${name}`;
}

async function arm(world: SyncWorld, name: string, endpoint: FaultRule['endpoint'], describe: string, transform: (json: Obj, exchange: Exchange) => unknown): Promise<void> {
  await world.readyServer();
  const proxy = await world.proxy();
  const clientId = expectedClientId(world, name);
  if (world.clientUsers.has(name)) await markArmed(world, name);
  proxy.inject({
    endpoint,
    when: (request) => (request as Obj | undefined)?.client_id === clientId(),
    fault: { kind: 'rewrite', describe, transform: (json: Obj, exchange: Exchange) => transform(json, exchange) },
  });
}

function keyOf(message: Obj): string {
  return String(plainKey(message.pk));
}

/** Row versions and digests the client was given earlier (pull changes and rebuild records it received). */
function heldBefore(exchanges: readonly Exchange[], clientId: string): { versions: Map<string, string>; digests: Map<string, Obj> } {
  const versions = new Map<string, string>();
  const digests = new Map<string, Obj>();
  for (const e of exchanges) {
    if (!e.done || (e.endpoint !== 'pull' && e.endpoint !== 'rebuild')) continue;
    if ((parsePlain(e.requestBody) as Obj | undefined)?.client_id !== clientId) continue;
    const answer = deliveredOf(e);
    if (answer === undefined || answer.status !== 200) continue;
    const body = parsePlain(answer.body) as Obj | undefined;
    const items = ((e.endpoint === 'pull' ? body?.changes : body?.records) ?? []) as Obj[];
    for (const item of items) {
      if (typeof item.server_version === 'string') versions.set(keyOf(item), item.server_version);
      if (item.row_checksum !== undefined) digests.set(keyOf(item), item.row_checksum as Obj);
    }
  }
  return { versions, digests };
}

function requestHash(exchange: Exchange): string {
  return String(((parsePlain(exchange.requestBody) as Obj | undefined)?.schema as Obj | undefined)?.hash);
}

async function armRowEdit(world: SyncWorld, name: string, endpoint: 'pull' | 'rebuild', edit: string, key: string, mode: 'keep' | 'lenient' | 'none'): Promise<void> {
  const proxy = await world.proxy();
  const clientId = expectedClientId(world, name);
  await arm(world, name, endpoint, `${edit} on row ${key}`, (json, exchange) => {
    const list = ((endpoint === 'pull' ? json.changes : json.records) ?? []) as Obj[];
    const message = list.find((m) => keyOf(m) === key);
    if (message === undefined) return undefined;
    const hash = requestHash(exchange);
    const manifest = manifestsSeen(proxy.exchanges).get(hash) as Manifest;
    const held = heldBefore(proxy.exchanges.filter((e) => e !== exchange), clientId());
    const target: Target = { message, rowMember: 'row', table: tableById(manifest, String(message.table)), manifest, siblings: list, heldVersions: held.versions, verifiedDigests: held.digests };
    const before = JSON.stringify(message.row_checksum);
    applyEdit(target, edit);
    if (mode === 'lenient') recomputeLeniently(target, hash);
    if (mode === 'keep' && JSON.stringify(message.row_checksum) !== before && !/row_checksum/.test(edit)) throw new Error(`the edit "${edit}" changed the row checksum`);
    return json;
  });
}

Given(
  /^the proxy will apply (.+) to the change for row "([^"]+)" in the next pull response to client "([^"]+)"(, keeping its row checksum|, recomputing its row checksum as a lenient decoder would read the row)?$/,
  async function (this: SyncWorld, edit: string, key: string, name: string, how: string | undefined) {
    await armRowEdit(this, name, 'pull', edit, key, how == null ? "none" : how.includes('keeping') ? 'keep' : 'lenient');
  },
);

Given(/^the proxy will apply (.+) to the record for row "([^"]+)" in the next rebuild response to client "([^"]+)", keeping its row checksum$/, async function (this: SyncWorld, edit: string, key: string, name: string) {
  await armRowEdit(this, name, 'rebuild', edit, key, 'keep');
});

Given(/^the proxy will flip one hex digit of the "row_checksum" digest of the change for row "([^"]+)" in the next pull response to client "([^"]+)"$/, async function (this: SyncWorld, key: string, name: string) {
  await armRowEdit(this, name, 'pull', 'flipping one hex digit of its "row_checksum" digest', key, 'none');
});

Given(/^the proxy will flip one hex digit of the "row_checksum" digest of the first accepted outcome in the next push response to client "([^"]+)"$/, async function (this: SyncWorld, name: string) {
  await arm(this, name, 'push', 'flip the digest of the first accepted outcome', (json) => {
    const first = ((json.accepted ?? []) as Obj[]).find((o) => o.row_checksum !== undefined);
    if (first === undefined) return undefined;
    flipDigest(first.row_checksum as Obj);
    return json;
  });
});

Given(
  /^the proxy will set the "type" of field "([^"]+)" to "([^"]+)" in the "schema_definition" of the next connect response to client "([^"]+)", recomputing the manifest hash in "schema_definition" and "schema"$/,
  async function (this: SyncWorld, column: string, alias: string, name: string) {
    await arm(this, name, 'connect', `type of ${column} set to ${alias}`, (json) => {
      const manifest = json.schema_definition as (Manifest & Obj) | undefined;
      if (manifest === undefined) return undefined;
      const field = manifest.tables.flatMap((t) => t.fields).find((f) => f.name === column);
      if (field === undefined) throw new Error(`the manifest has no field named ${column}`);
      field.type = alias;
      // The forged manifest breaks the portable type set on purpose, so its hash comes from the formula without the manifest checks.
      const { hash } = schemaManifestHashUnchecked(manifest);
      manifest.schema_hash = hash;
      (json.schema as Obj).hash = hash;
      return json;
    });
  },
);

/** Records of the rebuild attempt `rebuildId` the client was given before, plus this page's. */
function attemptRecords(exchanges: readonly Exchange[], current: Exchange, page: Obj): Obj[] {
  const rebuildId = (parsePlain(current.requestBody) as Obj | undefined)?.rebuild_id;
  const earlier = exchanges.filter((e) => e !== current && e.done && e.endpoint === 'rebuild' && (parsePlain(e.requestBody) as Obj | undefined)?.rebuild_id === rebuildId);
  const records: Obj[] = [];
  for (const e of earlier) {
    const answer = deliveredOf(e);
    if (answer?.status === 200) records.push(...(((parsePlain(answer.body) as Obj).records ?? []) as Obj[]));
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
export function claimFor(claim: string, schemaHash: string, scopeId: string, entries: readonly Entry[]): string {
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
    state.claims.set('rebuild_id', String((parsePlain(exchange.requestBody) as Obj).rebuild_id));
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
    state.claims.set('rebuild_id', String((parsePlain(exchange.requestBody) as Obj).rebuild_id));
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
        if (e === exchange || !e.done || (parsePlain(e.requestBody) as Obj | undefined)?.client_id !== clientId()) continue;
        const answer = deliveredOf(e);
        if (answer?.status !== 200) continue;
        const body = parsePlain(answer.body) as Obj;
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

Given(/^client "([^"]+)" has rebuild required for scope "([^"]+)"$/, async function (this: SyncWorld, name: string, scopeId: string) {
  // A server may answer any pull with "rebuild this scope"; the proxy makes the next one say so,
  // and holds the rebuild back (503) so the client stays rebuild-required when the step ends.
  const proxy = await this.proxy();
  const clientId = expectedClientId(this, name);
  await arm(this, name, 'pull', `scope ${scopeId} marked for rebuild`, (json) => {
    const cursors = json.scope_cursors as Record<string, unknown>;
    delete cursors[scopeId];
    json.changes = ((json.changes ?? []) as Obj[]).filter((c) => c.scope !== scopeId);
    const rebuild = new Set([...((json.rebuild ?? []) as string[]), scopeId]);
    json.rebuild = [...rebuild].sort((a, b) => compareBytes(Buffer.from(a), Buffer.from(b)));
    return json;
  });
  proxy.inject({ endpoint: 'rebuild', when: (request) => (request as Obj | undefined)?.client_id === clientId(), fault: { kind: 'status', status: 503, retryAfter: '0' } });
  const result = await this.syncProcess(name);
  this.assert.ok(!('error' in result), `the sync of client "${name}" raised ${'error' in result ? result.error.message : ''}`);
  const scope = await scopeState(this, name, scopeId);
  this.assert.ok(scope?.rebuildRequired === true, `client "${name}" reports scope ${scopeId} as requiring rebuild: ${JSON.stringify(scope)}`);
});
