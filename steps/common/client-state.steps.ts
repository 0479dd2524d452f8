/**
 * Shared steps (used by several requirements).
 * What the client under test reports about its own sync state: cursors,
 * checksums, rebuild flags, its installed schema, its state and held
 * mutations, and whether its durable state changed.
 */
import { type DataTable, Given, Then } from '@cucumber/cucumber';
import { compareBytes } from '../../harness/codec/index.ts';
import { mutationsOf, ofRow } from '../support/client-lifecycle/failures.ts';
import { statusOf } from '../support/client-lifecycle/observe.ts';
import { processPhrase } from '../support/client-mode.ts';
import { assertCursorUnchanged, given } from '../support/integrity/client-state.ts';
import { clientExchanges, integrity, scopeState } from '../support/integrity/context.ts';
import { type Manifest, manifestsSeen, type Obj, requestOf, scopeDigestHex } from '../support/integrity/oracle.ts';
import { arm, expectedClientId } from '../support/integrity/tampering.ts';
import { snapshots as cursorSnapshots, heldCursors } from '../support/opaque-tokens/cursor-authentication.ts';
import { storedVersion } from '../support/push-ledger/client-outcomes.ts';
import type { Reply } from '../support/reply.ts';
import type { Inspected } from '../support/schema-and-versions/client-schema.ts';
import { currentManifest } from '../support/schema-and-versions/manifests.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import { reportedScopes } from '../support/scopes/client-sync.ts';
import { exchangeSummaries } from '../support/scopes/exchanges.ts';
import { edgeText, provenanceOf } from '../support/scope-repair/provenance.ts';
import { assertNoMutation } from '../support/seeds/seeded-client.ts';
import { snapshotOf, snapshots, UNCHANGED } from '../support/wire-values/client-state.ts';
import { tableNamed } from '../support/wire-values/recorded.ts';
import { labelledVersion } from '../support/version-labels.ts';
import type { SyncWorld } from '../support/world.ts';
import { bodyOf, deliveredOf } from '../support/exchanges.ts';
import { inspectedCursors, lastIssued, lastRecordedCursors, recordCursors, recordedCursors } from '../support/scope-cursors/cursors.ts';
import { issuedCursor, thatPullResponse } from '../support/scope-cursors/that-pull-response.ts';

processPhrase(/^client "([^"]+)" has no rebuild pending$/);

processPhrase(/^client "([^"]+)" reports the mutations? for rows? /);

processPhrase(/^client "([^"]+)" still holds the mutation for row /);

Given('client {string} has no rebuild pending', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  const { scopes } = await client.call<{ scopes: { scopeId: string; rebuildRequired: boolean }[] }>('inspectScopes');
  this.assert.equal(
    scopes.filter((s) => s.rebuildRequired).map((s) => s.scopeId),
    [],
    `client "${name}" should start with every scope rebuilt`,
  );
});

Then(/^client "([^"]+)" is (?:still )?in state "([a-z_]+)"$/, async function (this: SyncWorld, name: string, state: string) {
  const status = await statusOf(await this.process(name));
  this.assert.equal(status.status, state, `state of client "${name}"`);
});

Then(/^client "([^"]+)" reports the mutation for row "([^"]+)" as accepted( exactly once)?$/, async function (this: SyncWorld, name: string, row: string, once: string | undefined) {
  const found = ofRow(await mutationsOf(this, name), row);
  if (once) this.assert.equal(found.length, 1, `client "${name}" reports ${found.length} mutations for row ${row}`);
  this.assert.ok(found.length > 0, `client "${name}" reports no mutation for row ${row}`);
  this.assert.equal(
    found.map((m) => m.status),
    found.map(() => 'accepted'),
    `status of the mutations of row ${row}`,
  );
});

Then('client {string} still holds the mutation for row {string} and it is inspectable', async function (this: SyncWorld, name: string, row: string) {
  const found = ofRow(await mutationsOf(this, name), row);
  this.assert.equal(found.length, 1, `client "${name}" should keep exactly one mutation for row ${row}`);
  this.assert.ok(['pending', 'sealed'].includes(found[0]?.status ?? ''), `the mutation of row ${row} is ${found[0]?.status}, not still pending or sealed`);
});

processPhrase(/^the cursors? client "([^"]+)" stores/);

Then('the cursor client {string} stores for scope {string} is unchanged', async function (this: SyncWorld, name: string, scopeId: string) {
  await assertCursorUnchanged(this, name, scopeId);
});

/** The final cursor of a rebuild: the one the tampered attempt carried, else every final cursor the client was sent. */
async function finalCursors(world: SyncWorld, name: string, scopeId: string): Promise<string[]> {
  const noted = integrity(world).claims.get('final_scope_cursor');
  if (noted !== undefined) return [noted];
  const out: string[] = [];
  for (const e of await clientExchanges(world, name, 'rebuild')) {
    const answer = deliveredOf(e);
    const body = answer?.status === 200 ? (bodyOf(answer.body) as Obj) : undefined;
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

processPhrase(/^client "([^"]+)" has rebuild required for scope/);

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

/**
 * Nothing moved for the holder: the refused answer issued no cursor, the
 * holder still holds exactly what it held before, and the server still
 * accepts those cursors (a follow-up pull serves every one of them, none is
 * sent to rebuild). The follow-up pull is not the scenario's "last response".
 */
Then('no scope cursor of client {string} advanced', async function (this: SyncWorld, name: string) {
  if (this.isProcess(name)) return await assertCursorsAsRecorded(this, name);
  const reply = this.lastReply();
  this.assert.ok(reply.status !== 200, `the request was refused, not answered 200: ${reply.text.slice(0, 400)}`);
  for (const member of ['scope_cursors', 'final_scope_cursor', 'scope_cursor_updates']) this.assert.ok(reply.json?.[member] === undefined, `the refused answer carries no "${member}": ${reply.text.slice(0, 400)}`);
  const before = cursorSnapshots.get(this)?.get(name);
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

processPhrase(/^client "([^"]+)" reports the current manifest as its installed schema$/);

Then('client {string} reports the current manifest as its installed schema', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  const manifest = await currentManifest(this);
  const inspected = await client.call<Inspected>('inspectScopes');
  this.assert.equal(inspected.schema, { version: manifest.schema_version, hash: manifest.schema_hash }, `schema installed by client "${name}"`);
});

Given('the harness records the cursors client {string} inspects as {string}', function (this: SyncWorld, name: string, label: string) {
  if (!this.hasWire(name)) throw new Error(`client "${name}" is not a harness protocol client: its cursors cannot be read here`);
  generationsState(this).cursors.set(label, new Map(this.wire(name).cursors));
});

processPhrase(/^client "([^"]+)" reports /);

Then('client {string} reports scope {string} as requiring rebuild, with no cursor and no checksum installed', async function (this: SyncWorld, name: string, scope: string) {
  const state = await scopeState(this, name, scope);
  this.assert.ok(state !== undefined, `client "${name}" reports scope ${scope}`);
  this.assert.equal({ rebuildRequired: state.rebuildRequired, cursor: state.cursor, checksum: state.checksum }, { rebuildRequired: true, cursor: null, checksum: null }, `scope ${scope} as client "${name}" reports it`);
});

Then('client {string} reports scope {string} as not requiring rebuild, with the final rebuild cursor installed', async function (this: SyncWorld, name: string, scope: string) {
  const row = (await reportedScopes(this, name)).find((s) => s.scopeId === scope);
  this.assert.ok(row !== undefined, `client "${name}" reports no scope ${scope}`);
  this.assert.equal(row.rebuildRequired, false, `client "${name}" still requires a rebuild of ${scope}`);
  const exchanges = exchangeSummaries(await this.proxy(), (await this.process(name)).clientId);
  const final = [...exchanges].reverse().find((e) => e.endpoint === 'rebuild' && e.status === 200 && e.request?.scope === scope && e.response?.has_more === false);
  this.assert.ok(typeof final?.response?.final_scope_cursor === 'string', `client "${name}" completed no rebuild of ${scope}`);
  const finalCursor = final.response.final_scope_cursor as string;
  // Installed means presented: the next pull carries exactly the final cursor, and the client now holds the newest cursor it was given.
  const nextPull = exchanges.find((e) => e.seq > final.seq && e.endpoint === 'pull');
  if (nextPull) this.assert.equal(nextPull.request?.scopes?.[scope]?.cursor, finalCursor, `the pull after the rebuild of ${scope} presented another cursor`);
  let newest = finalCursor;
  for (const e of exchanges) if (e.seq > final.seq && e.endpoint === 'pull' && e.status === 200 && typeof e.response?.scope_cursors?.[scope] === 'string') newest = e.response.scope_cursors[scope];
  this.assert.equal(row.cursor, newest, `cursor client "${name}" holds for ${scope}`);
});

Then('client {string} inspection shows no mutation', async function (this: SyncWorld, name: string) {
  await assertNoMutation(this, name);
});

processPhrase(/^client "([^"]+)" reports state /);

Then('client {string} reports state {string} with a non-retryable failure of operation {string}', async function (this: SyncWorld, name: string, state: string, operation: string) {
  const status = await (await this.process(name)).call<{ status: string; failure?: { operation: string; retryable: boolean } }>('getStatus');
  this.assert.equal(status.status, state, `the state of client "${name}"`);
  this.assert.equal({ operation: status.failure?.operation, retryable: status.failure?.retryable }, { operation, retryable: false }, `the failure client "${name}" reports`);
});

processPhrase(UNCHANGED);

Then(UNCHANGED, async function (this: SyncWorld, name: string) {
  const before = snapshots.get(this)?.get(name);
  if (before === undefined) throw new Error(`no picture of client "${name}" was taken before the scenario's first action`);
  const after = await snapshotOf(this, name);
  const changed = Object.keys({ ...before.sections, ...after.sections }).filter((section) => before.sections[section] !== after.sections[section]);
  this.assert.equal(changed, [], `durable state of client "${name}" changed in: ${changed.join(', ')}`);
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

processPhrase(/^client "([^"]+)" stores(?:,| no server_version)/);

Then('client {string} stores, for row {string} of table {string}, the server_version {string}', async function (this: SyncWorld, name: string, pk: string, table: string, label: string) {
  this.assert.equal(await storedVersion(this, name, table, pk), labelledVersion(this, label), `the server_version client "${name}" stores for ${table} ${pk} (${label})`);
});

Then('client {string} stores no server_version for row {string} of table {string}', async function (this: SyncWorld, name: string, pk: string, table: string) {
  this.assert.equal(await storedVersion(this, name, table, pk), undefined, `the server_version client "${name}" stores for ${table} ${pk}`);
});

processPhrase(/^client "([^"]+)" inspection shows /);

Then('client {string} inspection shows no mutation record', async function (this: SyncWorld, name: string) {
  await assertNoMutation(this, name);
});

Then('client {string} inspection shows exactly these provenance edges:', async function (this: SyncWorld, name: string, table: DataTable) {
  const expected: string[] = [];
  for (const row of table.hashes()) expected.push(edgeText(row.scope ?? '', (await tableNamed(this, row.table ?? '')).table_id, row.pk ?? ''));
  const actual = (await provenanceOf(this, name)).map((edge) => edgeText(edge.scopeId, edge.table, edge.recordId));
  this.assert.equal(actual.sort(), expected.sort(), `provenance edges client "${name}" reports`);
});

processPhrase(/^the harness has recorded the cursors client "([^"]+)" inspects as "[^"]+"$/);

/** The cursors a client holds now (a client process: what it inspects), kept under a label for later comparison. */
Given('the harness has recorded the cursors client {string} inspects as {string}', async function (this: SyncWorld, name: string, label: string) {
  await recordCursors(this, name, label);
});

processPhrase(/^the cursor client "([^"]+)" inspects for scope "[^"]+" equals the "[^"]+" one$/);

Then('the cursor client {string} inspects for scope {string} equals the {string} one', async function (this: SyncWorld, name: string, scope: string, label: string) {
  const old = recordedCursors(this, label).get(scope);
  this.assert.ok(typeof old === 'string', `the cursors recorded as "${label}" hold none for ${scope}`);
  this.assert.equal((await inspectedCursors(this, name)).get(scope), old, `the cursor client "${name}" inspects for ${scope} against the "${label}" one`);
});

processPhrase(/^for every scope, the cursor client "([^"]+)" inspects equals the last cursor the server issued to it for that scope$/);

// "Issued to it" follows every answer delivered to the client in log order (connect, rebuild, pull; a scope sent to rebuild issues null),
// and every scope the client inspects must end on a cursor the server actually issued.
Then('for every scope, the cursor client {string} inspects equals the last cursor the server issued to it for that scope', async function (this: SyncWorld, name: string) {
  const held = await inspectedCursors(this, name);
  const issued = await lastIssued(this, name);
  this.assert.ok(held.size > 0, `client "${name}" inspects some scope`);
  const scopes = [...held.keys()].sort();
  this.assert.equal(scopes.filter((scope) => typeof issued.get(scope) !== 'string'), [], `scopes client "${name}" inspects for which the server's last word was no cursor: ${JSON.stringify([...issued])}`);
  this.assert.equal(Object.fromEntries(scopes.map((scope) => [scope, held.get(scope)])), Object.fromEntries(scopes.map((scope) => [scope, issued.get(scope) ?? null])), `cursors client "${name}" inspects against the last ones issued to it`);
});

processPhrase(/^the cursor client "([^"]+)" inspects for scope "[^"]+" equals the cursor issued for "[^"]+" in that pull response$/);

Then('the cursor client {string} inspects for scope {string} equals the cursor issued for {string} in that pull response', async function (this: SyncWorld, name: string, scope: string, same: string) {
  if (same !== scope) throw new Error(`the cursor of ${scope} is compared with the one issued for ${scope}, not ${same}`);
  const issued = issuedCursor(this, await thatPullResponse(this, name), scope);
  const held = await inspectedCursors(this, name);
  this.assert.ok(held.has(scope), `client "${name}" inspects scope ${scope}: ${JSON.stringify([...held])}`);
  this.assert.equal(held.get(scope), issued, `the cursor client "${name}" inspects for ${scope}, against the one issued for it in that pull response`);
});

/** A client process holds exactly the cursors recorded for it last: nothing advanced, nothing was dropped. */
async function assertCursorsAsRecorded(world: SyncWorld, name: string): Promise<void> {
  const { label, cursors } = lastRecordedCursors(world, name);
  const now = await inspectedCursors(world, name);
  world.assert.equal(Object.fromEntries([...now].sort()), Object.fromEntries([...cursors].sort()), `cursors client "${name}" inspects against those recorded as "${label}"`);
}
