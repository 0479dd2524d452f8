/**
 * Whether a source transaction is still ahead of the capture slot, read from
 * the slot itself. The harness knows a transaction only by the WAL insert
 * positions read just before and just after it committed; the worker may
 * legitimately write WAL in between (its flush message, its heartbeat) and
 * acknowledge it while the transaction is still open, so a slot past the
 * position read before proves nothing. What does: the transaction is still
 * pending in the slot (a peek, which consumes nothing, decodes a BEGIN whose
 * commit position lies between the two reads). A slot that acknowledged it
 * no longer decodes it.
 */
import { inspectRows } from '../capture/inspection.ts';
import type { SyncWorld } from '../world.ts';

/** The commit positions of the transactions the slot still holds ahead of its confirmed position (pgoutput BEGIN messages). */
async function pendingCommits(world: SyncWorld, slot: string, deadlineMs: number): Promise<bigint[]> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      const rows = await inspectRows<{ data: Buffer }>(
        world,
        "SELECT data FROM pg_logical_slot_peek_binary_changes($1, NULL, NULL, 'proto_version', '1', 'publication_names', 'synchro_capture', 'messages', 'true') WHERE get_byte(data, 0) = 66",
        [slot],
      );
      // BEGIN: 'B', Int64 final (commit) LSN, Int64 commit time, Int32 xid.
      return rows.map((r) => r.data.readBigUInt64BE(1));
    } catch (error) {
      // The worker peeks the same slot while it polls; PostgreSQL refuses a second reader meanwhile.
      if (!/is active for PID/.test((error as Error).message) || Date.now() > deadline) throw error;
    }
  }
}

const lsn = (text: string) => {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
};

/** True when a transaction committed between `before` and `after` is still pending in `slot`. */
export async function stillPendingInSlot(world: SyncWorld, slot: string, before: string, after: string): Promise<boolean> {
  const commits = await pendingCommits(world, slot, world.deadlineMs);
  return commits.some((commit) => commit > lsn(before) && commit <= lsn(after));
}
