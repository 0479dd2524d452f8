/**
 * SYNC-MUT-015 Push Unit Constraint Boundary
 * (features/mutation-and-data-correctness/push-unit-constraint-boundary.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { installDeferredTrigger, lastEntryResult, type Obj, pushInSourceTransaction } from '../support/mutations/push-units.ts';
import { mutationsFromTable } from '../support/push-ledger/mutation-table.ts';
import { lastPush, outcomeInLastPush } from '../support/push-ledger/state.ts';
import { fieldId, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

/** The two list inserts of the last three-mutation batch, by mutation ID. */
const listInserts = new WeakMap<SyncWorld, string[]>();

async function inspectQuery(world: SyncWorld, sql: string, params: unknown[]): Promise<Obj[]> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability`);
  return server.inspect.query(sql, params);
}

Given(/^table "([^"]+)" has a deferred constraint trigger that(,? .+)$/, async function (this: SyncWorld, table: string, behaviour: string) {
  await installDeferredTrigger(this, table, behaviour.replace(/^ /, ''));
});

When(
  /^the harness, in one source database transaction, inserts item "([^"]+)" with list_id "([^"]+)" into "items" and then calls the push entry point for client "([^"]+)" with batch "([^"]+)" inserting row "([^"]+)" of table "items"$/,
  async function (this: SyncWorld, item: string, listId: string, name: string, batchId: string, pushed: string) {
    const client = this.wire(name);
    // The caller's own write leaves a deferred event pending (the deferred foreign key, and any deferred trigger on items).
    const callerWrite = `INSERT INTO public.items (id, owner_id, list_id, label) VALUES ('${item.replace(/'/g, "''")}', '${client.userId.replace(/'/g, "''")}', '${listId.replace(/'/g, "''")}', 'caller')`;
    const mutation = client.mutation({ op: 'insert', table: 'items', pk: pushed, columns: { owner_id: client.userId, list_id: 'l-1', label: 'pushed' } });
    return pushInSourceTransaction(this, name, callerWrite, batchId, [mutation]);
  },
);

Then('the push entry point fails with SQLSTATE {string}', function (this: SyncWorld, sqlstate: string) {
  const result = lastEntryResult(this);
  this.assert.equal('sqlstate' in result ? result.sqlstate : JSON.stringify(result), sqlstate, `the push entry point's result: ${JSON.stringify(result).slice(0, 800)}`);
});

Then('server inspection shows no batch ledger row for batch {string}', async function (this: SyncWorld, batchId: string) {
  const rows = await inspectQuery(this, 'SELECT batch_id::text, state FROM synchro.push_batches WHERE batch_id = $1::uuid', [batchId]);
  this.assert.equal(rows, [], `batch ledger rows of ${batchId}`);
});

Then('server inspection shows no mutation ledger row first sent in batch {string}', async function (this: SyncWorld, batchId: string) {
  const rows = await inspectQuery(this, 'SELECT mutation_id::text, status FROM synchro.push_mutations WHERE first_batch_id = $1::uuid', [batchId]);
  this.assert.equal(rows, [], `mutation ledger rows first sent in ${batchId}`);
});

Then('no firing was ever recorded in table {string}', async function (this: SyncWorld, table: string) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability`);
  if (!/^[a-z_][a-z0-9_]*$/.test(table)) throw new Error(`"${table}" is not a plain lowercase SQL identifier`);
  const [rows] = await server.sourceSql.query<{ n: number; numbered: boolean }>(
    `SELECT (SELECT count(*)::int FROM public.${table}) AS n, (SELECT is_called FROM public.${table}_firing_seq) AS numbered`,
  );
  // A rolled-back firing leaves no row but has drawn a number from the sequence.
  this.assert.equal({ rows: rows?.n, everNumbered: rows?.numbered }, { rows: 0, everNumbered: false }, `firings recorded in ${table}`);
});

When(
  /^client "([^"]+)" pushes a batch of three mutations with the orphan item insert at position ([123]) and valid inserts of lists "([^"]+)" and "([^"]+)" with codes "([^"]+)" and "([^"]+)" at the other positions, where the orphan item insert is:$/,
  async function (this: SyncWorld, name: string, position: string, firstList: string, secondList: string, firstCode: string, secondCode: string, table: DataTable) {
    const client = this.wire(name);
    const [orphan] = mutationsFromTable(this, client, table);
    if (orphan === undefined) throw new Error('the orphan item insert table has no row');
    const lists = [
      client.mutation({ op: 'insert', table: 'lists', pk: firstList, columns: { owner_id: client.userId, name: firstList, code: firstCode } }),
      client.mutation({ op: 'insert', table: 'lists', pk: secondList, columns: { owner_id: client.userId, name: secondList, code: secondCode } }),
    ];
    listInserts.set(this, lists.map((m) => String(m.mutation_id)));
    const mutations = [...lists];
    mutations.splice(Number(position) - 1, 0, orphan);
    await client.post('/sync/push', client.pushBody(mutations), { endpoint: 'push' });
  },
);

Then('the outcome of mutation {string} is in list {string} with status {string} and code {string}', function (this: SyncWorld, mutationId: string, list: string, status: string, code: string) {
  const reply = lastPush(this);
  this.assert.equal(reply.status, 200, `the push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const outcome = ((reply.json?.[list] ?? []) as Obj[]).find((o) => o.mutation_id === mutationId);
  this.assert.ok(outcome, `"${list}" holds mutation ${mutationId}: ${reply.text.slice(0, 1500)}`);
  this.assert.equal({ status: outcome?.status, code: outcome?.code ?? '' }, { status, code }, `the outcome of ${mutationId}`);
});

Then('both list inserts are applied', function (this: SyncWorld) {
  const ids = listInserts.get(this);
  if (ids === undefined) throw new Error('no three-mutation batch with two list inserts was pushed earlier in this scenario');
  const reply = lastPush(this);
  this.assert.equal(reply.status, 200, `the push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const accepted = ((reply.json?.accepted ?? []) as Obj[]).filter((o) => ids.includes(String(o.mutation_id)));
  this.assert.equal(accepted.map((o) => [o.mutation_id, o.status]), ids.map((id) => [id, 'applied']), `the list inserts in ${reply.text.slice(0, 1500)}`);
});

Then(
  'server inspection shows the write fence of row {string} of table {string} carrying mutation {string}',
  async function (this: SyncWorld, pk: string, table: string, mutationId: string) {
    const tableId = (await tableNamed(this, table)).table_id;
    const rows = await inspectQuery(this, 'SELECT mutation_id::text AS mutation_id FROM synchro.row_versions WHERE table_id = $1 AND pk_text = $2', [tableId, pk]);
    this.assert.equal(rows.map((r) => r.mutation_id), [mutationId], `the write fence of ${table} ${pk}`);
  },
);

Then(/^the accepted outcome of mutation "([^"]+)" has a server_row with ([a-z_]+) "([^"]*)"$/, async function (this: SyncWorld, mutationId: string, column: string, value: string) {
  const outcome = outcomeInLastPush(this, mutationId);
  this.assert.equal(outcome.status, 'applied', `status of ${mutationId}: ${JSON.stringify(outcome)}`);
  const table = await tableNamed(this, String(outcome.table));
  this.assert.equal((outcome.server_row as Obj | undefined)?.[fieldId(table, column)], value, `server_row ${column} of ${mutationId}: ${JSON.stringify(outcome.server_row)}`);
});
