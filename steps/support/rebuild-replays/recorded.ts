/**
 * What a scenario noted before repeating rebuild requests, under the labels
 * its steps give ("before", "v"): a client's checkpoints as server
 * inspection shows them, and the scope-set version a harness client holds.
 */
import { inspectRows } from '../capture/inspection.ts';
import type { SyncWorld } from '../world.ts';

export interface CheckpointRow {
  scope_id: string;
  stream_generation: string;
  commit_lsn: string;
  event_ordinal: string;
  effect_ordinal: number;
  acknowledged_at: string;
}

interface Recorded {
  checkpoints: Map<string, CheckpointRow[]>;
  versions: Map<string, number>;
}

const recorded = new WeakMap<SyncWorld, Recorded>();

export function recordedOf(world: SyncWorld): Recorded {
  let state = recorded.get(world);
  if (state === undefined) {
    state = { checkpoints: new Map(), versions: new Map() };
    recorded.set(world, state);
  }
  return state;
}

/** Every checkpoint the server keeps for harness client `name`, by scope, with the time it was last acknowledged. */
export async function checkpointsOf(world: SyncWorld, name: string): Promise<CheckpointRow[]> {
  const client = world.wire(name);
  return inspectRows<CheckpointRow & Record<string, unknown>>(
    world,
    `SELECT scope_id, stream_generation, commit_lsn::text AS commit_lsn, event_ordinal::text AS event_ordinal, effect_ordinal,
            to_char(acknowledged_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS acknowledged_at
       FROM synchro.checkpoints WHERE user_id = $1 AND client_id = $2 ORDER BY scope_id`,
    [client.userId, client.clientId],
  );
}
