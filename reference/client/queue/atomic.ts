/**
 * Commit-time rules of an atomic write group, checked in the order the
 * protocol gives. A failure throws and the surrounding transaction rolls
 * back rows, capture records and the group key together.
 */
import type { Ctx } from '../context.ts';
import { AtomicGroupInvalid } from '../errors.ts';
import { normalizePending } from './normalize.ts';
import { blockDependents, type MutationRecord, wireMutation } from './records.ts';
import { BATCH_MAX_MUTATIONS, mutationTooLarge, REQUEST_MAX_OCTETS, RequestMeter, tableOf } from './seal.ts';

/** Placeholder base for a member whose base is not known yet: the largest a version can be. */
const BASE_PLACEHOLDER = 'x'.repeat(64);

export function validateGroup(ctx: Ctx, groupId: string): void {
  const all = ctx.db.prepare('SELECT * FROM _synchro_pending_changes WHERE atomic_group_id = ? ORDER BY local_order').all(groupId) as MutationRecord[];
  all.forEach((rec, k) => {
    if (rec.operation === 'delete' && all.slice(k + 1).some((later) => later.table_id === rec.table_id && later.record_id === rec.record_id)) {
      throw new AtomicGroupInvalid('deleteFollowedByWrite', `row ${rec.table_name}/${rec.record_id} is written after its deletion in the same group`);
    }
  });
  normalizePending(ctx, groupId);
  const members = ctx.db.prepare(`SELECT * FROM _synchro_pending_changes WHERE atomic_group_id = ? AND lifecycle_state = 'pending' ORDER BY local_order`).all(groupId) as MutationRecord[];
  if (members.length > BATCH_MAX_MUTATIONS) throw new AtomicGroupInvalid('tooManyMutations', `the group holds ${members.length} mutations; at most ${BATCH_MAX_MUTATIONS} fit one request`);
  const meter = new RequestMeter(ctx, true);
  for (const rec of members) {
    const wire = wireMutation(ctx, rec, tableOf(ctx, rec));
    if (wire.op !== 'insert' && wire.base_version === undefined) wire.base_version = BASE_PLACEHOLDER;
    if (mutationTooLarge(wire)) throw new AtomicGroupInvalid('mutationTooLarge', `mutation on ${rec.table_name}/${rec.record_id} exceeds a per-mutation limit`);
    meter.add(wire);
  }
  if (meter.body > REQUEST_MAX_OCTETS || meter.canon > REQUEST_MAX_OCTETS) throw new AtomicGroupInvalid('requestTooLarge', 'the group cannot fit one push request');
  // A member captured behind a deleted or blocked predecessor starts blocked; the group travels as one unit, so all of it waits with it.
  const blocked = ctx.db.prepare(`SELECT mutation_id FROM _synchro_pending_changes WHERE atomic_group_id = ? AND lifecycle_state = 'blocked_by_predecessor'`).all(groupId) as { mutation_id: string }[];
  if (blocked.length > 0) blockDependents(ctx, blocked.map((b) => b.mutation_id));
}
