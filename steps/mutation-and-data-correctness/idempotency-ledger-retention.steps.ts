/**
 * SYNC-MUT-011 Idempotency Ledger Retention
 * (features/mutation-and-data-correctness/idempotency-ledger-retention.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { advanceClock, compactScopeToHead, DAY_MS, ledgerRows, notedLedger, noteLedger, retirementMarkers } from '../support/mutations/ledger-retention.ts';
import { type Obj, sentBatch } from '../support/push-ledger/state.ts';
import { ident, publishChange } from '../support/schema-and-versions/manifests.ts';
import type { WireClient } from '../support/wire-client.ts';
import type { SyncWorld } from '../support/world.ts';

/** The reader that moves a scope's change history to its head before compaction. */
const READER = 'retention reader';

async function connectAgain(client: WireClient): Promise<void> {
  const reply = await client.connect();
  if (reply.status !== 200) throw new Error(`client "${client.name}" could not connect again: ${reply.status} ${reply.text.slice(0, 300)}`);
}

// --- the events a ledger outlives ------------------------------------------------------------

When(/^the operator advances the server clock by (\d+) days$/, async function (this: SyncWorld, days: string) {
  await advanceClock(this, Number(days) * DAY_MS);
});

When(/^the operator expires the client generation of client "([^"]+)" and client "\1" connects again and receives a new client_generation$/, async function (this: SyncWorld, name: string) {
  const server = await this.readyServer();
  if (!server.clients) throw new Error(`server adapter "${server.id}" has no clients capability to expire a client`);
  const client = this.wire(name);
  const before = client.generation;
  await server.clients.expire(client.userId, client.clientId);
  await connectAgain(client);
  if (before === undefined || client.generation === undefined || client.generation <= before) throw new Error(`client "${name}" got client_generation ${client.generation} after ${before}`);
});

When(
  /^the operator publishes a new schema version that adds nullable writable column "([^"]+)" of type (\w+) to table "([^"]+)" and client "([^"]+)" connects again$/,
  async function (this: SyncWorld, column: string, type: string, table: string, name: string) {
    await publishChange(this, table, `ALTER TABLE public.${ident(table)} ADD COLUMN ${ident(column)} ${type === 'string' ? 'text' : type};`, 'class_2');
    this.model.table(table).columns.push({ name: column, type, key: false, nullable: true });
    const client = this.wire(name);
    const before = client.schema.version;
    await connectAgain(client);
    if (client.schema.version <= before) throw new Error(`client "${name}" still has schema version ${client.schema.version} after connecting again`);
  },
);

When(/^the operator advances the retention floor of scope "([^"]+)" past every cursor issued so far and client "([^"]+)" connects again$/, async function (this: SyncWorld, scope: string, name: string) {
  const server = await this.readyServer();
  if (!server.clients) throw new Error(`server adapter "${server.id}" has no clients capability to expire a client`);
  // Every client holding a cursor issued so far stops pinning the history, then the floor moves to the head.
  for (const [holder] of this.clientUsers) {
    const client = this.wire(holder);
    if (client.generation !== undefined) await server.clients.expire(client.userId, client.clientId);
  }
  await compactScopeToHead(this, scope, READER);
  await connectAgain(this.wire(name));
});

When('the operator compacts the change history of scope {string}', async function (this: SyncWorld, scope: string) {
  await compactScopeToHead(this, scope, READER);
});

// --- the server's account of the ledger ------------------------------------------------------

Given('server inspection counts the batch and mutation ledger rows of client {string}', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const rows = await ledgerRows(this, client.userId, client.clientId);
  if (rows.batches.length === 0 || rows.mutations.length === 0) throw new Error(`server inspection shows ${rows.batches.length} batch and ${rows.mutations.length} mutation ledger rows of client "${name}": nothing to keep`);
  noteLedger(this, name, rows);
});

Then('server inspection shows the same batch and mutation ledger rows of client {string}', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  this.assert.equal(await ledgerRows(this, client.userId, client.clientId), notedLedger(this, name), `ledger rows of client "${name}"`);
});

Then('server inspection shows no retirement marker for client {string}', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  this.assert.equal(await retirementMarkers(this, client.userId, client.clientId), [], `retirement markers of client "${name}"`);
});

// --- retirement --------------------------------------------------------------------------------

When('the operator retires client {string} irreversibly', async function (this: SyncWorld, name: string) {
  const server = await this.readyServer();
  if (!server.clients) throw new Error(`server adapter "${server.id}" has no clients capability to retire a client`);
  const client = this.wire(name);
  await server.clients.retire(client.userId, client.clientId);
});

When(/^client "([^"]+)" pushes batch "([^"]+)" with (\w+) "([^"]*)"$/, async function (this: SyncWorld, name: string, batchId: string, column: string, value: string) {
  const client = this.wire(name);
  // The batch's identity with other content: the first request with the one column of its one mutation changed.
  const body = JSON.parse(sentBatch(this, batchId).requestText) as Obj;
  const [mutation, ...more] = body.mutations as Obj[];
  if (mutation === undefined || more.length > 0) throw new Error(`batch ${batchId} does not hold exactly one mutation`);
  const columns = mutation.columns as Obj;
  const field = client.fieldId(String(mutation.table), column);
  if (columns[field] === value) throw new Error(`batch ${batchId} already has ${column} "${value}"`);
  columns[field] = value;
  await client.post('/sync/push', body, { endpoint: 'push' });
});

When(/^client "([^"]+)" pushes a new batch inserting row "([^"]+)" of table "([^"]+)"$/, async function (this: SyncWorld, name: string, row: string, table: string) {
  const client = this.wire(name);
  const owner = /^user:\{(\w+)\}$/.exec(this.model.table(table).placements[0] ?? '')?.[1];
  const columns: Obj = owner === undefined ? {} : { [owner]: client.userId };
  await client.post('/sync/push', client.pushBody([client.mutation({ op: 'insert', table, pk: row, columns })]), { endpoint: 'push' });
});

Then('server inspection shows a retirement marker for client {string} with a retirement ID and time', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const markers = await retirementMarkers(this, client.userId, client.clientId);
  this.assert.equal(markers.length, 1, `retirement markers of client "${name}": ${JSON.stringify(markers)}`);
  const [marker] = markers;
  this.assert.match(marker?.retirement_id ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'retirement ID of the marker');
  this.assert.ok(!Number.isNaN(Date.parse(marker?.retired_at ?? '')), `retirement time of the marker: ${marker?.retired_at}`);
});

Then('server inspection shows that client {string} has no batch or mutation ledger row without that marker in place', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const markers = await retirementMarkers(this, client.userId, client.clientId);
  const rows = await ledgerRows(this, client.userId, client.clientId);
  // Ledger rows may stay or go after retirement, but only ever beside a durable marker.
  this.assert.ok(markers.length === 1, `client "${name}" has ${rows.batches.length} batch and ${rows.mutations.length} mutation ledger rows and ${markers.length} retirement markers`);
});

// --- the identity after retirement -------------------------------------------------------------

When(/^a new installation of user "([^"]+)" connects presenting the client_id of client "([^"]+)" without a client_generation$/, async function (this: SyncWorld, user: string, name: string) {
  const retired = this.wire(name);
  const installation = this.newWire('new installation', user);
  installation.reset(retired.clientId);
  await installation.connect();
});

When(/^a new installation of user "([^"]+)" connects with a fresh client_id$/, async function (this: SyncWorld, user: string) {
  await this.newWire('fresh installation', user).connect();
});
