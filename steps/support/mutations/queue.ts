/**
 * The client's own account of its mutation queue: every record it shows
 * (each one remembered, so that a record that later disappears is noticed),
 * its sealed batches, and the phrases the features use to name one record
 * ("the second update of row "n-2"").
 */
import type { SyncWorld } from '../world.ts';
import { type QueueRecord, queueState, type StoredBatch } from './state.ts';

/** Every mutation record client `name` shows now, in its order; each is remembered as seen. */
export async function queueOf(world: SyncWorld, name: string): Promise<QueueRecord[]> {
  const { mutations } = await (await world.process(name)).call<{ mutations: QueueRecord[] }>('inspectMutations');
  const seen = queueState(world).seen;
  const mine = seen.get(name) ?? new Map<string, QueueRecord>();
  for (const record of mutations) if (!mine.has(record.id)) mine.set(record.id, record);
  seen.set(name, mine);
  return mutations;
}

export async function batchesOf(world: SyncWorld, name: string): Promise<StoredBatch[]> {
  return (await (await world.process(name)).call<{ batches: StoredBatch[] }>('inspectBatches')).batches;
}

/**
 * Records the application wrote (not the one a client made to replace a
 * same-row chain): a client that does not say which is which has all its
 * records counted as written.
 */
export function written(records: readonly QueueRecord[]): QueueRecord[] {
  return records.filter((r) => r.sourceKind !== 'normalized');
}

export function ofRow(records: readonly QueueRecord[], row: string): QueueRecord[] {
  return records.filter((r) => r.recordId === row);
}

const ORDINAL: Record<string, number> = { first: 0, second: 1, third: 2 };

/** The phrase naming one written record: `the [first|second|third] <op> of row "<pk>"`. */
export const RECORD_PHRASE = /^(?:the )?(?:(first|second|third) )?(insert|update|delete) of row "([^"]+)"$/;

/** The written record `phrase` names, or undefined when the client shows none such. */
export function recordNamed(records: readonly QueueRecord[], phrase: string): QueueRecord | undefined {
  const m = RECORD_PHRASE.exec(phrase.trim());
  if (!m) throw new Error(`"${phrase}" does not name a mutation record (expected: the [second] <insert|update|delete> of row "<key>")`);
  const [, ordinal, op, row] = m;
  return written(ofRow(records, row as string)).filter((r) => r.op === op)[ORDINAL[ordinal ?? 'first'] ?? 0];
}

/** The record a phrase names, among every record the client ever showed in this scenario (to compare with what it shows now). */
export function firstSeen(world: SyncWorld, name: string, phrase: string): QueueRecord | undefined {
  return recordNamed([...(queueState(world).seen.get(name)?.values() ?? [])], phrase);
}

/** One line per record, for failure messages. */
export function describeQueue(records: readonly QueueRecord[]): string {
  if (records.length === 0) return '(no records)';
  return records
    .map((r) => `${r.op} ${r.recordId ?? '?'} ${r.status} id=${r.id}${r.sourceKind ? ` ${r.sourceKind}` : ''}${r.links?.normalizedMutationId ? ` normalized->${r.links.normalizedMutationId}` : ''}${r.links?.dependsOnMutationId ? ` depends->${r.links.dependsOnMutationId}` : ''}${r.batchId ? ` batch=${r.batchId}#${r.ordinal}` : ''}`)
    .join('; ');
}

/** The authored values of a record as text, for comparing with a feature's cells. */
export function authoredText(record: QueueRecord): Record<string, string> {
  return Object.fromEntries(Object.entries(record.columns ?? {}).map(([column, value]) => [column, value === null ? 'null' : String(value)]));
}
