/**
 * Retryable and non-retryable failures seen by a client under test: the
 * harness arranges one failing request, then reads the client's status,
 * backoff record, durable-state snapshot, queue and the requests it sent.
 */
import type { SyncWorld } from '../world.ts';

interface InspectedMutation {
  id: string;
  table: string;
  recordId?: string;
  op: string;
  status: string;
  batchId?: string | null;
}

export async function mutationsOf(world: SyncWorld, name: string): Promise<InspectedMutation[]> {
  return (await (await world.process(name)).call<{ mutations: InspectedMutation[] }>('inspectMutations')).mutations;
}

/** The mutations of one row, by the `recordId` the client reports (a client that omits it matches nothing, so the check fails). */
export function ofRow(mutations: InspectedMutation[], row: string): InspectedMutation[] {
  return mutations.filter((m) => m.recordId === row);
}
