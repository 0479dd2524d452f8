/**
 * SYNC-MUT-005 No Duplicate Local Intent
 * (features/mutation-and-data-correctness/no-duplicate-local-intent.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then } from '@cucumber/cucumber';
import { pushesOf, type SentPush, serverOutcomes } from '../support/mutations/pushes.ts';
import { describeQueue, ofRow, queueOf, recordNamed, written } from '../support/mutations/queue.ts';
import { labelled, queueState } from '../support/mutations/state.ts';
import { lastWriteOf } from '../support/mutations/writes.ts';
import { servedRow } from '../support/server-rows.ts';
import { type Obj, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

const THAT = 'that mutation ID';
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

Then('client {string} shows exactly one mutation record, an insert of row {string} with a lowercase canonical UUID as mutation ID', async function (this: SyncWorld, name: string, row: string) {
  const records = await queueOf(this, name);
  this.assert.equal(
    records.map((r) => ({ op: r.op, row: r.recordId })),
    [{ op: 'insert', row }],
    `the records client "${name}" shows (${describeQueue(records)})`,
  );
  const id = records[0]?.id ?? '';
  this.assert.match(id, CANONICAL_UUID, `mutation ID of the insert of ${row}`);
  queueState(this).labels.set(THAT, id);
});

/** Every mutation the client put on the wire, each counted once however often its batch was sent. */
function distinctPushed(pushes: readonly SentPush[]): string[] {
  return [...new Set(pushes.flatMap((p) => p.mutations.map((m) => String(m.mutation_id))))];
}

Then(/^the proxy recorded exactly one pushed mutation from client "([^"]+)", carrying (that mutation ID|mutation ID "[^"]+")$/, async function (this: SyncWorld, name: string, which: string) {
  const label = which === THAT ? THAT : (/"([^"]+)"/.exec(which)?.[1] as string);
  this.assert.equal(distinctPushed(await pushesOf(this, name)), [labelled(this, label)], `mutation IDs client "${name}" pushed`);
});

Then('client {string} shows that mutation ID with status {string}', async function (this: SyncWorld, name: string, status: string) {
  const id = labelled(this, THAT);
  const records = await queueOf(this, name);
  this.assert.equal(
    records.filter((r) => r.id === id).map((r) => r.status),
    [status],
    `client "${name}" shows mutation ${id} (${describeQueue(records)})`,
  );
});

Then('client {string} shows three new update records, one for each of rows {string}, {string} and {string}, with three distinct mutation IDs', async function (this: SyncWorld, name: string, a: string, b: string, c: string) {
  const statement = lastWriteOf(this, name);
  const records = await queueOf(this, name);
  const fresh = records.filter((r) => !statement.before.has(r.id));
  this.assert.equal(fresh.map((r) => `${r.op} ${r.recordId}`).sort(), [`update ${a}`, `update ${b}`, `update ${c}`], `records captured by "${statement.sql}" (${describeQueue(fresh)})`);
  this.assert.equal(new Set(fresh.map((r) => r.id)).size, 3, 'distinct mutation IDs of the three updates');
  for (const record of fresh) this.assert.match(record.id, CANONICAL_UUID, `mutation ID of the update of ${record.recordId}`);
});

Given('the mutation ID client {string} shows for the insert of row {string} is remembered as {string}', async function (this: SyncWorld, name: string, row: string, label: string) {
  const record = recordNamed(await queueOf(this, name), `the insert of row "${row}"`);
  if (record === undefined) throw new Error(`client "${name}" shows no insert of row ${row}`);
  queueState(this).labels.set(label, record.id);
});

Then('client {string} emitted exactly one {string} event for that mutation ID', async function (this: SyncWorld, name: string, kind: string) {
  const id = labelled(this, THAT);
  const { eventLog } = await (await this.process(name)).call<{ eventLog?: Obj[] }>('getStatus');
  this.assert.ok(Array.isArray(eventLog), `client "${name}" reports no event log`);
  this.assert.equal(eventLog.filter((e) => e.kind === kind && e.mutationID === id).length, 1, `"${kind}" events client "${name}" emitted for ${id}`);
});

Then('the server accepted that mutation ID exactly once and holds row {string} at the version of that single acceptance', async function (this: SyncWorld, row: string) {
  const id = labelled(this, THAT);
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const outcomes = serverOutcomes(await pushesOf(this, name), id);
  this.assert.ok(outcomes.length > 0, `the server never answered a push carrying ${id}`);
  // A replay returns the stored outcome; a second execution would have made a new version or a conflict.
  this.assert.equal([...new Set(outcomes.map((o) => `${o.status} ${o.server_version}`))], [`applied ${outcomes[0]?.server_version}`], `every answer the server gave for ${id}`);
  const record = (await queueOf(this, name)).find((r) => r.id === id);
  const served = await servedRow(this, record?.table ?? 'notes', row, (await this.process(name)).userId);
  this.assert.ok(served !== undefined, `the server serves no row ${row}`);
  this.assert.equal(served.serverVersion, outcomes[0]?.server_version, `the version the server holds for ${row}`);
});

Given('the record count of client {string} is remembered', async function (this: SyncWorld, name: string) {
  queueState(this).recordCount.set(name, { count: (await queueOf(this, name)).length, mark: (await this.proxy()).exchanges.length });
});

function remembered(world: SyncWorld, name: string): { count: number; mark: number } {
  const noted = queueState(world).recordCount.get(name);
  if (noted === undefined) throw new Error(`the record count of client "${name}" was not remembered`);
  return noted;
}

Then('the record count of client {string} is unchanged', async function (this: SyncWorld, name: string) {
  const records = await queueOf(this, name);
  this.assert.equal(records.length, remembered(this, name).count, `records client "${name}" shows (${describeQueue(records)})`);
});

Then('client {string} stores, for row {string} of table {string}, the server_version of its accepted insert', async function (this: SyncWorld, name: string, row: string, table: string) {
  const insert = written(ofRow(await queueOf(this, name), row)).find((r) => r.op === 'insert');
  if (insert === undefined) throw new Error(`client "${name}" shows no insert of row ${row}`);
  const outcome = (await pushesOf(this, name))
    .flatMap((p) => (p.answerBody?.accepted ?? []) as Obj[])
    .find((o) => o.mutation_id === insert.id);
  this.assert.ok(outcome !== undefined, `no push answer accepted the insert of ${row}`);
  const tableId = (await tableNamed(this, table)).table_id;
  const { versions } = await (await this.process(name)).call<{ versions: { table: string; recordId: string; serverVersion: string }[] }>('inspectRowVersions');
  this.assert.equal(
    versions.filter((v) => v.table === tableId && v.recordId === row).map((v) => v.serverVersion),
    [outcome.server_version],
    `server versions client "${name}" stores for ${table} ${row}`,
  );
});

Then('the proxy recorded no push from client {string} since the record count was remembered', async function (this: SyncWorld, name: string) {
  const pushes = await pushesOf(this, name, remembered(this, name).mark);
  this.assert.equal(pushes.map((p) => p.mutations.map((m) => `${String(m.op)} ${JSON.stringify(m.pk)}`).join(', ')), [], `pushes of client "${name}" since the count was remembered`);
});
