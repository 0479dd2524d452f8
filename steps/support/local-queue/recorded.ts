/**
 * Mutation records a client showed at a named moment ("before"), kept to be
 * compared with what it shows after it was killed and restarted, field by
 * field: the identity and authored content a durable queue must restore
 * unchanged.
 */
import type { QueueRecord } from '../mutations/state.ts';
import type { SyncWorld } from '../world.ts';

const recorded = new WeakMap<SyncWorld, Map<string, QueueRecord[]>>();

export function recordQueue(world: SyncWorld, label: string, records: QueueRecord[]): void {
  const labels = recorded.get(world) ?? new Map<string, QueueRecord[]>();
  labels.set(label, records);
  recorded.set(world, labels);
}

export function recordedQueue(world: SyncWorld, label: string): QueueRecord[] {
  const records = recorded.get(world)?.get(label);
  if (records === undefined) throw new Error(`no mutations were recorded as "${label}" earlier in this scenario`);
  return records;
}

/** The fields a restart must leave as they were; the status may move on. */
export const DURABLE_FIELDS = ['id', 'table', 'recordId', 'op', 'localOrder', 'authoredSchema', 'baseVersion', 'clientVersion', 'columns'] as const;

export function durablePart(record: QueueRecord): Record<string, unknown> {
  return Object.fromEntries(DURABLE_FIELDS.map((field) => [field, record[field] ?? null]));
}
