/**
 * Stream generations a scenario recorded under a label, with the capture slot
 * that served each, as server inspection showed them when recorded.
 */
import { inspectRows } from '../capture/inspection.ts';
import type { SyncWorld } from '../world.ts';

export interface RecordedStream {
  generation: string;
  slot: string;
}

const recorded = new WeakMap<SyncWorld, Map<string, RecordedStream>>();

/** The stream generation and active slot server inspection shows now. */
export async function currentStreamOf(world: SyncWorld): Promise<RecordedStream> {
  const [row] = await inspectRows<{ g: string; s: string }>(world, 'SELECT stream_generation AS g, slot_name AS s FROM synchro.wal_progress');
  if (row === undefined) throw new Error('server inspection shows no capture progress record');
  return { generation: row.g, slot: row.s };
}

export async function recordStream(world: SyncWorld, label: string): Promise<void> {
  const streams = recorded.get(world) ?? new Map<string, RecordedStream>();
  recorded.set(world, streams);
  if (streams.has(label)) throw new Error(`a stream generation was already recorded as "${label}"`);
  streams.set(label, await currentStreamOf(world));
}

export function recordedStream(world: SyncWorld, label: string): RecordedStream {
  const stream = recorded.get(world)?.get(label);
  if (stream === undefined) throw new Error(`no stream generation was recorded as "${label}" in this scenario`);
  return stream;
}
