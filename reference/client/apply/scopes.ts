/**
 * Scope bookkeeping: provenance (which active scopes justify each row),
 * local scope digests, and cleanup of rows nothing justifies any more.
 * Cleanup runs in server-apply mode and never creates a mutation; rows with
 * unresolved local intent are kept.
 */
import { fromHex, SortedScopeDigest, toHex } from '../../../harness/codec/index.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { emit } from '../events.ts';
import { fault } from '../faults.ts';
import { setMeta } from '../local/metadata.ts';
import { prepared, runMultiRow } from '../local/statements.ts';
import { deleteRow, forgetVersion, isProtected } from './rows.ts';

export interface ScopeRow {
  scope_id: string;
  cursor: string | null;
  checksum: string | null;
  local_checksum: string | null;
  rebuild_required: number;
  generation: number;
}

export function scopes(ctx: Ctx): ScopeRow[] {
  return ctx.db.prepare('SELECT * FROM _synchro_scopes ORDER BY scope_id').all() as ScopeRow[];
}

export function addProvenance(ctx: Ctx, scopeId: string, tableId: string, recordId: string, generation?: number): void {
  const gen = generation ?? (ctx.db.prepare('SELECT generation FROM _synchro_scopes WHERE scope_id = ?').get(scopeId) as { generation: number } | undefined)?.generation ?? 0;
  prepared(ctx.db, 'INSERT OR REPLACE INTO _synchro_scope_rows(scope_id, table_id, record_id, generation) VALUES (?, ?, ?, ?)').run(scopeId, tableId, recordId, gen);
}

/** `addProvenance` for many rows of one scope and generation, several rows per statement. */
export function addProvenances(ctx: Ctx, scopeId: string, generation: number, rows: readonly { tableId: string; recordId: string }[]): void {
  runMultiRow(ctx.db, 'INSERT OR REPLACE INTO _synchro_scope_rows(scope_id, table_id, record_id, generation)', '', 4, rows.map((r) => [scopeId, r.tableId, r.recordId, generation]));
}

/** Drops one scope's claim on a row, and the row itself when nothing else justifies it. */
export function dropProvenance(ctx: Ctx, scopeId: string, tableId: string, recordId: string): void {
  ctx.db.prepare('DELETE FROM _synchro_scope_rows WHERE scope_id = ? AND table_id = ? AND record_id = ?').run(scopeId, tableId, recordId);
  removeIfOrphan(ctx, tableId, recordId);
}

export function removeIfOrphan(ctx: Ctx, tableId: string, recordId: string): void {
  const still = ctx.db.prepare('SELECT 1 FROM _synchro_scope_rows WHERE table_id = ? AND record_id = ? LIMIT 1').get(tableId, recordId);
  if (still !== undefined || isProtected(ctx, tableId, recordId)) return;
  const table = ctx.schema?.byId.get(tableId);
  if (table === undefined) return;
  if (fault('cleanup-captured')) setMeta(ctx.db, 'sync_lock', '0'); // fault: client:cleanup-captured
  deleteRow(ctx, table, recordId);
  forgetVersion(ctx, table, recordId);
}

/** Removes all of a scope's provenance, then every row left unjustified and unprotected. */
export function clearScopeRows(ctx: Ctx, scopeId: string): void {
  if (fault('keep-removed-scope-rows')) return; // fault: client:keep-removed-scope-rows
  if (fault('pull019-prune-keeps-rows')) return void ctx.db.prepare('DELETE FROM _synchro_scope_rows WHERE scope_id = ?').run(scopeId); // fault: client:pull019-prune-keeps-rows
  const rows = ctx.db.prepare('SELECT table_id, record_id FROM _synchro_scope_rows WHERE scope_id = ?').all(scopeId) as { table_id: string; record_id: string }[];
  ctx.db.prepare('DELETE FROM _synchro_scope_rows WHERE scope_id = ?').run(scopeId);
  if (fault('local005-revoke-keeps-shared-edges')) for (const r of rows) if (ctx.db.prepare('SELECT 1 FROM _synchro_scope_rows WHERE table_id = ? AND record_id = ?').get(r.table_id, r.record_id) !== undefined) addProvenance(ctx, scopeId, r.table_id, r.record_id, 0); // fault: client:local005-revoke-keeps-shared-edges
  for (const r of rows) removeIfOrphan(ctx, r.table_id, r.record_id);
}

/** Forgets a removed scope entirely: provenance, cursor, checksum, rebuild attempt and receipts. */
export function removeScope(ctx: Ctx, scopeId: string): void {
  if (fault('local006-revoke-deletes-edited-rows')) for (const r of ctx.db.prepare('SELECT table_id, record_id FROM _synchro_scope_rows WHERE scope_id = ?').all(scopeId) as { table_id: string; record_id: string }[]) { const t = ctx.schema?.byId.get(r.table_id); if (t !== undefined) deleteRow(ctx, t, r.record_id); } // fault: client:local006-revoke-deletes-edited-rows
  clearScopeRows(ctx, scopeId);
  ctx.crash('inside_scope_cleanup');
  const attempt = ctx.db.prepare('SELECT rebuild_id FROM _synchro_rebuild_attempts WHERE scope_id = ?').get(scopeId) as { rebuild_id: string } | undefined;
  if (attempt !== undefined) ctx.db.prepare('DELETE FROM _synchro_rebuild_page_receipts WHERE rebuild_id = ?').run(attempt.rebuild_id);
  ctx.db.prepare('DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?').run(scopeId);
  ctx.db.prepare('DELETE FROM _synchro_scopes WHERE scope_id = ?').run(scopeId);
  ctx.db.prepare(`DELETE FROM _synchro_backoff WHERE resume_state = 'rebuilding' AND work_identity LIKE ?`).run(`${scopeId}\u0000%`);
}

/** The scope's rebuild flag, or undefined when the client does not hold the scope. */
function rebuildFlag(ctx: Ctx, scopeId: string): number | undefined {
  return (ctx.db.prepare('SELECT rebuild_required FROM _synchro_scopes WHERE scope_id = ?').get(scopeId) as { rebuild_required: number } | undefined)?.rebuild_required;
}

/** `rebuild_requested` is raised when a scope starts needing a rebuild, not again while it still does. */
export function addScope(ctx: Ctx, scopeId: string, cursor: string | null): void {
  const before = rebuildFlag(ctx, scopeId);
  ctx.db
    .prepare('INSERT INTO _synchro_scopes(scope_id, cursor, rebuild_required) VALUES (?, ?, ?) ON CONFLICT(scope_id) DO UPDATE SET cursor = excluded.cursor, rebuild_required = excluded.rebuild_required')
    .run(scopeId, cursor, cursor === null ? 1 : 0);
  if (cursor === null && before !== 1) emit(ctx, { kind: 'rebuild_requested', scopeID: scopeId });
}

export function markRebuild(ctx: Ctx, scopeId: string): void {
  const before = rebuildFlag(ctx, scopeId);
  ctx.db.prepare('UPDATE _synchro_scopes SET cursor = NULL, checksum = NULL, rebuild_required = 1 WHERE scope_id = ?').run(scopeId);
  if (before === 0) emit(ctx, { kind: 'rebuild_requested', scopeID: scopeId });
}

/**
 * The scope digest of what the client holds for `scopeId`: its provenance
 * rows with their stored server digests (a protected row contributes the
 * server's digest, not its local edit). SQLite orders the identities (BLOBs
 * compare bytewise, a prefix first, the order the digest needs), so they are
 * streamed into the digest as read, without copies or a sort in JavaScript;
 * a repeated or malformed identity is still refused.
 */
export function localScopeDigest(ctx: Ctx, scopeId: string): string {
  const schema = ctx.schema;
  if (schema === undefined) throw new ClientError('pulling', 'schema_missing', 'no schema installed', false, 'none');
  const rows = prepared(
    ctx.db,
    `SELECT v.row_identity, v.row_digest FROM _synchro_scope_rows s JOIN _synchro_row_versions v ON v.table_id = s.table_id AND v.record_id = s.record_id
      WHERE s.scope_id = ? AND v.row_identity IS NOT NULL AND v.row_digest IS NOT NULL ORDER BY v.row_identity`,
  )
    .raw(true)
    .all(scopeId) as [Uint8Array, Uint8Array][];
  const digest = new SortedScopeDigest(fromHex(schema.hash), scopeId, rows.length);
  for (const [identity, digestOfRow] of rows) digest.add(identity, digestOfRow);
  return toHex(digest.finish());
}
