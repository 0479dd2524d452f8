/**
 * SYNC-LOCAL-006 Scope Cleanup Preserves Pending Intent
 * (features/local-metadata/scope-cleanup-preserves-pending-intent.feature):
 * the steps only this requirement uses. Each cleanup path (assignment loss
 * learnt at connect, seed cleanup at first connect, rebuild reset and final
 * pruning) runs while local intent is still unresolved; the checks read the
 * client's rows, provenance, scope state and queue through its inspection
 * calls, and what it pushed through the proxy records. Helpers are in
 * steps/support/scope-cleanup/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { scopeState } from '../support/integrity/context.ts';
import { localKeys, mintGeneration, namedProvenance } from '../support/local-queue/provenance.ts';
import { durablePart, recordedQueue } from '../support/local-queue/recorded.ts';
import { pushesOf, rowMatcher, serverOutcomes } from '../support/mutations/pushes.ts';
import { recordNamed } from '../support/mutations/queue.ts';
import { blockPushes, describeIntent, moveToTeam, rejectPushedUpdates, UNSENT, unresolvedView } from '../support/scope-cleanup/intent.ts';
import { outcomesOf } from '../support/wire-values/outcomes.ts';
import { keyValue, type Obj } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the proxy blocks push requests from client "([^"]+)"$/);
processPhrase(/^client "([^"]+)" (?:no longer has rows |has row "[^"]+" of "[^"]+" with "[^"]+" "[^"]+" and row |inspection shows (?:no cursor|the update of|exactly the mutations)|syncs with push requests blocked$|applied that outcome )/);

Given('the proxy blocks push requests from client {string}', async function (this: SyncWorld, name: string) {
  await blockPushes(this, name);
});

When('client {string} syncs with push requests blocked', async function (this: SyncWorld, name: string) {
  await blockPushes(this, name);
  await this.inSyncWindow(name, 'syncs', () => this.syncProcess(name));
});

Given('the server write policy rejects every update of {string} by user {string}', async function (this: SyncWorld, table: string, _user: string) {
  // Only this user's clients push in the scenarios that say so; the policy tells pushed updates from harness commits.
  await rejectPushedUpdates(this, table);
});

Given('the server moves row {string} to team {string} and a new membership generation is minted for scope {string}', async function (this: SyncWorld, row: string, team: string, scope: string) {
  await moveToTeam(this, 'notes', row, team);
  await mintGeneration(this, 'notes', scope);
});

Then('client {string} has row {string} of {string} with {string} {string} and row {string} with {string} {string}', async function (this: SyncWorld, name: string, first: string, table: string, firstColumn: string, firstValue: string, second: string, secondColumn: string, secondValue: string) {
  const key = this.model.keyColumn(table).name;
  const client = await this.process(name);
  for (const [row, column, value] of [[first, firstColumn, firstValue], [second, secondColumn, secondValue]] as const) {
    const { rows } = await client.call<{ rows: Obj[] }>('query', { sql: `SELECT CAST("${column}" AS TEXT) AS v FROM "${table}" WHERE CAST("${key}" AS TEXT) = ?`, params: [row] });
    this.assert.equal(rows.map((r) => r.v), [value], `${column} of row ${row} of ${table} on client "${name}"`);
  }
});

Then('client {string} provenance holds nothing for scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const edges = (await namedProvenance(this, name)).filter((e) => e.scope === scope);
  this.assert.equal(edges.map((e) => `${e.table} ${e.record}`), [], `provenance edges client "${name}" still records for ${scope}`);
});

Then('client {string} inspection shows no cursor, checksum or rebuild attempt for {string}', async function (this: SyncWorld, name: string, scope: string) {
  const state = await scopeState(this, name, scope);
  this.assert.equal(
    { cursor: state?.cursor ?? null, checksum: state?.checksum ?? null },
    { cursor: null, checksum: null },
    `what client "${name}" still stores for the removed scope ${scope}: ${JSON.stringify(state)}`,
  );
  const { rebuilds } = await (await this.process(name)).call<{ rebuilds: { scopeId: string }[] }>('inspectRebuilds');
  this.assert.equal(rebuilds.filter((r) => r.scopeId === scope).length, 0, `rebuild attempts client "${name}" keeps for the removed scope ${scope}: ${JSON.stringify(rebuilds)}`);
});

Then(/^client "([^"]+)" inspection shows the update of "([^"]+)" still unsent and no other mutation$/, async function (this: SyncWorld, name: string, row: string) {
  const { records, answered } = await unresolvedView(this, name);
  this.assert.equal(
    records.map((r) => ({ op: r.op, row: r.recordId, unsent: UNSENT.has(r.status) && !answered.has(r.id) })),
    [{ op: 'update', row, unsent: true }],
    `the mutations client "${name}" shows (${describeIntent(records, answered)})`,
  );
});

Then(/^client "([^"]+)" inspection shows the (insert|update|delete) of "([^"]+)" and the (insert|update|delete) of "([^"]+)" still unsent$/, async function (this: SyncWorld, name: string, firstOp: string, firstRow: string, secondOp: string, secondRow: string) {
  const { records, answered } = await unresolvedView(this, name);
  for (const phrase of [`the ${firstOp} of row "${firstRow}"`, `the ${secondOp} of row "${secondRow}"`]) {
    const record = recordNamed(records, phrase);
    this.assert.ok(record !== undefined && UNSENT.has(record.status) && !answered.has(record.id), `client "${name}" shows ${phrase} unsent (${describeIntent(records, answered)})`);
  }
  this.assert.equal(records.length, 2, `the mutations client "${name}" shows (${describeIntent(records, answered)})`);
});

Then(/^client "([^"]+)" inspection shows exactly the mutations recorded as "([^"]+)", (unsent|unchanged)$/, async function (this: SyncWorld, name: string, label: string, how: string) {
  const before = recordedQueue(this, label);
  const { records, answered } = await unresolvedView(this, name);
  this.assert.equal(records.map(durablePart), before.map(durablePart), `the mutations client "${name}" shows against those recorded as "${label}" (${describeIntent(records, answered)})`);
  if (how === 'unsent') this.assert.equal(records.filter((r) => !UNSENT.has(r.status) || answered.has(r.id)).map((r) => `${r.op} ${r.recordId} ${r.status}`), [], `mutations of client "${name}" no longer unsent`);
  else this.assert.equal(records.map((r) => r.status), before.map((r) => r.status), `statuses of the mutations client "${name}" shows against "${label}"`);
});

Then(/^the proxy recorded no push from client "([^"]+)" that carries a "(insert|update|delete)" of "([^"]+)", "([^"]+)" or "([^"]+)"$/, async function (this: SyncWorld, name: string, op: string, first: string, second: string, third: string) {
  const rows = [first, second, third];
  const pushes = await pushesOf(this, name);
  const carried = pushes.flatMap((p) => p.mutations).filter((m) => m.op === op && rows.includes(String(keyValue(m.pk))));
  this.assert.equal(carried.map((m) => `${String(m.op)} ${String(keyValue(m.pk))}`), [], `what the push requests of client "${name}" carried`);
});

Then('the proxy recorded no push from client {string} after the rejection', async function (this: SyncWorld, name: string) {
  const pushes = await pushesOf(this, name);
  const rejectedAt = pushes.findIndex((p) => outcomesOf(p.answerBody).some((o) => o.status === 'rejected_terminal'));
  this.assert.ok(rejectedAt >= 0, `no push of client "${name}" was answered with a rejection`);
  this.assert.equal(
    pushes.slice(rejectedAt + 1).map((p) => p.mutations.map((m) => `${String(m.op)} ${String(keyValue(m.pk))}`).join(', ')),
    [],
    `push requests client "${name}" sent after the rejection`,
  );
});

const pushedUpdate = new WeakMap<SyncWorld, { name: string; row: string; id: string }>();

Then('the proxy recorded from client {string} a push carrying the update of {string}', async function (this: SyncWorld, name: string, row: string) {
  const matches = await rowMatcher(this, 'notes', row);
  const carried = (await pushesOf(this, name)).flatMap((p) => p.mutations).filter((m) => m.op === 'update' && matches(m));
  this.assert.ok(carried.length > 0, `client "${name}" pushed no update of ${row}`);
  if (carried[0] !== undefined) pushedUpdate.set(this, { name, row, id: String(carried[0].mutation_id) });
});

function thePushedUpdate(world: SyncWorld, row: string): { name: string; row: string; id: string } {
  const update = pushedUpdate.get(world);
  if (update === undefined || update.row !== row) throw new Error(`no earlier step found the pushed update of ${row}`);
  return update;
}

Then('client {string} applied that outcome to row {string} as the push reconciliation rules say', async function (this: SyncWorld, name: string, row: string) {
  const { id } = thePushedUpdate(this, row);
  const outcome = serverOutcomes(await pushesOf(this, name), id)[0];
  const keys = await localKeys(this, name, 'notes');
  const { records, answered } = await unresolvedView(this, name);
  this.assert.equal(records.filter((r) => UNSENT.has(r.status)).map((r) => `${r.op} ${r.recordId}`), [], `intent client "${name}" still holds after the outcome (${describeIntent(records, answered)})`);
  if (outcome?.status === 'applied') {
    // The edit is the server's row now; with the assignment gone nothing justifies it and no intent protects it.
    this.assert.ok(!keys.includes(row), `client "${name}" still holds row ${row} after its edit was applied and the scope removed (rows: ${keys.join(', ')})`);
  } else {
    // A rejection is retained for the application: the row keeps what the user wrote until the application resolves it.
    this.assert.ok(keys.includes(row), `client "${name}" dropped row ${row} whose edit was rejected (${String(outcome?.status)} ${String(outcome?.code)})`);
  }
});
