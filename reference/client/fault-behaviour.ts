/**
 * Behaviour that only a sensitivity-run fault switch reaches: what a client
 * that gets a rule wrong would do, written out here so the modules a reader
 * follows keep only the correct behaviour and a one-line switch.
 */
import { deleteRow, isProtected } from './apply/rows.ts';
import { clearScopeRows, markRebuild, scopes } from './apply/scopes.ts';
import type { Ctx } from './context.ts';

/**
 * Sensitivity-run fault only: treats a repair of one scope (a rebuild of a
 * scope that already holds rows) as a reason to resync everything, clearing
 * every other scope's rows and provenance and marking it for rebuild too.
 */
export function resetEveryOtherScope(ctx: Ctx, scopeId: string): void {
  if (ctx.db.prepare('SELECT 1 FROM _synchro_scope_rows WHERE scope_id = ? LIMIT 1').get(scopeId) === undefined) return;
  for (const other of scopes(ctx)) {
    if (other.scope_id === scopeId) continue;
    clearScopeRows(ctx, other.scope_id);
    markRebuild(ctx, other.scope_id);
  }
}

/**
 * Sensitivity-run fault only: empties every application table, synced or
 * not, as a client that starts a rebuild from a wiped database would. Runs
 * inside the caller's server-apply transaction, so nothing is captured.
 */
export function clearApplicationTables(ctx: Ctx): void {
  const tables = ctx.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_synchro\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'`).all() as { name: string }[];
  for (const { name } of tables) ctx.db.prepare(`DELETE FROM "${name.replaceAll('"', '""')}"`).run();
}

/**
 * Sensitivity-run fault only: deletes every local row the scope justified
 * as its rebuild starts, without asking whether another scope still
 * justifies it (rows with unresolved local intent aside).
 */
export function deleteRowsOfScope(ctx: Ctx, scopeId: string): void {
  const rows = ctx.db.prepare('SELECT table_id, record_id FROM _synchro_scope_rows WHERE scope_id = ?').all(scopeId) as { table_id: string; record_id: string }[];
  for (const r of rows) {
    const table = ctx.schema?.byId.get(r.table_id);
    if (table !== undefined && !isProtected(ctx, r.table_id, r.record_id)) deleteRow(ctx, table, r.record_id);
  }
}
