/**
 * What a client adapter process reports after a verification failure or a
 * digest comparison: cursors and checksums per scope (inspectScopes), rebuild
 * attempts (inspectRebuilds), queued mutations (inspectMutations), and what
 * it sent on the wire afterwards (the proxy's records).
 */
import { Then } from '@cucumber/cucumber';
import type { Exchange } from '../../harness/proxy/records.ts';
import { processPhrase } from '../support/client-mode.ts';
import type { SyncWorld } from '../support/world.ts';
import { clientExchanges, integrity, scopeState } from './context.ts';
import { deliveredOf, type Manifest, manifestsSeen, type Obj, parsePlain, requestOf, scopeDigestHex } from './oracle.ts';

processPhrase(/^the cursors? client "([^"]+)" stores/);
processPhrase(/^the checksum client "([^"]+)" stores/);
processPhrase(/^client "([^"]+)" (?:reports|still reports|never presented|sent no|has neither row "[^"]+" nor row "[^"]+"$)/);
processPhrase(/^querying the table list on client "([^"]+)"/);

/** The cursor the client presented for `scopeId` in its last pull request (null when it presented none). */
async function lastPresented(world: SyncWorld, name: string, scopeId: string): Promise<string | null> {
  const pulls = await clientExchanges(world, name, 'pull');
  const last = pulls[pulls.length - 1];
  if (last === undefined) throw new Error(`client "${name}" sent no pull request`);
  const cursor = ((requestOf(last).scopes as Obj | undefined)?.[scopeId] as Obj | undefined)?.cursor;
  return typeof cursor === 'string' ? cursor : null;
}

async function assertCursorUnchanged(world: SyncWorld, name: string, scopeId: string): Promise<void> {
  const scope = await scopeState(world, name, scopeId);
  world.assert.ok(scope !== undefined, `client "${name}" still has scope ${scopeId}`);
  const presented = await lastPresented(world, name, scopeId);
  world.assert.equal(scope.cursor, presented, `client "${name}" still stores for ${scopeId} the cursor it presented in its last pull`);
  const before = integrity(world).scopesBefore.get(name)?.find((s) => s.scopeId === scopeId);
  if (before !== undefined) world.assert.equal(scope.cursor, before.cursor, `the cursor of ${scopeId} is the one held before the tampered answer`);
}

Then('the cursor client {string} stores for scope {string} is unchanged', async function (this: SyncWorld, name: string, scopeId: string) {
  await assertCursorUnchanged(this, name, scopeId);
});

Then('the cursors client {string} stores for scopes {string} and {string} are unchanged', async function (this: SyncWorld, name: string, first: string, second: string) {
  await assertCursorUnchanged(this, name, first);
  await assertCursorUnchanged(this, name, second);
});

Then(/^client "([^"]+)" has neither row "([^"]+)" nor row "([^"]+)"$/, async function (this: SyncWorld, name: string, first: string, second: string) {
  const client = await this.process(name);
  for (const table of this.model.tables.values()) {
    const key = table.columns.find((c) => c.key)?.name ?? 'id';
    const rows = (await client.call<{ rows: Obj[] }>('query', { sql: `SELECT CAST("${key}" AS TEXT) AS id FROM "${table.name}" WHERE CAST("${key}" AS TEXT) IN (?, ?)`, params: [first, second] })).rows;
    this.assert.equal(rows, [], `client "${name}" holds rows of ${table.name} it should not`);
  }
});

/** The final cursor of a rebuild: the one the tampered attempt carried, else every final cursor the client was sent. */
async function finalCursors(world: SyncWorld, name: string, scopeId: string): Promise<string[]> {
  const noted = integrity(world).claims.get('final_scope_cursor');
  if (noted !== undefined) return [noted];
  const out: string[] = [];
  for (const e of await clientExchanges(world, name, 'rebuild')) {
    const answer = deliveredOf(e);
    const body = answer?.status === 200 ? (parsePlain(answer.body) as Obj) : undefined;
    if (body?.scope === scopeId && typeof body.final_scope_cursor === 'string') out.push(body.final_scope_cursor);
  }
  return out;
}

Then(/^client "([^"]+)" reports no final rebuild cursor installed (?:from that attempt )?for scope "([^"]+)"$/, async function (this: SyncWorld, name: string, scopeId: string) {
  const scope = await scopeState(this, name, scopeId);
  const finals = await finalCursors(this, name, scopeId);
  this.assert.ok(finals.length > 0, `client "${name}" was sent a final rebuild page for ${scopeId}`);
  this.assert.ok(scope === undefined || scope.cursor === null || !finals.includes(scope.cursor), `client "${name}" installed the final cursor of the refused attempt for ${scopeId}`);
});

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

Then(/^client "([^"]+)" still reports the mutation for row "([^"]+)" as not accepted$/, async function (this: SyncWorld, name: string, key: string) {
  const client = await this.process(name);
  const { mutations } = await client.call<{ mutations: Obj[] }>('inspectMutations');
  const mine = mutations.filter((m) => String(m.recordId ?? m.pk) === key);
  this.assert.ok(mine.length > 0, `client "${name}" still keeps the mutation for row ${key}: ${JSON.stringify(mutations)}`);
  for (const m of mine) this.assert.notEqual(m.status, 'accepted', `the mutation for row ${key} is reconciled as accepted`);
});

/** The JSON body a client was given in an exchange, when it was a 200. */
function given(e: Exchange): Obj | undefined {
  const answer = deliveredOf(e);
  return answer?.status === 200 ? (parsePlain(answer.body) as Obj | undefined) : undefined;
}

Then(/^client "([^"]+)" reports for scope "([^"]+)" a local checksum equal to the checksum in the terminal pull response$/, async function (this: SyncWorld, name: string, scopeId: string) {
  const pulls = await clientExchanges(this, name, 'pull');
  const terminal = [...pulls].reverse().map(given).find((body) => body?.has_more === false);
  this.assert.ok(terminal !== undefined, `client "${name}" received a terminal pull page`);
  const claimed = ((terminal.checksums as Record<string, Obj> | undefined)?.[scopeId] as Obj | undefined)?.digest;
  const scope = await scopeState(this, name, scopeId);
  this.assert.ok(typeof claimed === 'string', `the terminal pull page has a checksum for ${scopeId}`);
  this.assert.equal(scope?.localChecksum, claimed, `local checksum of ${scopeId} reported by client "${name}"`);
  this.assert.equal(scope?.checksum, claimed, `installed checksum of ${scopeId} reported by client "${name}"`);
  const state = integrity(this);
  state.claims.set('terminal', String(claimed));
  state.claims.set('terminal-scope', scopeId);
  state.claims.set('terminal-client', name);
});

Then('that checksum equals the scope digest the harness codec computes over the rows the server sent', async function (this: SyncWorld) {
  const state = integrity(this);
  const [claimed, scopeId, name] = ['terminal', 'terminal-scope', 'terminal-client'].map((k) => state.claims.get(k));
  if (claimed === undefined || scopeId === undefined || name === undefined) throw new Error('an earlier step must read the terminal checksum of a scope');
  const exchanges = [...(await clientExchanges(this, name, 'pull')), ...(await clientExchanges(this, name, 'rebuild'))].sort((a, b) => a.seq - b.seq);
  // Replays, in order, what the server sent for the scope: the rows a client holds at the end.
  const rows = new Map<string, { table: string; row: unknown; serverVersion: string }>();
  let hash = '';
  for (const e of exchanges) {
    const body = given(e);
    if (body === undefined) continue;
    hash = String((requestOf(e).schema as Obj).hash);
    const keyOf = (m: Obj) => `${String(m.table)}\u0000${JSON.stringify(m.pk)}`;
    if (e.endpoint === 'rebuild' && body.scope === scopeId) {
      if (requestOf(e).cursor === null) rows.clear();
      for (const r of (body.records ?? []) as Obj[]) rows.set(keyOf(r), { table: String(r.table), row: r.row, serverVersion: String(r.server_version) });
    }
    if (e.endpoint === 'pull') {
      for (const c of ((body.changes ?? []) as Obj[]).filter((x) => x.scope === scopeId)) {
        if (c.op === 'upsert') rows.set(keyOf(c), { table: String(c.table), row: c.row, serverVersion: String(c.server_version) });
        else rows.delete(keyOf(c));
      }
    }
  }
  const manifest = manifestsSeen((await this.proxy()).exchanges).get(hash) as Manifest;
  this.assert.ok(rows.size > 0, `the server sent rows of ${scopeId}`);
  this.assert.equal(scopeDigestHex(manifest, scopeId, [...rows.values()]), claimed, `the codec's scope digest of ${scopeId} over the ${rows.size} rows sent`);
});

Then(/^client "([^"]+)" reports no installed schema$/, async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  const result = await client.call<{ schema: unknown }>('inspectScopes');
  this.assert.equal(result.schema ?? null, null, `client "${name}" reports an installed schema`);
});

Then(/^querying the table list on client "([^"]+)" shows no synced table "([^"]+)"$/, async function (this: SyncWorld, name: string, table: string) {
  const client = await this.process(name);
  const { rows } = await client.call<{ rows: Obj[] }>('query', { sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND lower(name) = lower(?)", params: [table] });
  this.assert.equal(rows, [], `client "${name}" created table ${table}`);
});

Then(/^client "([^"]+)" sent no pull or rebuild request$/, async function (this: SyncWorld, name: string) {
  const pulls = await clientExchanges(this, name, 'pull');
  const rebuilds = await clientExchanges(this, name, 'rebuild');
  const connects = await clientExchanges(this, name, 'connect');
  this.assert.ok(connects.length > 0, `client "${name}" connected at all`);
  this.assert.equal(pulls.length + rebuilds.length, 0, `pull and rebuild requests of client "${name}"`);
});
