/**
 * Push outcomes as the harness's own client received them: "that outcome" is
 * the one outcome of the last push response.
 */
import { Then } from '@cucumber/cucumber';
import type { SyncWorld } from '../support/world.ts';
import { fieldId, type Obj, tableNamed } from './recorded.ts';
import { thatMutation } from './requests.steps.ts';

function outcomesOf(json: Obj | undefined): Obj[] {
  return [...((json?.accepted ?? []) as Obj[]), ...((json?.rejected ?? []) as Obj[])];
}

/** The single outcome of the last push response. */
function thatOutcome(world: SyncWorld): Obj {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'push');
  if (!reply) throw new Error('no push response has been received in this scenario');
  world.assert.equal(reply.status, 200, `the last push was answered ${reply.status}: ${reply.text}`);
  const outcomes = outcomesOf(reply.json);
  world.assert.equal(outcomes.length, 1, `"that outcome" needs a push response with exactly one outcome: ${reply.text}`);
  return outcomes[0] as Obj;
}

/** The outcome of `mutationId` in whichever push response carried it (the latest one). */
function outcomeAnywhere(world: SyncWorld, mutationId: string): Obj | undefined {
  for (const reply of [...world.replies].reverse()) {
    if (reply.endpoint !== 'push' || reply.status !== 200) continue;
    const found = outcomesOf(reply.json).find((o) => o.mutation_id === mutationId);
    if (found) return found;
  }
  return undefined;
}

Then(/^the push outcomes of mutations ((?:"[^"]+"(?:, | and ))+"[^"]+") are "([^"]+)"$/, function (this: SyncWorld, list: string, status: string) {
  const ids = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
  for (const id of ids) {
    const outcome = outcomeAnywhere(this, id);
    this.assert.ok(outcome, `no push response carried an outcome for mutation ${id}`);
    this.assert.equal(outcome.status, status, `outcome of ${id}: ${JSON.stringify(outcome)}`);
  }
});

Then('the push outcome of that mutation is {string}', function (this: SyncWorld, status: string) {
  const id = thatMutation(this);
  const outcome = outcomeAnywhere(this, id);
  const sent = [...this.replies].reverse().find((r) => r.endpoint === 'push' && r.requestText.includes(id))?.requestText;
  this.assert.ok(outcome, `no push response carried an outcome for mutation ${id}`);
  this.assert.equal(outcome.status, status, `outcome of ${id}: ${JSON.stringify(outcome)}; the request was ${sent}`);
});

async function serverRowField(world: SyncWorld, column: string): Promise<unknown> {
  const outcome = thatOutcome(world);
  const row = outcome.server_row as Obj | undefined;
  world.assert.ok(row !== undefined && row !== null, `the outcome carries no server_row: ${JSON.stringify(outcome)}`);
  const table = await tableNamed(world, String(outcome.table));
  const id = fieldId(table, column);
  world.assert.ok(Object.hasOwn(row, id), `the server_row has no member ${id} (${column}): ${JSON.stringify(row)}`);
  return row[id];
}

Then('the server_row of that outcome has field {string} equal to {string}', async function (this: SyncWorld, column: string, expected: string) {
  this.assert.equal(await serverRowField(this, column), expected, `server_row ${column}`);
});

Then('the server_row of that outcome has field {string} equal to the JSON string {string}', async function (this: SyncWorld, column: string, expected: string) {
  const value = await serverRowField(this, column);
  this.assert.equal(typeof value, 'string', `server_row ${column} must be a JSON string, not ${JSON.stringify(value)}`);
  this.assert.equal(value, expected, `server_row ${column}`);
});

Then('the outcome carries no server_row, no row_checksum and no server_version', function (this: SyncWorld) {
  const outcome = thatOutcome(this);
  const present = ['server_row', 'row_checksum', 'server_version'].filter((name) => Object.hasOwn(outcome, name));
  this.assert.equal(present, [], `the outcome carries ${present.join(', ')}: ${JSON.stringify(outcome)}`);
});
