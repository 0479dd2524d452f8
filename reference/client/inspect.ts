/**
 * Read-only views of durable sync state, each taken in one read transaction
 * so a caller never sees half of a change.
 */
import { createHash } from 'node:crypto';
import type { Ctx } from './context.ts';
import { getMeta } from './local/metadata.ts';
import { statusTransactions } from './local/status-transactions.ts';
import { pkFromRecordId, toWire } from './local/values.ts';
import { type MutationRecord, valuesOf } from './queue/records.ts';

const PUBLIC_STATUS: Record<string, string> = { pending: 'pending', sealed: 'sealed', accepted: 'accepted' };

export function inspectMutations(ctx: Ctx) {
  return ctx.db.transaction(() => {
    const rows = ctx.db.prepare('SELECT * FROM _synchro_pending_changes ORDER BY local_order').all() as MutationRecord[];
    const statusTxns = statusTransactions(ctx.db);
    return rows.map((r) => {
      const table = ctx.schema?.byId.get(r.table_id);
      const columns: Record<string, unknown> = {};
      for (const v of valuesOf(ctx, r.mutation_id)) {
        const col = table?.columns.find((c) => c.fieldId === v.field_id);
        columns[v.field_id] = col === undefined ? v.value : toWire(col.type, v.value);
      }
      return {
        mutationId: r.mutation_id,
        localOrder: r.local_order,
        tableId: r.table_id,
        tableName: r.table_name,
        recordId: r.record_id,
        pk: table === undefined ? r.record_id : pkFromRecordId(table.pk.type, r.record_id),
        operation: r.operation,
        status: PUBLIC_STATUS[r.lifecycle_state] ?? r.lifecycle_state,
        sourceKind: r.source_kind,
        authoredSchema: { version: r.authored_schema_version, hash: r.authored_schema_hash },
        baseVersion: r.base_version,
        clientVersion: r.client_version,
        dependsOnMutationId: r.depends_on_mutation_id,
        normalizedMutationId: r.normalized_mutation_id,
        sealedBatchId: r.sealed_batch_id,
        sealedOrdinal: r.sealed_ordinal,
        atomicGroupId: r.atomic_group_id,
        statusTransaction: statusTxns.get(r.mutation_id) ?? null,
        columns,
      };
    });
  })();
}

export function inspectRejections(ctx: Ctx) {
  const rows = ctx.db.prepare('SELECT * FROM _synchro_rejected_mutations ORDER BY created_at_ms, mutation_id').all() as Record<string, unknown>[];
  return rows.map((r) => ({
    mutationId: r.mutation_id,
    tableName: r.table_name,
    recordId: r.record_id,
    status: r.status,
    code: r.code,
    message: r.message,
    serverRow: r.server_row_json === null ? null : JSON.parse(String(r.server_row_json)),
    serverVersion: r.server_version,
  }));
}

export function inspectBatches(ctx: Ctx) {
  return ctx.db.transaction(() => {
    const rows = ctx.db.prepare('SELECT batch_id, state, request_bytes FROM _synchro_push_batches ORDER BY seq').all() as { batch_id: string; state: string; request_bytes: Buffer }[];
    return rows.map((b) => ({
      batchId: b.batch_id,
      state: b.state,
      requestBytes: b.request_bytes.toString('base64'),
      members: (ctx.db.prepare('SELECT mutation_id FROM _synchro_pending_changes WHERE sealed_batch_id = ? ORDER BY sealed_ordinal').all(b.batch_id) as { mutation_id: string }[]).map(
        (m) => m.mutation_id,
      ),
    }));
  })();
}

export function inspectScopes(ctx: Ctx) {
  return ctx.db.transaction(() => ({
    scopes: (ctx.db.prepare('SELECT * FROM _synchro_scopes ORDER BY scope_id').all() as Record<string, unknown>[]).map((s) => ({
      scopeId: s.scope_id,
      cursor: s.cursor,
      checksum: s.checksum,
      localChecksum: s.local_checksum,
      rebuildRequired: s.rebuild_required === 1,
    })),
    scopeSetVersion: Number(getMeta(ctx.db, 'scope_set_version') ?? 0),
    clientGeneration: getMeta(ctx.db, 'client_generation') === undefined ? null : Number(getMeta(ctx.db, 'client_generation')),
    schema: ctx.schema === undefined ? null : { version: ctx.schema.version, hash: ctx.schema.hash },
  }))();
}

export function inspectProvenance(ctx: Ctx) {
  return (ctx.db.prepare('SELECT scope_id, table_id, record_id FROM _synchro_scope_rows ORDER BY scope_id, table_id, record_id').all() as Record<string, string>[]).map((r) => ({
    scopeId: r.scope_id,
    table: r.table_id,
    recordId: r.record_id,
  }));
}

export function inspectRowVersions(ctx: Ctx) {
  return (ctx.db.prepare('SELECT table_id, record_id, server_version FROM _synchro_row_versions ORDER BY table_id, record_id').all() as Record<string, string>[]).map((r) => ({
    table: r.table_id,
    recordId: r.record_id,
    serverVersion: r.server_version,
  }));
}

export function inspectRebuilds(ctx: Ctx) {
  return (ctx.db.prepare('SELECT scope_id, rebuild_id, cursor, pages_applied, page_limit FROM _synchro_rebuild_attempts ORDER BY scope_id').all() as Record<string, unknown>[]).map((r) => ({
    scopeId: r.scope_id,
    rebuildId: r.rebuild_id,
    token: r.cursor,
    pagesApplied: r.pages_applied,
    pageLimit: r.page_limit,
  }));
}

/**
 * Tables whose rows make up the durable sync state, each a section of the
 * snapshot. The lifecycle state, its log and the stored failure are status,
 * not sync state, so they are left out; the backoff record is its own section
 * because callers compare "everything but retry bookkeeping".
 */
const SNAPSHOT_TABLES = [
  '_synchro_meta',
  '_synchro_schema_archives',
  '_synchro_pending_changes',
  '_synchro_mutation_values',
  '_synchro_push_batches',
  '_synchro_rejected_mutations',
  '_synchro_row_versions',
  '_synchro_scopes',
  '_synchro_scope_rows',
  '_synchro_rebuild_attempts',
  '_synchro_rebuild_page_receipts',
  '_synchro_migration_journal',
  '_synchro_backoff',
] as const;

function digestRows(rows: unknown[]): string {
  const hash = createHash('sha256');
  for (const row of rows) {
    const values = Object.values(row as Record<string, unknown>).map((v) => (Buffer.isBuffer(v) ? `b:${v.toString('base64')}` : v === null ? null : `${typeof v}:${String(v)}`));
    hash.update(JSON.stringify(values));
    hash.update('\n');
  }
  return hash.digest('hex');
}

/**
 * One digest per section of durable sync state (metadata tables and the
 * synced application tables), read in one transaction, plus a digest over all
 * sections; `excludeBackoff` leaves the retry bookkeeping out of the total.
 */
export function snapshotDigest(ctx: Ctx, excludeBackoff: boolean): { digest: string; sections: Record<string, string> } {
  return ctx.db.transaction(() => {
    const sections: Record<string, string> = {};
    for (const table of SNAPSHOT_TABLES) {
      if (excludeBackoff && table === '_synchro_backoff') continue;
      sections[table] = digestRows(ctx.db.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all());
    }
    for (const table of ctx.schema?.tables ?? []) {
      sections[`app:${table.name}`] = digestRows(ctx.db.prepare(`SELECT * FROM "${table.name.replaceAll('"', '""')}" ORDER BY "${table.pk.name.replaceAll('"', '""')}"`).all());
    }
    const total = createHash('sha256');
    for (const [name, digest] of Object.entries(sections).sort(([a], [b]) => (a < b ? -1 : 1))) total.update(`${name}=${digest}\n`);
    return { digest: total.digest('hex'), sections };
  })();
}
