/**
 * Shared steps (used by several requirements).
 * The harness speaking the protocol itself as a named client: connect, pull,
 * push and rebuild requests, raw and deliberately edited requests, and the
 * tokens it presents.
 */
import { randomUUID } from 'node:crypto';
import { type DataTable, Given, When } from '@cucumber/cucumber';
import { alterToken } from '../support/opaque-tokens/alteration.ts';
import { pullPresenting, pullUntilHeld, snapshotCursors } from '../support/opaque-tokens/cursor-authentication.ts';
import { placementFor, rowValues } from '../support/opaque-tokens/rows.ts';
import { state } from '../support/opaque-tokens/server-versions.ts';
import { processPulls } from '../support/mutations/process-pull.ts';
import { connectedAndRebuilt } from '../support/protocol-client.ts';
import { mutationsFromTable } from '../support/push-ledger/mutation-table.ts';
import { readReply } from '../support/reply.ts';
import { pullPresenting as pullPresentingLabelled } from '../support/scope-generations/invalidation.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import { readReceipt } from '../support/seeds/artifacts.ts';
import { connectWithReceipts } from '../support/seeds/receipt-conversion.ts';
import type { Obj } from '../support/seeds/seeded-sync.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { type RequestEndpoint, sendEdited, stepValue } from '../support/wire-values/requests.ts';
import { SyncWorld } from '../support/world.ts';

Given('client {string} of user {string} has connected and rebuilt every assigned scope', async function (this: SyncWorld, name: string, user: string) {
  await connectedAndRebuilt(this, name, user);
});

Given('client {string} of user {string} has connected', async function (this: SyncWorld, name: string, user: string) {
  await this.readyServer();
  const client = this.wire(name, user);
  if (client.userId !== user) throw new Error(`client "${name}" already belongs to user ${client.userId}`);
  const reply = await client.connect();
  if (reply.status !== 200) throw new Error(`client "${name}" could not connect: ${reply.status} ${reply.text.slice(0, 300)}`);
});

When('client {string} of user {string} connects as a fresh client', async function (this: SyncWorld, name: string, user: string) {
  await this.readyServer();
  await this.newWire(name, user).connect();
});

// The answer is left to the Then steps: a connect refused (426, 400) is what some scenarios check.
When(/^the harness client "([^"]+)" connects presenting its installed schema( with "schema_reset" true)?$/, async function (this: SyncWorld, name: string, reset: string | null) {
  // Cucumber passes an unmatched optional group as null.
  await this.wire(name).connect(reset ? { schema_reset: true } : undefined);
});

When('client {string} connects', async function (this: SyncWorld, name: string) {
  await this.wire(name).connect();
});

When('client {string} pulls', async function (this: SyncWorld, name: string) {
  // A client under test pulls by syncing; its pull answers are recorded like the harness's own.
  if (this.isProcess(name)) await processPulls(this, name);
  else await this.wire(name).pull();
});

Given('client {string} has pulled', async function (this: SyncWorld, name: string) {
  const pages = await this.wire(name).pullAll();
  const last = pages[pages.length - 1];
  if (last?.status !== 200) throw new Error(`client "${name}" could not pull: ${last?.status} ${last?.text}`);
});

When('client {string} pushes a batch with:', async function (this: SyncWorld, name: string, table: DataTable) {
  const client = this.wire(name);
  await client.push(mutationsFromTable(this, client, table));
});

When('client {string} requests a rebuild of scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  await this.wire(name).rebuildAll(scope);
});

When('client {string} requests a rebuild of scope {string} and fetches every page', async function (this: SyncWorld, name: string, scope: string) {
  const run = await this.wire(name).rebuildAll(scope);
  const last = run.pages[run.pages.length - 1];
  this.assert.equal(last?.status, 200, `a rebuild page of ${scope} was answered ${last?.status}: ${last?.text}`);
});

When('the harness sends a raw connect request as user {string}:', async function (this: SyncWorld, user: string, body: string) {
  await this.readyServer();
  const probe = this.newWire(`raw-connect-${user}`, user);
  // Authored by the feature, possibly wrong on purpose: its request side is not held against the server.
  await probe.post('/sync/connect', undefined, { raw: body.trim(), endpoint: 'connect', invalid: true });
});

When('the harness requests GET {string}', async function (this: SyncWorld, path: string) {
  await this.readyServer();
  const url = `${(await this.proxy()).url}${path}`;
  const response = await fetch(url, { signal: AbortSignal.timeout(this.deadlineMs) });
  this.recordReply(await readReply(path.split('/').pop() ?? path, response, ''));
});

Given('client {string} has pulled and holds cursors for scopes {string} and {string}', async function (this: SyncWorld, name: string, first: string, second: string) {
  await pullUntilHeld(this, name, [first, second]);
  const cursors = this.wire(name).cursors;
  this.assert.ok(typeof cursors.get(first) === 'string' && typeof cursors.get(second) === 'string', `client "${name}" holds cursors for ${first} and ${second}: ${JSON.stringify(Object.fromEntries(cursors))}`);
  snapshotCursors(this, name);
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

/** The table whose rows land in the user's own scope (the scenarios' "tasks"). */
function ownTable(world: SyncWorld, user: string): { table: string; values: Record<string, string> } {
  try {
    return placementFor(world, `user:${user}`);
  } catch {
    const first = [...world.model.tables.keys()][0];
    if (first === undefined) throw new Error('no table is registered in this scenario');
    return { table: first, values: {} };
  }
}

Given('client {string} has pushed an insert of row {string} and holds its server version', async function (this: SyncWorld, name: string, id: string) {
  await this.readyServer();
  const client = this.wire(name);
  const { table, values } = ownTable(this, client.userId);
  const reply = await client.push([client.mutation({ op: 'insert', table, pk: id, columns: rowValues(this, table, values, { title: id }) })]);
  this.assert.equal(reply.status, 200, `the insert of ${id} was answered ${reply.status}: ${reply.text}`);
  const outcome = reply.json.accepted?.[0];
  this.assert.ok(outcome?.status === 'applied' && typeof outcome.server_version === 'string', `the insert of ${id} was applied with a version: ${reply.text} (sent ${reply.requestText})`);
  state(this).held.set(id, { table, version: outcome.server_version });
});

When('client {string} pulls presenting the {string} cursors', async function (this: SyncWorld, name: string, label: string) {
  await pullPresentingLabelled(this, name, label);
});

const rebuildKey = (name: string, scope: string) => `${name}/${scope}`;

Given('client {string} has started a rebuild of scope {string} with limit {int} and holds its continuation', async function (this: SyncWorld, name: string, scope: string, limit: number) {
  const rebuildId = randomUUID();
  const reply = await this.wire(name).rebuildPage(scope, rebuildId, null, limit);
  if (reply.status !== 200) throw new Error(`client "${name}" could not start a rebuild of ${scope}: ${reply.status} ${reply.text.slice(0, 500)}`);
  if (reply.json.has_more !== true || typeof reply.json.cursor !== 'string') throw new Error(`the first rebuild page of ${scope} with limit ${limit} is already final: the scope holds too few rows to leave a continuation`);
  generationsState(this).openRebuilds.set(rebuildKey(name, scope), { rebuildId, cursor: reply.json.cursor, limit });
});

When('client {string} continues its rebuild of scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const open = generationsState(this).openRebuilds.get(rebuildKey(name, scope));
  if (open === undefined) throw new Error(`client "${name}" holds no open rebuild of scope "${scope}"`);
  await this.wire(name).rebuildPage(scope, open.rebuildId, open.cursor, open.limit);
});

When('client {string} rebuilds scope {string} to its final page', async function (this: SyncWorld, name: string, scope: string) {
  const run = await this.wire(name).rebuildAll(scope);
  generationsState(this).lastRebuild = { scope, run };
});

When('client {string} of user {string} connects', async function (this: SyncWorld, name: string, user: string) {
  await this.readyServer();
  await this.newWire(name, user).connect();
});

When('the harness client {string} of user {string} connects for the first time presenting the schema of {string} and its receipts', async function (this: SyncWorld, name: string, user: string, file: string) {
  await connectWithReceipts(this, name, user, file);
});

Given('the harness client {string} of user {string} has connected and rebuilt every assigned scope', async function (this: SyncWorld, name: string, user: string) {
  await connectedAndRebuilt(this, name, user);
});

When('the harness client {string} pulls presenting that receipt as the cursor for {string}', async function (this: SyncWorld, name: string, scope: string) {
  const receipt = readReceipt(this, scope);
  const client = this.wire(name);
  if (!client.cursors.has(scope)) throw new Error(`client "${name}" is not assigned ${scope}`);
  const body = client.pullBody();
  (body.scopes as Obj)[scope] = { cursor: receipt };
  // A receipt where a cursor belongs is wrong on purpose: the proxy must not hold the request against the harness.
  await client.post('/sync/pull', body, { invalid: true, endpoint: 'pull' });
});

When(/^client "([^"]+)" sends its next (connect|push|pull|rebuild) request with "([^"]+)" set to (null|true|false|-?[0-9][^ ]*|"(?:[^"\\]|\\.)*"|\{.*\}|\[.*\]|[A-Z](?: [+-] [0-9]+)?)$/, async function (this: SyncWorld, name: string, endpoint: RequestEndpoint, pointer: string, value: string) {
  await sendEdited(this, name, endpoint, [{ pointer, value: stepValue(this, value) }]);
});

When(/^client "([^"]+)" sends its next rebuild request for scope "([^"]+)" with "([^"]+)" set to (null|true|false|-?[0-9][^ ]*|"(?:[^"\\]|\\.)*"|\{.*\}|\[.*\]|[A-Z](?: [+-] [0-9]+)?)$/, async function (this: SyncWorld, name: string, scope: string, pointer: string, value: string) {
  await sendEdited(this, name, 'rebuild', [{ pointer, value: stepValue(this, value) }], scope);
});

When('client {string} has pushed an update of product {string} setting {string} to {int}', async function (this: SyncWorld, name: string, id: string, column: string, value: number) {
  const writer = this.wire(name);
  const tableId = writer.tableId('products');
  const base = this.heldVersions.get(SyncWorld.rowKey(tableId, id));
  if (base === undefined) throw new Error(`client "${name}" holds no server version of product ${id}`);
  const reply = await writer.push([writer.mutation({ op: 'update', table: 'products', pk: id, columns: { [column]: value }, base_version: base })]);
  const accepted = (reply.json?.accepted ?? []) as unknown[];
  if (reply.status !== 200 || accepted.length !== 1) throw new Error(`the update of ${id} by client "${name}" was not accepted: ${reply.status} ${reply.text}`);
  await awaitCapture(this);
});

// Shared by SYNC-BOUND-006 and SYNC-BOUND-001: one request of each sync endpoint, the way an ordinary client makes it.
When('client {string} pushes a batch inserting task {string} owned by {string} with title {string}', async function (this: SyncWorld, name: string, id: string, owner: string, title: string) {
  const client = this.wire(name);
  await client.push([client.mutation({ op: 'insert', table: 'tasks', pk: id, columns: { owner_id: owner, title } })]);
});

When('client {string} requests the first rebuild page of {string}', async function (this: SyncWorld, name: string, scope: string) {
  await this.wire(name).rebuildPage(scope, randomUUID(), null);
});
