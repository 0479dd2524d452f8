/**
 * SYNC-MUT-014 Atomic Mutation Group
 * (features/mutation-and-data-correctness/atomic-mutation-group.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { atomicEnvelopeDefect } from '../support/mutations/atomic-groups.ts';
import { mutationsFromTable } from '../support/push-ledger/mutation-table.ts';
import { lastPush, ledgerState, type Obj } from '../support/push-ledger/state.ts';
import { fieldId, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

/** The outcome the last "has exactly the members" step read, for the "that outcome" step after it. */
const examined = new WeakMap<SyncWorld, { outcome: Obj; requestSchema: unknown }>();

function rejectedOutcome(world: SyncWorld, mutationId: string): Obj {
  const reply = lastPush(world);
  world.assert.equal(reply.status, 200, `the last push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const outcome = ((reply.json?.rejected ?? []) as Obj[]).find((o) => o.mutation_id === mutationId);
  world.assert.ok(outcome, `the rejected list of the last push holds mutation ${mutationId}: ${reply.text.slice(0, 1500)}`);
  return outcome ?? {};
}

Given('client {string} has pushed atomic batch {string} with:', async function (this: SyncWorld, name: string, batchId: string, table: DataTable) {
  const client = this.wire(name);
  const body = { ...client.pushBody(mutationsFromTable(this, client, table), batchId), atomic: true };
  const reply = await client.post('/sync/push', body, { endpoint: 'push' });
  const batches = ledgerState(this).batches;
  if (!batches.has(batchId)) batches.set(batchId, { client: name, batchId, requestText: reply.requestText, first: reply });
  if (reply.status !== 200) throw new Error(`atomic batch ${batchId} of client "${name}" was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

Then(/^the (accepted|rejected) list is empty$/, function (this: SyncWorld, list: 'accepted' | 'rejected') {
  const reply = lastPush(this);
  this.assert.equal(reply.status, 200, `the last push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  this.assert.equal(reply.json?.[list], [], `"${list}" of ${reply.text.slice(0, 1500)}`);
});

Then(
  /^the rejected outcome of mutation "([^"]+)" has a server_row with ([a-z_]+) "([^"]*)" and ([a-z_]+) "([^"]*)"$/,
  async function (this: SyncWorld, mutationId: string, firstColumn: string, firstValue: string, secondColumn: string, secondValue: string) {
    const outcome = rejectedOutcome(this, mutationId);
    const table = await tableNamed(this, String(outcome.table));
    const row = (outcome.server_row ?? {}) as Obj;
    this.assert.equal(
      { [firstColumn]: row[fieldId(table, firstColumn)], [secondColumn]: row[fieldId(table, secondColumn)] },
      { [firstColumn]: firstValue, [secondColumn]: secondValue },
      `server_row of ${mutationId}: ${JSON.stringify(outcome)}`,
    );
  },
);

Then(/^the rejected outcome of mutation "([^"]+)" has exactly the members ((?:[a-z_]+, )*[a-z_]+) and ([a-z_]+)$/, function (this: SyncWorld, mutationId: string, listed: string, last: string) {
  const outcome = rejectedOutcome(this, mutationId);
  const expected = [...listed.split(', '), last].sort();
  this.assert.equal(Object.keys(outcome).sort(), expected, `members of the outcome of ${mutationId}: ${JSON.stringify(outcome)}`);
  examined.set(this, { outcome, requestSchema: JSON.parse(lastPush(this).requestText).schema });
});

Then(
  'that outcome has status {string}, code {string}, message {string} and outcome_schema equal to the request schema',
  function (this: SyncWorld, status: string, code: string, message: string) {
    const seen = examined.get(this);
    if (seen === undefined) throw new Error('no outcome was examined by an earlier "has exactly the members" step');
    const { outcome, requestSchema } = seen;
    this.assert.equal(
      { status: outcome.status, code: outcome.code, message: outcome.message, outcome_schema: outcome.outcome_schema },
      { status, code, message, outcome_schema: requestSchema },
      `the examined outcome ${JSON.stringify(outcome)}`,
    );
  },
);

Then(
  /^the rejected outcome of mutation "([^"]+)" has status "([^"]+)", code "([^"]+)" and no member ((?:"[a-z_]+", )*"[a-z_]+") or ("[a-z_]+")$/,
  function (this: SyncWorld, mutationId: string, status: string, code: string, listed: string, last: string) {
    const outcome = rejectedOutcome(this, mutationId);
    const forbidden = [...listed.split(', '), last].map((quoted) => quoted.slice(1, -1));
    this.assert.equal({ status: outcome.status, code: outcome.code }, { status, code }, `the outcome of ${mutationId}`);
    this.assert.equal(forbidden.filter((name) => Object.hasOwn(outcome, name)), [], `members the outcome of ${mutationId} must not have: ${JSON.stringify(outcome)}`);
  },
);

When(/^client "([^"]+)" sends a push request whose envelope has (.+)$/, async function (this: SyncWorld, name: string, defect: string) {
  const body = atomicEnvelopeDefect(this, name, defect);
  await this.wire(name).post('/sync/push', body, { endpoint: 'push', invalid: true });
});
