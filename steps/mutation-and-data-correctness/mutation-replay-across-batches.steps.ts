/**
 * SYNC-MUT-010 Mutation Replay Across Batches
 * (features/mutation-and-data-correctness/mutation-replay-across-batches.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { editedMutation } from '../support/push-ledger/batch-edits.ts';
import { mutationsFromTable, sentMutations } from '../support/push-ledger/mutation-table.ts';
import { lastPush, ledgerState, notedOutcome, type Obj, outcomeInLastPush, outcomesIn } from '../support/push-ledger/state.ts';
import { currentManifest } from '../support/schema-and-versions/manifests.ts';
import { sendExact } from '../support/wire-values/requests.ts';
import { labelledVersion } from '../support/version-labels.ts';
import type { SyncWorld } from '../support/world.ts';

Given(/^the (accepted|rejected) outcome of mutation "([^"]+)" is remembered as "([^"]+)"$/, function (this: SyncWorld, list: string, mutationId: string, label: string) {
  const reply = lastPush(this);
  const outcome = ((reply.json?.[list] ?? []) as Obj[]).find((o) => o.mutation_id === mutationId);
  if (outcome === undefined) throw new Error(`the ${list} list of the last push has no mutation ${mutationId}: ${reply.text.slice(0, 800)}`);
  ledgerState(this).outcomes.set(label, outcome);
});

Then('the outcome of mutation {string} is member for member equal to {string}', function (this: SyncWorld, mutationId: string, label: string) {
  this.assert.equal(outcomeInLastPush(this, mutationId), notedOutcome(this, label), `the outcome of ${mutationId} against the one stored as ${label}`);
});

Then('the outcome of mutation {string} has outcome_schema equal to the new schema', async function (this: SyncWorld, mutationId: string) {
  const manifest = await currentManifest(this);
  this.assert.equal(outcomeInLastPush(this, mutationId).outcome_schema, { version: manifest.schema_version, hash: manifest.schema_hash }, `outcome_schema of ${mutationId}`);
});

When(/^client "([^"]+)" pushes batch "([^"]+)" with mutation "([^"]+)" changed by (.+), followed by:$/, async function (this: SyncWorld, name: string, batchId: string, mutationId: string, change: string, table: DataTable) {
  const client = this.wire(name);
  const sent = sentMutations(this).get(mutationId);
  if (sent === undefined) throw new Error(`mutation ${mutationId} was not sent earlier in this scenario`);
  const changed = editedMutation(client, sent, change, (label) => labelledVersion(this, label));
  const body = client.pushBody([changed, ...mutationsFromTable(this, client, table)], batchId);
  await sendExact(client, 'push', body);
});

Then('the server holds no row {string} of table {string}', async function (this: SyncWorld, pk: string, table: string) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to read table ${table}`);
  const key = this.model.keyColumn(table).name.replaceAll('"', '""');
  const rows = await server.sourceSql.query(`SELECT 1 FROM public."${table.replaceAll('"', '""')}" WHERE "${key}"::text = $1`, [pk]);
  this.assert.equal(rows.length, 0, `rows ${pk} the source table ${table} holds`);
});

Then('no outcome in the response has code {string}', function (this: SyncWorld, code: string) {
  const reply = lastPush(this);
  this.assert.equal(reply.status, 200, `the last push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  this.assert.equal(outcomesIn(reply).filter((o) => o.code === code).map((o) => o.mutation_id), [], `outcomes with code ${code} in ${reply.text.slice(0, 1000)}`);
});
