/**
 * SYNC-BOUND-006 No Extra Hot-Path Network Hop For Core Sync Logic: the
 * server process is observed from outside (its connects and socket sends,
 * with their peers) while it serves each sync endpoint, and run with every
 * outbound connection but the database's refused.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { exchangesOf, objectBodyOf } from '../support/exchanges.ts';
import { listeningEndpoint, networkOf, outboundPeers, serverNetworkPhrase } from '../support/network/server-network.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { SyncWorld } from '../support/world.ts';

serverNetworkPhrase(/^server inspection shows that, while serving that request, the server process /, 'observe');
// The client that syncs here is the client under test, as an application drives it.
processPhrase(/^client "([^"]+)" of user "[^"]+" syncs after writing task /);
serverNetworkPhrase(/^the server process may reach only its PostgreSQL database over the network$/, 'database-only');

const SYNC_ENDPOINTS = ['connect', 'push', 'pull', 'rebuild'] as const;
const OTHER_CLIENT_TITLE = 'Changed elsewhere';

Then('server inspection shows that, while serving that request, the server process reached only its PostgreSQL database over the network and did the {string} work on it', async function (this: SyncWorld, endpoint: string) {
  const server = await this.readyServer();
  const network = networkOf(server);
  if ('missing' in network) return undeterminedWithout(this, network.missing);
  const log = (await this.proxy()).exchanges;
  const request = [...log].reverse().find((exchange) => exchange.endpoint === endpoint);
  this.assert.ok(request?.receivedAt !== undefined, `the proxy recorded a ${endpoint} request with its arrival time`);
  const activity = await network.activity(request?.receivedAt as number, Date.now(), this.deadlineMs);
  const peers = outboundPeers(activity, listeningEndpoint(server));
  const strangers = peers.filter((peer) => !network.databaseEndpoints.includes(peer));
  this.assert.equal(strangers, [], `while serving ${endpoint} the server process reached ${peers.join(', ')}; its database is ${network.databaseEndpoints.join(', ')}`);
  const databaseSends = activity.filter((entry) => entry.kind === 'send' && network.databaseEndpoints.includes(entry.remote));
  this.assert.ok(databaseSends.length > 0, `while serving ${endpoint} the server process sent nothing to its database ${network.databaseEndpoints.join(', ')}`);
  return undefined;
});

Given('the server process may reach only its PostgreSQL database over the network', async function (this: SyncWorld) {
  const network = networkOf(await this.readyServer());
  if ('missing' in network) return undeterminedWithout(this, network.missing);
  if (network.egress !== 'database-only') throw new Error('the server adapter did not restrict the server process to its database');
  return undefined;
});

When('client {string} of user {string} syncs after writing task {string} owned by {string}', async function (this: SyncWorld, name: string, user: string, id: string, owner: string) {
  this.clientUsers.set(name, user);
  // The first sync gives the client its schema, so the write is captured as a mutation of the synced table.
  await this.inSyncWindow(name, 'syncs', () => this.syncProcess(name));
  const client = await this.process(name);
  await client.call('execute', { sql: 'INSERT INTO tasks (id, owner_id, title) VALUES (?, ?, ?)', params: [id, owner, 'Written offline'] }).catch(() => undefined);
  await this.inSyncWindow(name, 'syncs', () => this.syncProcess(name));
});

When('client {string} syncs again after another client changes task {string}', async function (this: SyncWorld, name: string, id: string) {
  const owner = this.userOf(name);
  const other = this.wire(`${name}-other`, owner);
  // A server that cannot serve the other client leaves the row unchanged; the Then steps judge the outcome.
  const connected = await other.connectAndRebuild().then(
    () => true,
    () => false,
  );
  const base = connected ? this.heldVersions.get(SyncWorld.rowKey(other.tableId('tasks'), id)) : undefined;
  if (base !== undefined) {
    const reply = await other.push([other.mutation({ op: 'update', table: 'tasks', pk: id, columns: { title: OTHER_CLIENT_TITLE }, base_version: base })]);
    if (reply.status === 200) await awaitCapture(this);
  }
  await this.inSyncWindow(name, 'syncs', () => this.syncProcess(name));
});

Then('every connect, push, pull and rebuild response to client {string} has status {int}', async function (this: SyncWorld, name: string, status: number) {
  const sent = await exchangesOf(this, name, { endpoints: [...SYNC_ENDPOINTS] });
  for (const endpoint of SYNC_ENDPOINTS) this.assert.ok(sent.some((exchange) => exchange.endpoint === endpoint), `client "${name}" sent a ${endpoint} request`);
  for (const exchange of sent) {
    const delivered = exchange.delivered;
    const answered = delivered !== undefined && 'status' in delivered ? delivered.status : undefined;
    this.assert.equal(answered, status, `the ${exchange.endpoint} request #${exchange.seq} of client "${name}" was answered ${answered}: ${JSON.stringify(objectBodyOf(delivered !== undefined && 'body' in delivered ? delivered.body : undefined))}`);
  }
});

Then('client {string} has row {string} of {string} as the other client changed it', async function (this: SyncWorld, name: string, id: string, table: string) {
  const client = await this.process(name);
  const { rows } = await client.call<{ rows: { title: unknown }[] }>('query', { sql: `SELECT title FROM "${table}" WHERE id = ?`, params: [id] });
  this.assert.equal(
    rows.map((row) => row.title),
    [OTHER_CLIENT_TITLE],
    `client "${name}" holds ${table} row ${id} as the other client changed it`,
  );
});
