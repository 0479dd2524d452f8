/**
 * SYNC-MUT-004 Canonical Server Outcome
 * (features/mutation-and-data-correctness/canonical-server-outcome.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf, deliveredOf, exchangesOf } from '../support/exchanges.ts';
import { deliveredOutcomes, pushesOf } from '../support/mutations/pushes.ts';
import { queueOf } from '../support/mutations/queue.ts';
import { capturedBy, lastWrite, thatMutationOf } from '../support/mutations/writes.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { localRow, rowDifferences, singleOutOutcome, storedVersion, storedVersions, thatOutcomeOfClient } from '../support/push-ledger/client-outcomes.ts';
import type { Obj } from '../support/push-ledger/state.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { labelledVersion, writerVersion } from '../support/version-labels.ts';
import { outcomesOf } from '../support/wire-values/outcomes.ts';
import { keyValue, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the push outcome the proxy delivered to client "([^"]+)"/);
processPhrase(/^client "([^"]+)" shows the update/);
processPhrase(/^the (?:second|last) push of client "([^"]+)"/);
processPhrase(/^for every row with a terminal mutation, client "([^"]+)"/);

// The writes of another client (client "W" updates, inserts, deletes a row) are shared: steps/common/wire-writers.steps.ts.

Given('nothing changed on the server', () => undefined);

// --- the outcome the client was given -------------------------------------------------------

Then(
  /^the push outcome the proxy delivered to client "([^"]+)" for that mutation has status "([^"]+)" and code "([^"]*)"( and no server_row| and no server_version)?$/,
  async function (this: SyncWorld, name: string, status: string, code: string, absent: string | null) {
    const id = thatMutationOf(this, name);
    const outcomes = await deliveredOutcomes(this, name, id);
    this.assert.equal(outcomes.length, 1, `outcomes the proxy delivered to client "${name}" for mutation ${id}`);
    const outcome = outcomes[0] as Obj;
    singleOutOutcome(this, name, outcome);
    this.assert.equal({ status: outcome.status, code: outcome.code ?? '' }, { status, code }, `the outcome of ${id}: ${JSON.stringify(outcome)}`);
    if (typeof absent === 'string') {
      const member = absent.includes('server_row') ? 'server_row' : 'server_version';
      this.assert.ok(!Object.hasOwn(outcome, member), `the outcome of ${id} carries no ${member}: ${JSON.stringify(outcome)}`);
    }
  },
);

Then('client {string} stores, for row {string} of table {string}, the server_version of that outcome', async function (this: SyncWorld, name: string, pk: string, table: string) {
  const outcome = thatOutcomeOfClient(this, name);
  this.assert.ok(typeof outcome.server_version === 'string', `that outcome carries a server_version: ${JSON.stringify(outcome)}`);
  this.assert.equal(await storedVersion(this, name, table, pk), outcome.server_version, `the server_version client "${name}" stores for ${table} ${pk}`);
});

Then("client {string} stores, for row {string} of table {string}, the server_version of client {string}'s update", async function (this: SyncWorld, name: string, pk: string, table: string, writer: string) {
  this.assert.equal(await storedVersion(this, name, table, pk), writerVersion(this, writer, pk, table), `the server_version client "${name}" stores for ${table} ${pk}`);
});

Then(
  /^client "([^"]+)" query of row "([^"]+)" of table "([^"]+)" returns the outcome's (server_row|tombstone)(?:, with (\w+) (not null|"[^"]*"))?$/,
  async function (this: SyncWorld, name: string, pk: string, table: string, kind: string, column: string | null, expected: string | null) {
    const outcome = thatOutcomeOfClient(this, name);
    const serverRow = outcome.server_row as Obj | undefined;
    this.assert.ok(serverRow !== undefined && serverRow !== null, `that outcome carries a server_row: ${JSON.stringify(outcome)}`);
    const shape = await tableNamed(this, String(outcome.table));
    const local = await localRow(this, name, table, pk);
    this.assert.ok(local !== undefined, `client "${name}" holds row ${pk} of ${table}`);
    this.assert.equal(rowDifferences(shape, serverRow as Obj, local ?? {}), [], `local row ${pk} of ${table} on client "${name}" against the outcome's ${kind}`);
    if (kind === 'tombstone') this.assert.ok(shape.fields.some((f) => f.name === 'deleted_at' && serverRow?.[f.field_id] !== null), `the outcome's row is a tombstone: ${JSON.stringify(serverRow)}`);
    if (typeof column === 'string') {
      const value = local?.[column];
      if (expected === 'not null') this.assert.ok(value !== null && value !== undefined, `${column} of the local row ${pk} is not null`);
      else this.assert.equal(value, JSON.parse(String(expected)), `${column} of the local row ${pk}`);
    }
  },
);

// --- later local intent while the outcome is in flight --------------------------------------

// Holding the next push or pull answer and syncing in the background are shared: steps/common/proxy-queue.steps.ts, client-queue.steps.ts.

Then(/^client "([^"]+)" shows the update of row "([^"]+)" setting (\w+) "([^"]*)" with status "([^"]+)" and its authored fields intact$/, async function (this: SyncWorld, name: string, pk: string, column: string, value: string, status: string) {
  const id = capturedBy(this, name, new RegExp(`SET ${column} =`));
  const mutation = (await queueOf(this, name)).find((m) => m.id === id);
  this.assert.ok(mutation, `client "${name}" still shows mutation ${id}`);
  this.assert.equal(
    { op: mutation?.op, recordId: mutation?.recordId, status: mutation?.status, columns: mutation?.columns },
    { op: 'update', recordId: pk, status, columns: { [column]: value } },
    `the update of ${pk} setting ${column} on client "${name}"`,
  );
});

Then(
  'the second push of client {string} carries the price update with the mutation ID it was captured with and base_version equal to the server_version returned for the body update',
  async function (this: SyncWorld, name: string) {
    const priceUpdate = capturedBy(this, name, /SET price =/);
    const bodyUpdate = capturedBy(this, name, /SET body =/);
    const pushes = await pushesOf(this, name);
    this.assert.ok(pushes.length >= 2, `client "${name}" sent ${pushes.length} push requests`);
    const returned = (await deliveredOutcomes(this, name, bodyUpdate)).at(-1);
    this.assert.ok(typeof returned?.server_version === 'string', `the body update was answered with a server_version: ${JSON.stringify(returned)}`);
    const carried = pushes[1]?.mutations.find((m) => m.mutation_id === priceUpdate);
    this.assert.ok(carried, `the second push of client "${name}" carries mutation ${priceUpdate}: ${pushes[1]?.bytes.toString('utf8').slice(0, 500)}`);
    this.assert.equal(carried?.base_version, returned?.server_version, 'base_version of the price update');
  },
);

// --- the next write goes out from the reconciled base ---------------------------------------

Then("the last push of client {string} carries the update of row {string} with base_version equal to the server_version of client {string}'s update, not {string}", async function (this: SyncWorld, name: string, pk: string, writer: string, old: string) {
  const last = (await pushesOf(this, name)).at(-1);
  const update = last?.mutations.find((m) => m.op === 'update' && keyValue(m.pk) === pk);
  this.assert.ok(update, `the last push of client "${name}" carries an update of ${pk}: ${last?.bytes.toString('utf8').slice(0, 500)}`);
  const expected = writerVersion(this, writer, pk);
  this.assert.equal(update?.base_version, expected, `base_version of the update of ${pk}`);
  this.assert.notEqual(update?.base_version, labelledVersion(this, old), `base_version of the update of ${pk} against ${old}`);
});

Then('that update is accepted', async function (this: SyncWorld) {
  const { name } = lastWrite(this);
  const id = thatMutationOf(this, name);
  const outcomes = await deliveredOutcomes(this, name, id);
  this.assert.equal(outcomes.map((o) => o.status), ['applied'], `the outcomes delivered for the update ${id}`);
});

/** The latest version the proxy delivered to client `name` for each row: push outcomes, pull changes, rebuild records in log order. */
async function deliveredVersions(world: SyncWorld, name: string): Promise<Map<string, string | undefined>> {
  const latest = new Map<string, string | undefined>();
  for (const e of await exchangesOf(world, name, { endpoints: ['push', 'pull', 'rebuild'] })) {
    const answer = deliveredOf(e);
    if (answer?.status !== 200) continue;
    const body = (bodyOf(answer.body) ?? {}) as Obj;
    const items = e.endpoint === 'push' ? outcomesOf(body) : e.endpoint === 'pull' ? ((body.changes ?? []) as Obj[]) : ((body.records ?? []) as Obj[]);
    for (const item of items) {
      const key = `${String(item.table)}\u0000${String(keyValue(item.pk))}`;
      const terminal = e.endpoint === 'push' && item.status === 'rejected_terminal';
      // A terminal rejection carries no row state: it leaves the base as it was.
      if (!terminal) latest.set(key, typeof item.server_version === 'string' ? item.server_version : undefined);
    }
  }
  return latest;
}

Then('for every row with a terminal mutation, client {string} stores the server_version of the latest outcome or pulled change the proxy delivered for that row', async function (this: SyncWorld, name: string) {
  const finished = (await queueOf(this, name)).filter((m) => m.status === 'accepted' || m.status === 'server_rejected');
  this.assert.ok(finished.length > 0, `client "${name}" shows no mutation with a server outcome`);
  const delivered = await deliveredVersions(this, name);
  const stored = await storedVersions(this, name);
  for (const m of finished) {
    const tableId = (await tableNamed(this, m.table)).table_id;
    const key = `${tableId}\u0000${String(m.recordId)}`;
    this.assert.ok(delivered.has(key), `the proxy delivered row state for ${m.table} ${m.recordId} to client "${name}"`);
    const version = stored.find((v) => v.table === tableId && v.recordId === m.recordId)?.serverVersion;
    this.assert.equal(version, delivered.get(key), `the server_version client "${name}" stores for ${m.table} ${m.recordId}`);
  }
});

// --- a row the server keeps no trace of -----------------------------------------------------

/**
 * No protocol operation or adapter control removes a deletion fence: the
 * server keeps fences for good. The scenario needs the state anyway (a row a
 * client holds that the server answers with a rowless row_not_found), so the
 * operator edits the database by hand: the source row goes, then its fence in
 * the reference's fence table. A server whose fences live elsewhere cannot be
 * brought there, and the scenario is undetermined for it.
 */
Given('the operator removes row {string} of table {string} and its deletion fence, so that the server holds no trace of it', async function (this: SyncWorld, pk: string, table: string) {
  const server = await this.readyServer();
  if (!server.provision) return undeterminedWithout(this, `server adapter "${server.id}" has no provision capability to edit the database`);
  const tableId = (await tableNamed(this, table)).table_id;
  const key = this.model.keyColumn(table).name;
  const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
  try {
    await server.provision.exec(
      `BEGIN; DELETE FROM public."${table.replaceAll('"', '""')}" WHERE "${key.replaceAll('"', '""')}"::text = ${literal(pk)};
       DELETE FROM synchro.row_versions WHERE table_id = ${literal(tableId)} AND pk_text = ${literal(pk)}; COMMIT;`,
    );
  } catch (error) {
    return undeterminedWithout(this, `no adapter control removes a deletion fence, and the reference's fence table could not be edited on server "${server.id}": ${(error as Error).message}`);
  }
  await awaitCapture(this);
  return undefined;
});
