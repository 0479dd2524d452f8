/**
 * Shared steps (used by several requirements).
 * The client under test as an application writing through its local SQL
 * surface while its queue is observed: single statements, syncs left running
 * in the background, crashes at named points and restarts, reads of its local
 * tables, the explicit rejection policy, and what its queue shows.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { rejectionsOf } from '../support/local-queue/rejections.ts';
import { restartAfterCrash, syncInBackground } from '../support/mutations/holds.ts';
import { pushesOf, serverOutcomes } from '../support/mutations/pushes.ts';
import { batchesOf, describeQueue, ofRow, queueOf, recordNamed, written } from '../support/mutations/queue.ts';
import { queueState } from '../support/mutations/state.ts';
import { runApplicationSql } from '../support/mutations/writes.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { localRowsAsText } from '../support/push-ledger/client-outcomes.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" (?:syncs in the background|is killed and restarted|will crash at point|is restarted|query "|shows |still shows |emitted |stores )/);

processPhrase(/^the application on client "([^"]+)"/);

processPhrase(/^the record count of client "([^"]+)"/);

When('client {string} executes SQL {string}', async function (this: SyncWorld, name: string, sql: string) {
  // One statement in its own local transaction; what it captured is recorded ("that mutation", "the update setting price").
  await runApplicationSql(this, name, sql);
});

When('client {string} syncs in the background', async function (this: SyncWorld, name: string) {
  await syncInBackground(this, name);
});

When('client {string} is killed and restarted', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  // SIGKILL: the client comes back from what was durable at that instant.
  await client.process.restart();
  queueState(this).restartMarks.set(name, (await this.proxy()).exchanges.length);
  queueState(this).batchesAtRestart.set(name, await batchesOf(this, name));
});

Given('client {string} will crash at point {string}', async function (this: SyncWorld, name: string, point: string) {
  const client = await this.process(name);
  const { points } = await client.call<{ points: string[] }>('crashPoints');
  if (!points.includes(point)) return undeterminedWithout(this, `client "${name}" offers no crash point "${point}" (it lists ${points.join(', ') || 'none'})`);
  await client.call('armCrash', { point });
  queueState(this).crashArmed.set(name, point);
  return undefined;
});

When('client {string} is restarted', async function (this: SyncWorld, name: string) {
  await restartAfterCrash(this, name);
  // What the client had stored when it died, read before it does anything else.
  queueState(this).batchesAtRestart.set(name, await batchesOf(this, name));
});

// The SQL may itself hold double quotes (quoted identifiers): everything between the outer quotes is the query.
Then(/^client "([^"]+)" query "(.*)" returns:$/, async function (this: SyncWorld, name: string, sql: string, expected: DataTable) {
  this.assert.equal(await localRowsAsText(this, name, sql), expected.hashes(), `rows of ${sql} on client "${name}"`);
});

When('the application on client {string} clears retained rejections', async function (this: SyncWorld, name: string) {
  await (await this.process(name)).call('clearRejections');
});

Then('client {string} shows no mutation record', async function (this: SyncWorld, name: string) {
  const records = await queueOf(this, name);
  this.assert.equal(records.length, 0, `client "${name}" shows mutation records: ${describeQueue(records)}`);
});

Then(/^client "([^"]+)" shows (?:the mutation record of )?(the (?:(?:first|second|third) )?(?:insert|update|delete) of row "[^"]+") with status "([a-z_]+)"$/, async function (this: SyncWorld, name: string, phrase: string, status: string) {
  const records = await queueOf(this, name);
  const record = recordNamed(records, phrase);
  this.assert.ok(record !== undefined, `client "${name}" shows no record of ${phrase}: ${describeQueue(records)}`);
  this.assert.equal(record.status, status, `status of ${phrase} on client "${name}" (${describeQueue(records)})`);
});

Then(/^client "([^"]+)" shows exactly one mutation record, the (insert|update|delete) of row "([^"]+)", with status "([a-z_]+)"$/, async function (this: SyncWorld, name: string, op: string, row: string, status: string) {
  const records = await queueOf(this, name);
  this.assert.equal(
    records.map((r) => ({ op: r.op, row: r.recordId, status: r.status })),
    [{ op, row, status }],
    `the records client "${name}" shows (${describeQueue(records)})`,
  );
});

Then('client {string} shows exactly one mutation record for row {string}, with status {string}', async function (this: SyncWorld, name: string, row: string, status: string) {
  const records = ofRow(await queueOf(this, name), row);
  this.assert.equal(records.length, 1, `client "${name}" shows ${records.length} records for row ${row}: ${describeQueue(records)}`);
  this.assert.equal(records[0]?.status, status, `status of the one record of row ${row}`);
  // Later steps say "that mutation ID".
  if (records[0] !== undefined) queueState(this).labels.set('that mutation ID', records[0].id);
});

Then('the proxy recorded no push from client {string}', async function (this: SyncWorld, name: string) {
  const pushes = await pushesOf(this, name);
  this.assert.equal(
    pushes.map((p) => p.batchId),
    [],
    `client "${name}" sent push requests carrying ${pushes.flatMap((p) => p.mutations.map((m) => `${String(m.op)} ${JSON.stringify(m.pk)}`)).join(', ')}`,
  );
});

Then('every mutation ID client {string} captured appears exactly once in its inspection output, with one status', async function (this: SyncWorld, name: string) {
  const records = await queueOf(this, name);
  const shown = records.map((r) => r.id);
  const captured = new Set([...(queueState(this).seen.get(name)?.keys() ?? [])]);
  // Every mutation the client ever put on the wire was captured too.
  for (const push of await pushesOf(this, name)) for (const m of push.mutations) captured.add(String(m.mutation_id));
  this.assert.ok(captured.size > 0, `client "${name}" was never seen holding a mutation`);
  this.assert.equal(
    [...captured].filter((id) => shown.filter((s) => s === id).length !== 1),
    [],
    `mutation IDs client "${name}" captured that it does not now show exactly once (${describeQueue(records)})`,
  );
  const statuses = new Set(['pending', 'sealed', 'accepted', 'server_rejected', 'superseded_before_send', 'cancelled_before_send', 'blocked_by_predecessor', 'exceeds_push_limit']);
  this.assert.equal(
    records.filter((r) => !statuses.has(r.status)).map((r) => `${r.id}: ${r.status}`),
    [],
    `records of client "${name}" outside the one-status vocabulary`,
  );
});

Then(/^client "([^"]+)" shows no record (?:for|of) the (insert|update|delete) of row "([^"]+)"$/, async function (this: SyncWorld, name: string, op: string, row: string) {
  const records = written(ofRow(await queueOf(this, name), row)).filter((r) => r.op === op);
  this.assert.equal(records.length, 0, `client "${name}" still shows ${describeQueue(records)}`);
});

Then('the update of {string} reached exactly one push outcome, which client {string} inspects', async function (this: SyncWorld, row: string, name: string) {
  const pushes = await pushesOf(this, name);
  const ids = [...new Set(pushes.flatMap((p) => p.mutations).filter((m) => m.op === 'update' && String(keyValue(m.pk)) === row).map((m) => String(m.mutation_id)))];
  this.assert.equal(ids.length, 1, `mutation IDs under which client "${name}" pushed an update of ${row}: ${ids.join(', ') || 'none'}`);
  const id = ids[0] as string;
  const outcomes = serverOutcomes(pushes, id);
  const distinct = [...new Set(outcomes.map((o) => `${String(o.status)} ${String(o.code ?? '')} ${String(o.server_version ?? '')}`))];
  this.assert.equal(distinct.length, 1, `outcomes the server gave the update of ${row} (${id}): ${distinct.join('; ') || 'none'}`);
  const shown = (await queueOf(this, name)).find((r) => r.id === id);
  const rejection = (await rejectionsOf(this, name)).find((r) => r.mutationId === id);
  const status = String(outcomes[0]?.status);
  // Applied leaves the retained view as accepted; conflict and rejected_terminal are kept as a rejection for the application.
  if (status === 'applied') this.assert.ok(shown === undefined || shown.status === 'accepted', `client "${name}" shows the applied update ${id} as ${JSON.stringify(shown)}`);
  else this.assert.equal({ status: rejection?.status, code: rejection?.code }, { status, code: outcomes[0]?.code }, `the rejection client "${name}" shows for ${id}: ${JSON.stringify(rejection)}`);
});
