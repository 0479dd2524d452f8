/**
 * Push outcomes as the harness's own client received them: "that outcome" is
 * the one outcome of the last push response.
 */
import type { SyncWorld } from '../world.ts';
import { fieldId, type Obj, tableNamed } from './recorded.ts';

/** Every outcome of a push answer body, accepted first, as the server listed them. */
export function outcomesOf(json: Obj | undefined): Obj[] {
  return [...((json?.accepted ?? []) as Obj[]), ...((json?.rejected ?? []) as Obj[])];
}

/** The single outcome of the last push response. */
export function thatOutcome(world: SyncWorld): Obj {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'push');
  if (!reply) throw new Error('no push response has been received in this scenario');
  world.assert.equal(reply.status, 200, `the last push was answered ${reply.status}: ${reply.text}`);
  const outcomes = outcomesOf(reply.json);
  world.assert.equal(outcomes.length, 1, `"that outcome" needs a push response with exactly one outcome: ${reply.text}`);
  return outcomes[0] as Obj;
}

/** The outcome of `mutationId` in whichever push response carried it (the latest one). */
export function outcomeAnywhere(world: SyncWorld, mutationId: string): Obj | undefined {
  for (const reply of [...world.replies].reverse()) {
    if (reply.endpoint !== 'push' || reply.status !== 200) continue;
    const found = outcomesOf(reply.json).find((o) => o.mutation_id === mutationId);
    if (found) return found;
  }
  return undefined;
}

export async function serverRowField(world: SyncWorld, column: string): Promise<unknown> {
  const outcome = thatOutcome(world);
  const row = outcome.server_row as Obj | undefined;
  world.assert.ok(row !== undefined && row !== null, `the outcome carries no server_row: ${JSON.stringify(outcome)}`);
  const table = await tableNamed(world, String(outcome.table));
  const id = fieldId(table, column);
  world.assert.ok(Object.hasOwn(row, id), `the server_row has no member ${id} (${column}): ${JSON.stringify(row)}`);
  return row[id];
}
