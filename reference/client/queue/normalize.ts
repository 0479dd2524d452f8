/**
 * Folding of same-row chains before sealing. Only unsent records with the
 * same atomic group take part; the originals stay inspectable and point at
 * the record that replaced them.
 */
import { randomUUID } from 'node:crypto';
import type { Ctx } from '../context.ts';
import { fault } from '../faults.ts';
import { type MutationRecord, valuesOf } from './records.ts';

/** Normalizes pending chains; with `groupId` only chains inside that atomic group. */
export function normalizePending(ctx: Ctx, groupId?: string): void {
  const pending = ctx.db.prepare(`SELECT * FROM _synchro_pending_changes WHERE lifecycle_state = 'pending' ORDER BY local_order`).all() as MutationRecord[];
  const byRow = new Map<string, MutationRecord[]>();
  for (const rec of pending) {
    const key = `${rec.table_id}\u0000${rec.record_id}`;
    const list = byRow.get(key) ?? [];
    list.push(rec);
    byRow.set(key, list);
  }
  for (const list of byRow.values()) {
    let run: MutationRecord[] = [];
    const flush = () => {
      if (run.length >= 2 && (groupId === undefined || run[0]?.atomic_group_id === groupId)) fold(ctx, run);
      run = [];
    };
    for (const rec of list) {
      // A run is a chain: each record depends on the one before it.
      const prev = run[run.length - 1];
      if (prev !== undefined && (prev.atomic_group_id !== rec.atomic_group_id || rec.depends_on_mutation_id !== prev.mutation_id)) flush();
      run.push(rec);
    }
    flush();
  }
}

function fold(ctx: Ctx, run: MutationRecord[]): void {
  const first = run[0] as MutationRecord;
  const last = run[run.length - 1] as MutationRecord;
  const ids = run.map((r) => r.mutation_id);
  const marks = ids.map(() => '?').join(', ');
  if (first.operation === 'insert' && last.operation === 'delete' && !fault('send-cancelled-chain')) { // fault: client:send-cancelled-chain
    // Nothing of this chain ever reaches the server; every record links to the cancelling delete.
    ctx.db
      .prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'cancelled_before_send', normalized_mutation_id = ? WHERE mutation_id IN (${marks})`)
      .run(last.mutation_id, ...ids);
    ctx.db.prepare(`UPDATE _synchro_pending_changes SET depends_on_mutation_id = NULL WHERE depends_on_mutation_id IN (${marks}) AND lifecycle_state = 'pending'`).run(...ids);
    releaseAfterCancelledChain(ctx, last.mutation_id);
    return;
  }
  const op = first.operation === 'insert' ? 'insert' : last.operation === 'delete' ? 'delete' : 'update';
  const id = randomUUID();
  ctx.db
    .prepare(
      `INSERT INTO _synchro_pending_changes(mutation_id, queue_order, table_id, table_name, record_id, pk_field_id, pk_logical_type, operation, authored_schema_version, authored_schema_hash, base_version, client_version, lifecycle_state, source_kind, depends_on_mutation_id, atomic_group_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 'normalized', ?, ?, ?)`,
    )
    .run(
      id,
      first.queue_order ?? first.local_order,
      first.table_id,
      first.table_name,
      first.record_id,
      first.pk_field_id,
      first.pk_logical_type,
      op,
      last.authored_schema_version,
      last.authored_schema_hash,
      op === 'insert' ? null : first.base_version,
      last.client_version,
      first.depends_on_mutation_id,
      first.atomic_group_id,
      last.client_version,
    );
  if (op !== 'delete') {
    const merged = new Map<string, unknown>();
    for (const rec of run) for (const v of valuesOf(ctx, rec.mutation_id)) merged.set(v.field_id, v.value);
    const put = ctx.db.prepare('INSERT INTO _synchro_mutation_values(mutation_id, field_id, value) VALUES (?, ?, ?)');
    for (const [field, value] of merged) put.run(id, field, value as never);
  }
  ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'superseded_before_send', normalized_mutation_id = ? WHERE mutation_id IN (${marks})`).run(fault('unlinked-normalization') ? null : id, ...ids); // fault: client:unlinked-normalization
  ctx.db
    .prepare(`UPDATE _synchro_pending_changes SET depends_on_mutation_id = ? WHERE depends_on_mutation_id IN (${marks}) AND mutation_id NOT IN (${marks}) AND mutation_id <> ?`)
    .run(id, ...ids, ...ids, id);
}

/**
 * An insert captured after an unsent insert…delete chain was blocked because
 * it followed a delete. Once that chain is cancelled the row never existed on
 * the server, so the insert is an ordinary new insert: it and the records
 * blocked only because of it return to pending. A record that follows a
 * delete stays blocked.
 */
function releaseAfterCancelledChain(ctx: Ctx, cancellingDelete: string): void {
  const blocked = (dep: string) =>
    ctx.db.prepare(`SELECT mutation_id, operation FROM _synchro_pending_changes WHERE depends_on_mutation_id = ? AND lifecycle_state = 'blocked_by_predecessor'`).all(dep) as {
      mutation_id: string;
      operation: string;
    }[];
  const release = ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'pending' WHERE mutation_id = ?`);
  for (const first of blocked(cancellingDelete)) {
    if (first.operation !== 'insert') continue;
    ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'pending', depends_on_mutation_id = NULL WHERE mutation_id = ?`).run(first.mutation_id);
    let frontier = [first];
    while (frontier.length > 0) {
      const next: { mutation_id: string; operation: string }[] = [];
      for (const rec of frontier) {
        if (rec.operation === 'delete') continue;
        for (const dep of blocked(rec.mutation_id)) {
          release.run(dep.mutation_id);
          next.push(dep);
        }
      }
      frontier = next;
    }
  }
}
