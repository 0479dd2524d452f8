/**
 * SYNC-MUT-003 No Silent Mutation Loss
 * (features/mutation-and-data-correctness/no-silent-mutation-loss.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Then, When } from '@cucumber/cucumber';
import { holdResponse, releaseHeld, syncInBackground } from '../support/mutations/holds.ts';
import { outcomesGiven, pushesOf } from '../support/mutations/pushes.ts';
import { batchesOf, describeQueue, firstSeen, ofRow, queueOf, recordNamed, written } from '../support/mutations/queue.ts';
import type { QueueRecord } from '../support/mutations/state.ts';
import { runApplicationSql } from '../support/mutations/writes.ts';
import { columnValue, writerPush } from '../support/mutations/writers.ts';
import { servedRow } from '../support/server-rows.ts';
import { labelledVersion } from '../support/version-labels.ts';
import type { SyncWorld } from '../support/world.ts';

async function syncs(world: SyncWorld, name: string): Promise<void> {
  await world.inSyncWindow(name, 'syncs', () => world.syncProcess(name));
}

/** `"X" and SQL "Y" and SQL "Z"` as the statements X, Y, Z, each run as its own application write. */
function statementsOf(first: string, more: string): string[] {
  return [first, ...[...more.matchAll(/ and SQL "([^"]*)"/g)].map((m) => m[1] as string)];
}

When(/^client "([^"]+)" executes SQL "([^"]*)"((?: and SQL "[^"]*")*) (without syncing|and syncs)$/, async function (this: SyncWorld, name: string, first: string, more: string, then: string) {
  for (const sql of statementsOf(first, more)) await runApplicationSql(this, name, sql);
  if (then === 'and syncs') await syncs(this, name);
});

When(
  /^client "([^"]+)" updates row "([^"]+)" of table "([^"]+)" from "([^"]+)" setting (\w+) "([^"]*)", then client "([^"]+)" executes SQL "([^"]*)"(?: and syncs|, syncs while the proxy pauses the push response, executes SQL "([^"]*)" and lets the push response through)$/,
  async function (this: SyncWorld, writer: string, row: string, table: string, from: string, column: string, value: string, name: string, sql: string, during: string | undefined) {
    await writerPush(this, writer, { op: 'update', table, row, base: labelledVersion(this, from), columns: { [column]: columnValue(this, table, column, value) } });
    await runApplicationSql(this, name, sql);
    if (!during) {
      await syncs(this, name);
      return;
    }
    // The second write is made while the first one's push is sealed and its answer is held at the proxy.
    await holdResponse(this, name, 'push');
    await syncInBackground(this, name);
    await runApplicationSql(this, name, during);
    await releaseHeld(this, 'response');
  },
);

/** `owner_id "alice", body "figs"` and `body of 70000 characters` as checks of a record's authored values. */
function authoredChecks(cell: string): { column: string; value?: string; length?: number }[] {
  return [...cell.matchAll(/(\w+) (?:"([^"]*)"|of (\d+) characters)/g)].map((m) => ({ column: m[1] as string, ...(m[2] !== undefined ? { value: m[2] } : { length: Number(m[3]) }) }));
}

Then('client {string} shows these mutation records:', async function (this: SyncWorld, name: string, table: DataTable) {
  const records = await queueOf(this, name);
  const used = new Set<string>();
  for (const row of table.hashes()) {
    const candidates = written(ofRow(records, String(row.pk))).filter((r) => r.op === row.operation && r.table === row.table && !used.has(r.id));
    const record = candidates[0];
    this.assert.ok(record !== undefined, `client "${name}" shows no ${row.operation} of ${row.table} ${row.pk}: ${describeQueue(records)}`);
    used.add(record.id);
    this.assert.equal(record.status, row.status, `status of the ${row.operation} of ${row.pk}`);
    const checks = authoredChecks(String(row['authored fields'] ?? ''));
    for (const check of checks) {
      const actual: unknown = record.columns?.[check.column];
      if (check.value !== undefined) this.assert.equal(actual === null || actual === undefined ? actual : String(actual), check.value, `authored ${check.column} of the ${row.operation} of ${row.pk}`);
      else this.assert.equal(typeof actual === 'string' ? actual.length : actual, check.length, `length of the authored ${check.column} of the ${row.operation} of ${row.pk}`);
    }
    // A field the application did not write is absent or an explicit NULL, never invented.
    const listed = new Set(checks.map((c) => c.column));
    this.assert.equal(
      Object.entries(record.columns ?? {})
        .filter(([column, value]) => !listed.has(column) && value !== null)
        .map(([column]) => column),
      [],
      `authored fields of the ${row.operation} of ${row.pk} beyond what the application wrote`,
    );
  }
});

function linkOf(record: QueueRecord, link: 'normalizedMutationId' | 'dependsOnMutationId'): string | null | undefined {
  return record.links?.[link];
}

Then('both superseded records of row {string} link through normalizedMutationID to the insert of row {string} that the proxy saw on the wire', async function (this: SyncWorld, row: string, sameRow: string) {
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const records = await queueOf(this, name);
  const originals = written(ofRow(records, row));
  this.assert.equal(originals.map((r) => r.status), ['superseded_before_send', 'superseded_before_send'], `the records of row ${row} (${describeQueue(originals)})`);
  const inserts = (await pushesOf(this, name)).flatMap((p) => p.mutations).filter((m) => m.op === 'insert' && JSON.stringify(m.pk).includes(`"${sameRow}"`));
  const wireIds = [...new Set(inserts.map((m) => String(m.mutation_id)))];
  this.assert.equal(wireIds.length, 1, `inserts of row ${sameRow} on the wire: ${wireIds.join(', ')}`);
  for (const original of originals) this.assert.equal(linkOf(original, 'normalizedMutationId'), wireIds[0], `normalizedMutationID of the ${original.op} of ${row}`);
  this.assert.ok(
    records.some((r) => r.id === wireIds[0]),
    `the normalized record ${wireIds[0]} is not inspectable (${describeQueue(records)})`,
  );
});

Then('each cancelled record of row {string} links to the other record of that chain', async function (this: SyncWorld, row: string) {
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const chain = written(ofRow(await queueOf(this, name), row));
  this.assert.equal(chain.map((r) => r.status), ['cancelled_before_send', 'cancelled_before_send'], `the records of row ${row} (${describeQueue(chain)})`);
  for (const record of chain) {
    const others = chain.filter((r) => r.id !== record.id).map((r) => r.id);
    const links = [linkOf(record, 'normalizedMutationId'), linkOf(record, 'dependsOnMutationId')].filter((id) => typeof id === 'string');
    this.assert.ok(
      links.some((id) => others.includes(id as string)),
      `the cancelled ${record.op} of ${row} links to ${links.join(', ') || 'nothing'}, not to the other record of its chain (${describeQueue(chain)})`,
    );
  }
});

Then('the blocked update of row {string} links through dependsOnMutationID to the rejected update of row {string}', async function (this: SyncWorld, row: string, sameRow: string) {
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const records = written(ofRow(await queueOf(this, name), row));
  const blocked = records.find((r) => r.op === 'update' && r.status === 'blocked_by_predecessor');
  const rejected = written(ofRow(await queueOf(this, name), sameRow)).find((r) => r.op === 'update' && r.status === 'server_rejected');
  this.assert.ok(blocked !== undefined && rejected !== undefined, `row ${row} has no blocked and rejected update (${describeQueue(records)})`);
  this.assert.equal(linkOf(blocked, 'dependsOnMutationId'), rejected.id, 'dependsOnMutationID of the blocked update');
});

Then(/^client "([^"]+)" still shows (the (?:insert|update|delete) of row "[^"]+") with its mutation ID, authored fields and a status of "sealed" or "pending"$/, async function (this: SyncWorld, name: string, phrase: string) {
  const before = firstSeen(this, name, phrase);
  if (before === undefined) throw new Error(`client "${name}" was never seen holding ${phrase}`);
  const records = await queueOf(this, name);
  const now = records.find((r) => r.id === before.id);
  this.assert.ok(now !== undefined, `client "${name}" no longer shows ${phrase} (${before.id}): ${describeQueue(records)}`);
  this.assert.equal(now.columns, before.columns, `authored fields of ${phrase}`);
  this.assert.ok(now.status === 'sealed' || now.status === 'pending', `${phrase} is ${now.status}, neither sealed nor pending`);
});

Then('client {string} still shows the sealed batch that carried it, unchanged', async function (this: SyncWorld, name: string) {
  const sent = (await pushesOf(this, name)).at(-1);
  this.assert.ok(sent !== undefined, `client "${name}" sent no push`);
  const batches = await batchesOf(this, name);
  const batch = batches.find((b) => b.batchId === sent.batchId);
  this.assert.ok(batch !== undefined, `client "${name}" no longer shows batch ${sent.batchId} (it shows ${batches.map((b) => `${b.batchId} ${b.state}`).join(', ') || 'none'})`);
  this.assert.equal(batch.state, 'sealed', `state of batch ${sent.batchId}`);
  this.assert.equal(Buffer.from(batch.requestBytes, 'base64').toString('utf8'), sent.bytes.toString('utf8'), `stored request of batch ${sent.batchId} against the bytes the proxy recorded`);
});

/** The record `phrase` names now, which must be the one the wire carried. */
async function recordOnWire(world: SyncWorld, name: string, phrase: string): Promise<QueueRecord> {
  const records = await queueOf(world, name);
  const record = recordNamed(records, phrase);
  if (record === undefined) throw new Error(`client "${name}" shows no record of ${phrase}: ${describeQueue(records)}`);
  return record;
}

Then(/^(the (?:insert|update|delete) of row "[^"]+") is accepted exactly once on the server$/, async function (this: SyncWorld, phrase: string) {
  const row = /"([^"]+)"$/.exec(phrase)?.[1] as string;
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const record = await recordOnWire(this, name, phrase);
  const outcomes = outcomesGiven(await pushesOf(this, name)).get(record.id) ?? [];
  this.assert.ok(outcomes.length > 0, `no push answer client "${name}" was given accounts for ${phrase} (${record.id})`);
  // A replay answers with the stored outcome: a second application would carry a new version.
  this.assert.equal([...new Set(outcomes.map((o) => `${o.status} ${o.server_version}`))], [`applied ${outcomes[0]?.server_version}`], `outcomes of ${record.id} the client was given`);
  const served = await servedRow(this, record.table, row, (await this.process(name)).userId);
  this.assert.ok(served !== undefined, `the server serves no row ${row}`);
  this.assert.equal(served.serverVersion, outcomes[0]?.server_version, `the version the server holds for ${row}: the one of the single acceptance`);
  for (const [column, value] of Object.entries(record.columns ?? {})) this.assert.equal(served.row[column], value, `${column} of ${row} on the server`);
});

Then(/^client "([^"]+)" shows (the (?:insert|update|delete) of row "[^"]+") with status "([a-z_]+)" and the mutation ID it had before the crash$/, async function (this: SyncWorld, name: string, phrase: string, status: string) {
  const records = await queueOf(this, name);
  const now = written(records).filter((r) => r === recordNamed(records, phrase));
  this.assert.equal(now.length, 1, `client "${name}" shows ${now.length} records of ${phrase}: ${describeQueue(records)}`);
  const record = now[0] as QueueRecord;
  this.assert.equal(record.status, status, `status of ${phrase}`);
  // Seen before the crash when the crash came after the write returned; the wire carried it in every case.
  const before = firstSeen(this, name, phrase);
  if (before !== undefined) this.assert.equal(record.id, before.id, `mutation ID of ${phrase} before and after the crash`);
  const onWire = [...new Set((await pushesOf(this, name)).flatMap((p) => p.mutations).filter((m) => m.op === record.op && JSON.stringify(m.pk).includes(`"${record.recordId}"`)).map((m) => String(m.mutation_id)))];
  this.assert.equal(onWire, [record.id], `mutation IDs the wire carried for ${phrase}`);
});
