/**
 * Shared steps (used by several requirements).
 * The harness as a protocol client pushing batches under fixed identities:
 * sending and resending a batch, comparing a replay with the first answer,
 * noting outcomes and versions, and reconnecting between batches. What the
 * server then holds for a row is read in server-rows.steps.ts.
 */
import { randomUUID } from 'node:crypto';
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { baseFromCell, clientVersionFromCell, mutationsFromTable } from '../support/push-ledger/mutation-table.ts';
import { lastPush, ledgerState, type Obj, outcomeInLastPush, sentBatch, thatMutation } from '../support/push-ledger/state.ts';
import type { Reply } from '../support/reply.ts';
import { currentManifest } from '../support/schema-and-versions/manifests.ts';
import { cellValue } from '../support/values.ts';
import { versionLabels } from '../support/version-labels.ts';
import type { Json, MutationSpec } from '../support/wire-client.ts';
import { SyncWorld } from '../support/world.ts';

/** Sends a push request of client `name` under `batchId` and remembers the first one sent under that id. */
export async function pushBatch(world: SyncWorld, name: string, body: Json): Promise<Reply> {
  const client = world.wire(name);
  const reply = await client.post('/sync/push', body, { endpoint: 'push' });
  const batchId = String(body.batch_id);
  const batches = ledgerState(world).batches;
  if (!batches.has(batchId)) batches.set(batchId, { client: name, batchId, requestText: reply.requestText, first: reply });
  return reply;
}

function requireApplied(reply: Reply, what: string): void {
  if (reply.status !== 200) throw new Error(`${what} was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
}

When('client {string} pushes batch {string} with:', async function (this: SyncWorld, name: string, batchId: string, table: DataTable) {
  const client = this.wire(name);
  await pushBatch(this, name, client.pushBody(mutationsFromTable(this, client, table), batchId));
});

Given('client {string} has pushed batch {string} with:', async function (this: SyncWorld, name: string, batchId: string, table: DataTable) {
  const client = this.wire(name);
  requireApplied(await pushBatch(this, name, client.pushBody(mutationsFromTable(this, client, table), batchId)), `batch ${batchId} of client "${name}"`);
});

// A set-up push: every mutation of it must be applied, or the scenario starts from another state than it says.
Given('client {string} has pushed a batch with:', async function (this: SyncWorld, name: string, table: DataTable) {
  const client = this.wire(name);
  const mutations = mutationsFromTable(this, client, table);
  const reply = await pushBatch(this, name, client.pushBody(mutations, randomUUID()));
  requireApplied(reply, `a batch of client "${name}"`);
  const applied = ((reply.json?.accepted ?? []) as Obj[]).filter((o) => o.status === 'applied').length;
  if (applied !== mutations.length) throw new Error(`client "${name}" got ${applied} of ${mutations.length} mutations applied: ${reply.text.slice(0, 500)}`);
});

When('client {string} resends batch {string} unchanged', async function (this: SyncWorld, name: string, batchId: string) {
  const batch = sentBatch(this, batchId);
  // The exact bytes of the first request, as a client resends a sealed batch.
  await this.wire(name).post('/sync/push', undefined, { raw: batch.requestText, endpoint: 'push' });
});

Then('the response body is byte-identical to the first response to batch {string}', function (this: SyncWorld, batchId: string) {
  const first = sentBatch(this, batchId).first;
  const reply = this.lastReply();
  this.assert.equal(reply.status, first.status, `the status of the answer to batch ${batchId} (${reply.text.slice(0, 300)})`);
  this.assert.ok(
    Buffer.from(reply.text, 'utf8').equals(Buffer.from(first.text, 'utf8')),
    `the answer to batch ${batchId} differs from the first one:\nfirst: ${first.text.slice(0, 1500)}\nnow:   ${reply.text.slice(0, 1500)}`,
  );
});

Then('the server_version of mutation {string} is remembered as {string}', function (this: SyncWorld, mutationId: string, label: string) {
  const outcome = outcomeInLastPush(this, mutationId);
  this.assert.ok(typeof outcome.server_version === 'string', `the outcome of ${mutationId} carries a server_version: ${JSON.stringify(outcome)}`);
  versionLabels(this).set(label, String(outcome.server_version));
});

Then('the rejected outcome of mutation {string} has status {string} and code {string}', function (this: SyncWorld, mutationId: string, status: string, code: string) {
  const reply = lastPush(this);
  const outcome = ((reply.json?.rejected ?? []) as Obj[]).find((o) => o.mutation_id === mutationId);
  this.assert.ok(outcome, `the rejected list of the last push has mutation ${mutationId}: ${reply.text.slice(0, 800)}`);
  this.assert.equal({ status: outcome?.status, code: outcome?.code }, { status, code }, `outcome of ${mutationId}`);
});

Then('the error body has code {string}, a nonempty message, "retryable": false and no member "accepted" or "rejected"', function (this: SyncWorld, code: string) {
  const reply = this.lastReply();
  const body = (reply.json ?? {}) as Obj;
  const error = (body.error ?? {}) as Obj;
  this.assert.equal(error.code, code, `the error code of ${reply.text.slice(0, 500)}`);
  this.assert.ok(typeof error.message === 'string' && error.message.length > 0, `the error has a nonempty message: ${reply.text.slice(0, 500)}`);
  this.assert.equal(error.retryable, false, `"retryable" of ${reply.text.slice(0, 500)}`);
  this.assert.equal(['accepted', 'rejected'].filter((m) => Object.hasOwn(body, m)), [], `success members in the error body ${reply.text.slice(0, 500)}`);
});

Given('client {string} has connected again and received the new schema', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const before = client.schema.version;
  const reply = await client.connect();
  if (reply.status !== 200) throw new Error(`client "${name}" could not reconnect: ${reply.status} ${reply.text.slice(0, 300)}`);
  if (client.schema.version <= before) throw new Error(`client "${name}" still has schema version ${client.schema.version} after reconnecting`);
});

Given('client {string} has connected again and received a new client_generation', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const before = client.generation;
  const reply = await client.connect();
  if (reply.status !== 200) throw new Error(`client "${name}" could not reconnect: ${reply.status} ${reply.text.slice(0, 300)}`);
  if (before === undefined || client.generation === undefined || client.generation <= before) throw new Error(`client "${name}" got client_generation ${client.generation} after ${before}`);
});

When('client {string} pushes batch {string} under the new schema with:', async function (this: SyncWorld, name: string, batchId: string, table: DataTable) {
  const client = this.wire(name);
  const current = await currentManifest(this);
  if (client.schema.version !== current.schema_version || client.schema.hash !== current.schema_hash) {
    throw new Error(`client "${name}" holds schema ${client.schema.version}, not the server's current ${current.schema_version}: it must connect again first`);
  }
  await pushBatch(this, name, client.pushBody(mutationsFromTable(this, client, table), batchId));
});

When('client {string} pushes atomic batch {string} with:', async function (this: SyncWorld, name: string, batchId: string, table: DataTable) {
  const client = this.wire(name);
  await pushBatch(this, name, { ...client.pushBody(mutationsFromTable(this, client, table), batchId), atomic: true });
});

function assertListed(world: SyncWorld, list: 'accepted' | 'rejected', ids: string): void {
  const reply = lastPush(world);
  world.assert.equal(reply.status, 200, `the last push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const expected = ids.split(',').map((id) => id.trim()).filter((id) => id !== '');
  const actual = ((reply.json?.[list] ?? []) as Obj[]).map((o) => o.mutation_id);
  world.assert.equal(actual, expected, `mutation_ids of "${list}" in ${reply.text.slice(0, 1500)}`);
}

Then('the accepted list holds mutations {string} in this order', function (this: SyncWorld, ids: string) {
  assertListed(this, 'accepted', ids);
});

Then('the rejected list holds mutations {string} in this order', function (this: SyncWorld, ids: string) {
  assertListed(this, 'rejected', ids);
});

/** Sends one mutation as client `name` in a batch of its own; it becomes "that mutation". */
async function pushOne(world: SyncWorld, name: string, spec: MutationSpec): Promise<void> {
  const client = world.wire(name);
  const mutation = client.mutation(spec);
  const heldBefore = world.heldVersions.get(SyncWorld.rowKey(client.tableId(spec.table), spec.pk));
  const sentAt = Date.now();
  await pushBatch(world, name, client.pushBody([mutation], randomUUID()));
  ledgerState(world).that = { mutation, heldBefore, sentAt, answeredAt: Date.now() };
}

/** The columns a step names, as JSON keyed by column name, or none. */
function columnsOf(text: string): Record<string, unknown> | undefined {
  return text === 'absent' ? undefined : (JSON.parse(text) as Record<string, unknown>);
}

When(
  /^client "([^"]+)" pushes a batch with one (insert|update|delete) of row "([^"]+)" of table "([^"]+)" with base_version (absent|current|"[^"]*"|[A-Za-z0-9_-]+) and columns (\{.*\}|absent)$/,
  async function (this: SyncWorld, name: string, op: 'insert' | 'update' | 'delete', pk: string, table: string, base: string, columns: string) {
    const client = this.wire(name);
    const pkValue = cellValue(this.model.keyColumn(table), pk);
    const baseVersion = baseFromCell(this, client, table, pkValue, base);
    const values = columnsOf(columns);
    await pushOne(this, name, { op, table, pk: pkValue, ...(values === undefined ? {} : { columns: values }), ...(baseVersion === undefined ? {} : { base_version: baseVersion }) });
  },
);

When(/^client "([^"]+)" pushes a batch with one insert of row "([^"]+)" of table "([^"]+)" with columns (\{.*\}) and client_version "([^"]*)"$/, async function (this: SyncWorld, name: string, pk: string, table: string, columns: string, clientVersion: string) {
  const pkValue = cellValue(this.model.keyColumn(table), pk);
  await pushOne(this, name, { op: 'insert', table, pk: pkValue, columns: JSON.parse(columns) as Record<string, unknown>, client_version: clientVersionFromCell(clientVersion) });
});

Then('the outcome of that mutation is in list {string} with status {string} and code {string}', function (this: SyncWorld, list: string, status: string, code: string) {
  const id = String(thatMutation(this).mutation.mutation_id);
  const reply = lastPush(this);
  this.assert.equal(reply.status, 200, `the push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const other = list === 'accepted' ? 'rejected' : 'accepted';
  const outcome = ((reply.json?.[list] ?? []) as Obj[]).find((o) => o.mutation_id === id);
  this.assert.ok(outcome, `"${list}" holds mutation ${id}: ${reply.text.slice(0, 1000)}`);
  this.assert.equal(((reply.json?.[other] ?? []) as Obj[]).filter((o) => o.mutation_id === id), [], `"${other}" does not also hold mutation ${id}`);
  this.assert.equal({ status: outcome?.status, code: outcome?.code ?? '' }, { status, code }, `the outcome of ${id}: ${JSON.stringify(outcome)}`);
});

Then(/^the push outcomes are:$/, function (this: SyncWorld, table: DataTable) {
  const reply = lastPush(this);
  this.assert.equal(reply.status, 200, `the push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const actual = table.hashes().map((row) => {
    const list = row.list as string;
    const outcome = ((reply.json?.[list] ?? []) as Obj[]).find((o) => o.mutation_id === row.mutation_id);
    return { mutation_id: row.mutation_id, list: outcome === undefined ? '(not in this list)' : list, status: outcome?.status, code: outcome?.code ?? '' };
  });
  const expected = table.hashes().map((row) => ({ mutation_id: row.mutation_id, list: row.list, status: row.status, code: row.code ?? '' }));
  this.assert.equal(actual, expected, `outcomes of ${reply.text.slice(0, 1500)}`);
});
