/**
 * Reading mutation records and turning them into wire mutations. The wire
 * form is built only from what capture stored, so sealing never invents or
 * changes authored content.
 */
import { randomUUID } from 'node:crypto';
import type { Ctx } from '../context.ts';
import { fault } from '../faults.ts';
import type { LocalTable } from '../local/manifest.ts';
import { pkFromRecordId, toWire, type WireValue } from '../local/values.ts';

export const UNRESOLVED = `('pending', 'sealed', 'blocked_by_predecessor')`;

export interface MutationRecord {
  local_order: number;
  mutation_id: string;
  queue_order: number | null;
  table_id: string;
  table_name: string;
  record_id: string;
  pk_field_id: string;
  pk_logical_type: string;
  operation: 'insert' | 'update' | 'delete';
  authored_schema_version: number;
  authored_schema_hash: string;
  base_version: string | null;
  client_version: string;
  lifecycle_state: string;
  source_kind: string;
  depends_on_mutation_id: string | null;
  normalized_mutation_id: string | null;
  sealed_batch_id: string | null;
  sealed_ordinal: number | null;
  accepted_outcome_json: string | null;
  atomic_group_id: string | null;
}

export const QUEUE_ORDER = 'ifnull(queue_order, local_order), local_order';

export function recordById(ctx: Ctx, id: string): MutationRecord | undefined {
  return ctx.db.prepare('SELECT * FROM _synchro_pending_changes WHERE mutation_id = ?').get(id) as MutationRecord | undefined;
}

export function valuesOf(ctx: Ctx, mutationId: string): { field_id: string; value: unknown }[] {
  return ctx.db.prepare('SELECT field_id, value FROM _synchro_mutation_values WHERE mutation_id = ? ORDER BY field_id').all(mutationId) as { field_id: string; value: unknown }[];
}

export type WireMutation = Record<string, unknown> & { mutation_id: string };

export function wireMutation(ctx: Ctx, rec: MutationRecord, table: LocalTable): WireMutation {
  const out: WireMutation = {
    mutation_id: fault('fresh-id-at-seal') ? randomUUID() : rec.mutation_id, // fault: client:fresh-id-at-seal
    table: rec.table_id,
    pk: { [rec.pk_field_id]: pkFromRecordId(table.pk.type, rec.record_id) },
    authored_schema: { version: rec.authored_schema_version, hash: rec.authored_schema_hash },
    op: rec.operation,
    client_version: rec.client_version,
  };
  if (fault('successor-takes-original-id')) out.mutation_id = (ctx.db.prepare(`SELECT mutation_id FROM _synchro_pending_changes WHERE table_id = ? AND record_id = ? AND lifecycle_state = 'server_rejected' ORDER BY local_order LIMIT 1`).get(rec.table_id, rec.record_id) as { mutation_id: string } | undefined)?.mutation_id ?? out.mutation_id; // fault: client:successor-takes-original-id
  if (fault('update-sent-as-upsert') && rec.operation === 'update') out.op = 'upsert'; // fault: client:update-sent-as-upsert
  if (fault('millisecond-client-version')) out.client_version = rec.client_version.replace(/(\.\d{3})\d{3}Z$/, '$1Z'); // fault: client:millisecond-client-version
  if (rec.operation !== 'insert' && rec.base_version !== null) out.base_version = rec.base_version;
  if (rec.operation !== 'delete') {
    const columns: Record<string, WireValue> = {};
    for (const v of valuesOf(ctx, rec.mutation_id)) {
      const col = table.columns.find((c) => c.fieldId === v.field_id);
      columns[v.field_id] = col === undefined ? (v.value as WireValue) : toWire(col.type, v.value);
    }
    out.columns = columns;
  }
  return out;
}

/**
 * Marks every unsent record that depends (directly or through a chain or an
 * atomic group) on `mutationId` as blocked, in the caller's transaction.
 */
export function blockDependents(ctx: Ctx, mutationIds: string[]): void {
  const queue = [...mutationIds];
  while (queue.length > 0) {
    const id = queue.shift() as string;
    const deps = ctx.db.prepare(`SELECT mutation_id, atomic_group_id FROM _synchro_pending_changes WHERE depends_on_mutation_id = ? AND lifecycle_state = 'pending'`).all(id) as { mutation_id: string; atomic_group_id: string | null }[];
    const groupIds = new Set<string>();
    const self = recordById(ctx, id);
    if (self?.atomic_group_id != null && self.lifecycle_state === 'blocked_by_predecessor') groupIds.add(self.atomic_group_id);
    for (const d of deps) {
      ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'blocked_by_predecessor' WHERE mutation_id = ?`).run(d.mutation_id);
      queue.push(d.mutation_id);
      if (d.atomic_group_id !== null) groupIds.add(d.atomic_group_id);
    }
    for (const g of fault('unsent-group-not-blocked') ? [] : groupIds) { // fault: client:unsent-group-not-blocked
      const members = ctx.db.prepare(`SELECT mutation_id FROM _synchro_pending_changes WHERE atomic_group_id = ? AND lifecycle_state = 'pending'`).all(g) as { mutation_id: string }[];
      for (const m of members) {
        ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'blocked_by_predecessor' WHERE mutation_id = ?`).run(m.mutation_id);
        queue.push(m.mutation_id);
      }
    }
  }
}
