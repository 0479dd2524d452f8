/**
 * What a client did after it was given a tampered answer: which requests it
 * still sent, and whether its durable sync state stayed as it was before the
 * scenario's first action.
 */
import type { SyncWorld } from '../world.ts';

export const UNCHANGED = /^no durable state changed on client "([^"]+)"$/;

export interface Snapshot {
  digest: string;
  sections: Record<string, string>;
}

export const snapshots = new WeakMap<SyncWorld, Map<string, Snapshot>>();

export async function snapshotOf(world: SyncWorld, name: string): Promise<Snapshot> {
  const client = await world.process(name);
  // Retry bookkeeping (backoff) is how a client remembers a failure, not sync state.
  return client.call<Snapshot>('snapshotDigest', { excludeBackoff: true });
}
