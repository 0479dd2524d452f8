/**
 * Steps of SYNC-LOCAL-003 Durable Cursor Invariant: the cursors and checksums
 * a client under test keeps across kills around its pull apply commit, and
 * after pages that fail validation, compared with what it reported before
 * and with the page it was given.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { armPullEdit, flipDigest, heldCopies, lastPullPage, presentedFrom, recordedScopes, recordScopes, scopesNow } from '../support/durable-cursors/state.ts';
import { clientIdOf } from '../support/exchanges.ts';
import { scopeState } from '../support/integrity/context.ts';
import { restartAfterCrash } from '../support/mutations/holds.ts';
import { queueState } from '../support/mutations/state.ts';
import { provenanceOf } from '../support/scope-repair/provenance.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the harness has recorded the cursors and checksums client "([^"]+)" inspects/);
processPhrase(/^the harness restarts client "([^"]+)" with the network blocked$/);
// Only this feature's own phrasings: "client X holds a valid cursor …" elsewhere names a harness (wire) client.
processPhrase(/^client "([^"]+)" (?:holds neither "|holds "[^"]+" (?:with provenance|and "[^"]+" exactly once each)|inspection shows )/);
processPhrase(/^the first pull of client "([^"]+)" after the restart/);

Given('the harness has recorded the cursors and checksums client {string} inspects as {string}', async function (this: SyncWorld, name: string, label: string) {
  await recordScopes(this, name, label);
});

When('the harness restarts client {string} with the network blocked', async function (this: SyncWorld, name: string) {
  const proxy = await this.proxy();
  const clientId = await clientIdOf(this, name);
  // Nothing the restarted client sends reaches the server: what it reports afterwards is what it kept on disk.
  proxy.inject({ times: Number.POSITIVE_INFINITY, when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === clientId, fault: { kind: 'status', status: 503, retryAfter: '60' } });
  await restartAfterCrash(this, name);
});

Given('the proxy alters one character of the {string} digest of the change for {string} in the next pull response to client {string}', async function (this: SyncWorld, member: string, key: string, name: string) {
  if (member !== 'row_checksum') throw new Error(`a change carries its digest in "row_checksum", not "${member}"`);
  await armPullEdit(this, name, `one hex digit of the row_checksum of ${key} flipped`, (json) => {
    const change = ((json.changes ?? []) as Record<string, unknown>[]).find((c) => String(keyValue(c.pk)) === key);
    return change !== undefined && flipDigest(change.row_checksum);
  });
});

Given(/^the proxy alters one character of the "checksums\.([^"]+)" digest in the next terminal pull response to client "([^"]+)"$/, async function (this: SyncWorld, scope: string, name: string) {
  await armPullEdit(this, name, `one hex digit of the terminal checksum of ${scope} flipped`, (json) => json.has_more === false && flipDigest((json.checksums as Record<string, unknown> | undefined)?.[scope]));
});

Given('the proxy blocks rebuild requests from client {string}', async function (this: SyncWorld, name: string) {
  await this.readyServer();
  const proxy = await this.proxy();
  const clientId = await clientIdOf(this, name);
  proxy.inject({ endpoint: 'rebuild', times: Number.POSITIVE_INFINITY, when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === clientId, fault: { kind: 'status', status: 503, retryAfter: '60' } });
});

async function assertNeither(world: SyncWorld, name: string, first: string, second: string): Promise<void> {
  world.assert.equal({ [first]: await heldCopies(world, name, first), [second]: await heldCopies(world, name, second) }, { [first]: 0, [second]: 0 }, `rows client "${name}" holds`);
}

async function assertRecorded(world: SyncWorld, name: string, label: string, parts: ('cursor' | 'checksum')[], only?: string[]): Promise<void> {
  const before = recordedScopes(world, label);
  const scopes = only ?? [...before.keys()];
  const now = await scopesNow(world, name, scopes);
  const pick = (p: { cursor: string | null; checksum: string | null } | undefined) => (p === undefined ? undefined : Object.fromEntries(parts.map((part) => [part, p[part]])));
  world.assert.equal(Object.fromEntries(scopes.map((s) => [s, pick(now[s])])), Object.fromEntries(scopes.map((s) => [s, pick(before.get(s))])), `the ${parts.join(' and ')} client "${name}" reports against those recorded as "${label}"`);
}

Then('client {string} holds neither {string} nor {string}, and the cursors and checksums recorded as {string}', async function (this: SyncWorld, name: string, first: string, second: string, label: string) {
  await assertNeither(this, name, first, second);
  await assertRecorded(this, name, label, ['cursor', 'checksum']);
});

Then('client {string} holds neither {string} nor {string}', async function (this: SyncWorld, name: string, first: string, second: string) {
  await assertNeither(this, name, first, second);
});

Then(
  'client {string} holds {string} with provenance {string} and {string} with provenance {string}, and for both scopes the cursors and checksums of that page',
  async function (this: SyncWorld, name: string, first: string, firstScope: string, second: string, secondScope: string) {
    this.assert.equal({ [first]: await heldCopies(this, name, first), [second]: await heldCopies(this, name, second) }, { [first]: 1, [second]: 1 }, `rows client "${name}" holds`);
    const edges = (await provenanceOf(this, name)).map((e) => `${e.scopeId} ${e.recordId}`);
    for (const edge of [`${firstScope} ${first}`, `${secondScope} ${second}`]) this.assert.ok(edges.includes(edge), `client "${name}" holds the provenance edge ${edge}: ${edges.join(', ')}`);
    const page = await lastPullPage(this, name);
    this.assert.equal(page.has_more, false, 'the page the client applied is terminal');
    const scopes = [firstScope, secondScope];
    const expected = Object.fromEntries(scopes.map((s) => [s, { cursor: page.scope_cursors?.[s], checksum: page.checksums?.[s]?.digest }]));
    this.assert.equal(await scopesNow(this, name, scopes), expected, `the cursors and checksums client "${name}" reports against those of the page it applied`);
  },
);

Then('the first pull of client {string} after the restart presents the cursors recorded as {string}', async function (this: SyncWorld, name: string, label: string) {
  const mark = queueState(this).restartMarks.get(name);
  if (mark === undefined) throw new Error(`client "${name}" was not restarted in this scenario`);
  const pulls = await presentedFrom(this, name, mark);
  this.assert.ok(pulls.length > 0, `client "${name}" pulled after its restart`);
  const before = recordedScopes(this, label);
  this.assert.equal(pulls[0], Object.fromEntries([...before].filter(([, p]) => p.cursor !== null).map(([scope, p]) => [scope, p.cursor])), `the cursors of the first pull of client "${name}" after the restart`);
});

Then('client {string} holds {string} and {string} exactly once each', async function (this: SyncWorld, name: string, first: string, second: string) {
  this.assert.equal({ [first]: await heldCopies(this, name, first), [second]: await heldCopies(this, name, second) }, { [first]: 1, [second]: 1 }, `rows client "${name}" holds`);
});

Then('client {string} inspection shows the cursors and checksums recorded as {string}', async function (this: SyncWorld, name: string, label: string) {
  await assertRecorded(this, name, label, ['cursor', 'checksum']);
});

Then('client {string} inspection shows the cursors recorded as {string} for {string} and {string}', async function (this: SyncWorld, name: string, label: string, first: string, second: string) {
  await assertRecorded(this, name, label, ['cursor'], [first, second]);
});

Then('client {string} inspection shows for {string} the cursor and checksum that page issued, with {string} present', async function (this: SyncWorld, name: string, scope: string, key: string) {
  const page = await lastPullPage(this, name);
  this.assert.equal(page.has_more, false, 'the page is terminal');
  const state = await scopeState(this, name, scope);
  this.assert.equal({ cursor: state?.cursor, checksum: state?.checksum, rebuildRequired: state?.rebuildRequired }, { cursor: page.scope_cursors?.[scope], checksum: page.checksums?.[scope]?.digest, rebuildRequired: false }, `scope ${scope} as client "${name}" reports it`);
  this.assert.equal(await heldCopies(this, name, key), 1, `client "${name}" holds ${key}`);
});

Then('client {string} inspection shows for {string} no cursor installed from that page and the scope marked for rebuild', async function (this: SyncWorld, name: string, scope: string) {
  const page = await lastPullPage(this, name);
  const issued = page.scope_cursors?.[scope];
  this.assert.ok(typeof issued === 'string', `the page issued a cursor for ${scope}`);
  const state = await scopeState(this, name, scope);
  this.assert.ok(state !== undefined, `client "${name}" reports ${scope}`);
  this.assert.notEqual(state.cursor, issued, `client "${name}" installed the cursor the page issued for ${scope}`);
  this.assert.equal(state.rebuildRequired, true, `client "${name}" marks ${scope} for rebuild`);
});

Then('client {string} inspection shows for {string} no checksum taken from that page', async function (this: SyncWorld, name: string, scope: string) {
  const page = await lastPullPage(this, name);
  const given = page.checksums?.[scope]?.digest;
  this.assert.ok(typeof given === 'string', `the page listed a checksum for ${scope}`);
  const state = await scopeState(this, name, scope);
  this.assert.notEqual(state?.checksum, given, `client "${name}" installed the checksum the page gave for ${scope}`);
});
