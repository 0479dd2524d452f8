/**
 * The harness speaking the protocol as a named client: connecting, pulling,
 * pushing and rebuilding with the state it keeps, plus raw requests. A
 * background step that brings a client to a known state drives the client
 * adapter process instead when the scenario uses that client as a process.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { readReply } from '../support/reply.ts';
import { type SyncWorld, SyncWorld as World } from '../support/world.ts';
import { cellValue } from './values.ts';

/** Brings client `name` of `user` to "connected, every assigned scope rebuilt", in whichever form the scenario uses it. */
export async function connectedAndRebuilt(world: SyncWorld, name: string, user: string): Promise<void> {
  world.clientUsers.set(name, user);
  if (world.isProcess(name)) {
    const result = await world.syncProcess(name);
    if ('error' in result) throw new Error(`client "${name}" could not sync: ${result.error.message}`);
    if (result.completion !== 'idle') throw new Error(`client "${name}" ended its first sync "${result.completion}" in state ${result.status}, not idle`);
    return;
  }
  await world.readyServer();
  await world.wire(name, user).connectAndRebuild();
}

Given('client {string} of user {string} has connected and rebuilt every assigned scope', async function (this: SyncWorld, name: string, user: string) {
  await connectedAndRebuilt(this, name, user);
});

When('client {string} of user {string} connects as a fresh client', async function (this: SyncWorld, name: string, user: string) {
  await this.readyServer();
  await this.newWire(name, user).connect();
});

When('client {string} connects', async function (this: SyncWorld, name: string) {
  await this.wire(name).connect();
});

When('client {string} pulls', async function (this: SyncWorld, name: string) {
  await this.wire(name).pull();
});

Given('client {string} has pulled', async function (this: SyncWorld, name: string) {
  const pages = await this.wire(name).pullAll();
  const last = pages[pages.length - 1];
  if (last?.status !== 200) throw new Error(`client "${name}" could not pull: ${last?.status} ${last?.text}`);
});

When('client {string} pushes a batch with:', async function (this: SyncWorld, name: string, table: DataTable) {
  const client = this.wire(name);
  const mutations = table.hashes().map((row) => {
    const { mutation_id, operation, table: tableName, pk, base_version, ...columns } = row;
    if (!operation || !tableName || pk === undefined) throw new Error('every mutation row needs operation, table and pk');
    const model = this.model.table(tableName);
    const key = this.model.keyColumn(tableName);
    const tableId = client.tableId(tableName);
    const pkValue = cellValue(key, pk);
    // "current" stands for the version the client holds for that row.
    let base = base_version;
    if (base === 'current') {
      base = this.heldVersions.get(World.rowKey(tableId, pkValue));
      if (base === undefined) throw new Error(`client "${name}" holds no server version for ${tableName} row ${pk}`);
    }
    const values: Record<string, unknown> = {};
    for (const [column, text] of Object.entries(columns)) if (text !== '') values[column] = cellValue(model.columns.find((c) => c.name === column), text);
    return client.mutation({
      op: operation as 'insert' | 'update' | 'delete',
      table: tableName,
      pk: pkValue,
      ...(operation === 'delete' ? {} : { columns: values }),
      ...(base === undefined || base === '' ? {} : { base_version: base }),
      ...(mutation_id ? { mutation_id } : {}),
    });
  });
  await client.push(mutations);
});

/** The outcome of `mutationId` in the last push response. */
function outcomeOf(world: SyncWorld, mutationId: string): Record<string, unknown> {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'push');
  if (!reply) throw new Error('no push response has been received in this scenario');
  world.assert.equal(reply.status, 200, `the push was answered ${reply.status}: ${reply.text}`);
  const outcomes = [...(reply.json.accepted ?? []), ...(reply.json.rejected ?? [])] as Record<string, unknown>[];
  const outcome = outcomes.find((o) => o.mutation_id === mutationId);
  world.assert.ok(outcome, `the push response has no outcome for mutation ${mutationId}: ${reply.text}`);
  return outcome;
}

Then('the push outcome of mutation {string} is {string}', function (this: SyncWorld, mutationId: string, status: string) {
  this.assert.equal(outcomeOf(this, mutationId).status, status, `outcome status of ${mutationId}`);
});

Then('the push outcome of mutation {string} is {string} with code {string}', function (this: SyncWorld, mutationId: string, status: string, code: string) {
  const outcome = outcomeOf(this, mutationId);
  this.assert.equal({ status: outcome.status, code: outcome.code }, { status, code }, `outcome of ${mutationId}: ${JSON.stringify(outcome)}`);
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
