/**
 * "That change": the pull change (or rebuild record) a step last picked out,
 * so a following step (such as the integrity check of its row checksum) can
 * look at the same message. It is also handed to the integrity steps' own
 * state, which is where "the row checksum of that change" looks.
 */
import { integrity } from '../integrity/context.ts';
import type { SyncWorld } from '../world.ts';

export interface FocusedChange {
  /** The change or record object as the server sent it. */
  message: Record<string, unknown>;
  /** `pull` for a change, `rebuild` for a record. */
  endpoint: 'pull' | 'rebuild';
  /** The schema hash of the request it answers (what its row checksum is bound to). */
  schemaHash: string | undefined;
}

const focused = new WeakMap<SyncWorld, FocusedChange>();

export function focusChange(world: SyncWorld, change: FocusedChange): void {
  focused.set(world, change);
  // The integrity steps ("the row checksum of that change ...") read the same message from their own state.
  const m = change.message;
  integrity(world).lastMessage = {
    kind: change.endpoint === 'pull' ? 'change' : 'record',
    schemaHash: String(change.schemaHash),
    table: String(m.table),
    pk: m.pk,
    row: m.row,
    serverVersion: m.server_version,
    checksum: m.row_checksum,
    raw: m,
  };
}

export function thatChange(world: SyncWorld): FocusedChange {
  const change = focused.get(world);
  if (change === undefined) throw new Error('no step picked out a pull change or rebuild record yet ("that change")');
  return change;
}
