/**
 * SYNC-MUT-002 Synced CRUD Authority
 * (features/mutation-and-data-correctness/synced-crud-authority.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf, exchangesOf } from '../support/exchanges.ts';
import { pushesOf } from '../support/mutations/pushes.ts';
import { baseFromCell } from '../support/push-ledger/mutation-table.ts';
import { ledgerState, type Obj, thatMutation, thatOutcomeOf } from '../support/push-ledger/state.ts';
import { startTracking, trackedRow } from '../support/server-rows.ts';
import { outcomesOf } from '../support/wire-values/outcomes.ts';
import { keyValue, tableNamed } from '../support/wire-values/recorded.ts';
import { sendExact, stepValue } from '../support/wire-values/requests.ts';
import type { Json, MutationSpec } from '../support/wire-client.ts';
import { SyncWorld } from '../support/world.ts';

processPhrase(/^every (?:mutation|write request) the proxy recorded from client "([^"]+)"/);

/** The text column a table's writes change: "body" of a note, "title" of a task. */
function textColumn(world: SyncWorld, table: string): string {
  const column = world.model.table(table).columns.find((c) => c.type === 'string' && !c.key && c.name !== 'owner_id');
  if (column === undefined) throw new Error(`table "${table}" has no text column to write`);
  return column.name;
}

/** Pushes one mutation as client `name` and requires it applied; returns its server_version. */
async function applied(world: SyncWorld, name: string, spec: MutationSpec): Promise<string> {
  const client = world.wire(name);
  const reply = await client.push([client.mutation(spec)]);
  const outcome = (reply.json?.accepted ?? [])[0] as Obj | undefined;
  if (reply.status !== 200 || outcome?.status !== 'applied') throw new Error(`the ${spec.op} of ${spec.table} ${String(spec.pk)} was not applied: ${reply.status} ${reply.text.slice(0, 400)}`);
  return String(outcome.server_version);
}

Given(/^row "([^"]+)" of table "([^"]+)" is (absent|live|deleted \(tombstone\)|deleted \(fence only\)) on the server$/, async function (this: SyncWorld, pk: string, table: string, state: string) {
  const writer = 'W';
  // A reader follows the server from before the row's set-up, so it can tell a deletion from absence afterwards.
  await startTracking(this);
  if (state === 'absent') return;
  const client = this.wire(writer);
  const version = await applied(this, writer, { op: 'insert', table, pk, columns: { owner_id: client.userId, [textColumn(this, table)]: 'created' } });
  if (state.startsWith('deleted')) {
    const model = this.model.table(table);
    const soft = model.deletedAtColumn !== undefined;
    if (soft !== (state === 'deleted (tombstone)')) throw new Error(`table "${table}" ${soft ? 'keeps tombstones' : 'deletes rows outright'}: it cannot be brought to "${state}"`);
    await applied(this, writer, { op: 'delete', table, pk, base_version: version });
  }
});

When(
  /^client "([^"]+)" pushes a batch with one (insert|update|delete) of row "([^"]+)" of table "([^"]+)" with base_version (absent|current|stale|"[^"]*") and the columns the operation requires$/,
  async function (this: SyncWorld, name: string, op: 'insert' | 'update' | 'delete', pk: string, table: string, base: string) {
    const client = this.wire(name);
    const baseVersion = baseFromCell(this, client, table, pk, base);
    const text = textColumn(this, table);
    const columns = op === 'insert' ? { owner_id: client.userId, [text]: 'written' } : op === 'update' ? { [text]: 'patched' } : undefined;
    const mutation = client.mutation({ op, table, pk, ...(columns === undefined ? {} : { columns }), ...(baseVersion === undefined ? {} : { base_version: baseVersion }) });
    const heldBefore = this.heldVersions.get(SyncWorld.rowKey(client.tableId(table), pk));
    const sentAt = Date.now();
    await client.post('/sync/push', client.pushBody([mutation]), { endpoint: 'push' });
    ledgerState(this).that = { mutation, heldBefore, sentAt, answeredAt: Date.now() };
  },
);

Then('the outcome of that mutation has status {string} and code {string}', function (this: SyncWorld, status: string, code: string) {
  const outcome = thatOutcomeOf(this);
  this.assert.equal({ status: outcome.status, code: outcome.code ?? '' }, { status, code }, `the outcome of that mutation: ${JSON.stringify(outcome)}`);
});

Then(
  /^the server holds row "([^"]+)" of table "([^"]+)" (live|as a tombstone|deleted|absent)(?: at (a new version|its previous version))?$/,
  async function (this: SyncWorld, pk: string, table: string, state: string, at: string | null) {
    const row = await trackedRow(this, table, pk);
    const expected = { live: 'live', 'as a tombstone': 'tombstone', deleted: 'deleted', absent: undefined }[state];
    this.assert.equal(row?.state, expected, `what the server holds for ${table} ${pk}: ${JSON.stringify(row)}`);
    if (state === 'as a tombstone') this.assert.ok(row?.row?.[this.model.table(table).deletedAtColumn as string] !== null, `the tombstone of ${pk} has its deletion time set: ${JSON.stringify(row?.row)}`);
    const before = thatMutation(this).heldBefore;
    // Without "at", a conflict left the row as it was, version included.
    if (at === 'a new version') {
      this.assert.ok(row?.serverVersion !== undefined && row.serverVersion !== before, `${table} ${pk} moved to a new version (before ${String(before)}, now ${String(row?.serverVersion)})`);
    } else if (expected !== undefined) {
      this.assert.equal(row?.serverVersion, before, `the version of ${table} ${pk} stayed as it was`);
    }
  },
);

// --- the client's wire operations ----------------------------------------------------------------

/** The mutations client `name` pushed for row `pk`, in order, with the outcome each got. */
async function pushedFor(world: SyncWorld, name: string, pk: string): Promise<{ mutation: Obj; outcome: Obj | undefined }[]> {
  const out: { mutation: Obj; outcome: Obj | undefined }[] = [];
  for (const push of await pushesOf(world, name)) {
    const outcomes = outcomesOf(push.answerBody);
    for (const m of push.mutations) if (keyValue(m.pk) === pk) out.push({ mutation: m, outcome: outcomes.find((o) => o.mutation_id === m.mutation_id) });
  }
  return out;
}

async function pushedOp(world: SyncWorld, name: string, pk: string, op: string) {
  const all = await pushedFor(world, name, pk);
  const found = all.filter((p) => p.mutation.op === op);
  world.assert.equal(found.length, 1, `client "${name}" pushed one ${op} of ${pk} (it pushed ${all.map((p) => p.mutation.op).join(', ')})`);
  return { found: found[0] as { mutation: Obj; outcome: Obj | undefined }, all };
}

/** The client under test in these steps: the one process client of the scenario. */
const processName = (world: SyncWorld) => [...world.clients.keys()][0] ?? 'A';

Then(/^the pushed insert of row "([^"]+)" has no base_version and columns (\{.*\}) keyed by field ID$/, async function (this: SyncWorld, pk: string, json: string) {
  const { found } = await pushedOp(this, processName(this), pk, 'insert');
  const mutation = found.mutation;
  this.assert.ok(!Object.hasOwn(mutation, 'base_version'), `the insert of ${pk} carries no base_version: ${JSON.stringify(mutation)}`);
  const table = await tableNamed(this, String(mutation.table));
  const byId = new Map(table.fields.map((f) => [f.field_id, f.name]));
  const columns = (mutation.columns ?? {}) as Obj;
  this.assert.equal(Object.keys(columns).filter((k) => !byId.has(k)), [], `members of the insert's columns that are not field IDs: ${JSON.stringify(columns)}`);
  const named = Object.fromEntries(Object.entries(columns).map(([k, v]) => [byId.get(k), v]));
  this.assert.equal(named, JSON.parse(json), `the columns of the insert of ${pk}, by field name`);
});

Then(/^the pushed update of row "([^"]+)" has base_version equal to the insert's returned server_version and columns holding exactly (\w+) "([^"]*)" and (\w+) null$/, async function (this: SyncWorld, pk: string, first: string, value: string, second: string) {
  const name = processName(this);
  const { found } = await pushedOp(this, name, pk, 'update');
  const insert = (await pushedOp(this, name, pk, 'insert')).found;
  this.assert.ok(typeof insert.outcome?.server_version === 'string', `the insert of ${pk} was answered with a server_version: ${JSON.stringify(insert.outcome)}`);
  this.assert.equal(found.mutation.base_version, insert.outcome?.server_version, `base_version of the update of ${pk}`);
  const table = await tableNamed(this, String(found.mutation.table));
  const named = Object.fromEntries(Object.entries((found.mutation.columns ?? {}) as Obj).map(([k, v]) => [table.fields.find((f) => f.field_id === k)?.name ?? k, v]));
  this.assert.equal(named, { [first]: value, [second]: null }, `the columns of the update of ${pk}`);
});

Then(/^the pushed delete of row "([^"]+)" has base_version equal to the update's returned server_version and no columns member$/, async function (this: SyncWorld, pk: string) {
  const name = processName(this);
  const { found } = await pushedOp(this, name, pk, 'delete');
  const update = (await pushedOp(this, name, pk, 'update')).found;
  this.assert.ok(typeof update.outcome?.server_version === 'string', `the update of ${pk} was answered with a server_version: ${JSON.stringify(update.outcome)}`);
  this.assert.equal(found.mutation.base_version, update.outcome?.server_version, `base_version of the delete of ${pk}`);
  this.assert.ok(!Object.hasOwn(found.mutation, 'columns'), `the delete of ${pk} has no columns member: ${JSON.stringify(found.mutation)}`);
});

// --- operations outside the contract -------------------------------------------------------------

const refused = new WeakMap<SyncWorld, Json>();

When(/^client "([^"]+)" sends a push request whose only mutation has "op": (.+) on row "([^"]+)" of table "([^"]+)" with columns (\{.*\})$/, async function (this: SyncWorld, name: string, op: string, pk: string, table: string, columns: string) {
  await this.readyServer();
  const client = this.wire(name);
  const mutation: Json = client.mutation({ op: 'insert', table, pk, columns: JSON.parse(columns) as Record<string, unknown> });
  mutation.op = stepValue(this, op);
  const body = client.pushBody([mutation], randomUUID());
  refused.set(this, body);
  await sendExact(client, 'push', body);
});

When(/^client "([^"]+)" sends the same batch_id again with "op": "(insert|update|delete)"$/, async function (this: SyncWorld, name: string, op: string) {
  const body = refused.get(this);
  if (body === undefined) throw new Error('no push request was refused earlier in this scenario');
  const again = structuredClone(body);
  for (const m of again.mutations as Json[]) m.op = op;
  await sendExact(this.wire(name), 'push', again);
});

Then(/^every mutation the proxy recorded from client "([^"]+)" has "op" "insert", "update" or "delete"$/, async function (this: SyncWorld, name: string) {
  const ops = (await pushesOf(this, name)).flatMap((p) => p.mutations.map((m) => m.op));
  this.assert.ok(ops.length > 0, `client "${name}" pushed mutations`);
  this.assert.equal(ops.filter((op) => !['insert', 'update', 'delete'].includes(String(op))), [], `ops client "${name}" pushed`);
});

Then(/^every write request the proxy recorded from client "([^"]+)" went to POST \/sync\/push$/, async function (this: SyncWorld, name: string) {
  const sent = await exchangesOf(this, name, { orUserCredential: true });
  this.assert.ok(sent.some((e) => e.endpoint === 'push'), `client "${name}" pushed`);
  // A write is any request carrying mutations, and any request to a path outside the protocol's endpoints.
  const writes = sent.filter((e) => e.endpoint === 'other' || Object.hasOwn((bodyOf(e.requestBody) ?? {}) as Obj, 'mutations'));
  this.assert.equal(writes.filter((e) => !(e.method === 'POST' && e.path === '/sync/push')).map((e) => `${e.method} ${e.path}`), [], `write requests of client "${name}" elsewhere than POST /sync/push`);
});
