/**
 * Server-originated row writes, always run inside `serverApply` so capture
 * stays silent. Rows that still carry unresolved local intent are protected:
 * their server version is recorded but the application-visible row keeps the
 * local intent until push reconciliation resolves it.
 */
import { checksumNames, checksumObject, digestRow, readChecksumObject } from '../../../harness/codec/index.ts';
import type { Ctx } from '../context.ts';
import { ClientError, type Operation } from '../errors.ts';
import { fault } from '../faults.ts';
import { type LocalTable, quoteIdent as q } from '../local/manifest.ts';
import { prepared, runMultiRow } from '../local/statements.ts';
import { type SqlValue, toSql, toWire, type WireValue } from '../local/values.ts';

export type WireRow = Record<string, WireValue | undefined>;

export interface VerifiedRow {
  identity: Uint8Array;
  digest: Uint8Array;
}

/** Recomputes a row digest and compares it with the one the server sent. */
export function verifyRow(op: Operation, schemaHash: string, table: LocalTable, row: unknown, pk: unknown, serverVersion: string, checksum: unknown): VerifiedRow {
  let computed: { identity: Uint8Array; digest: Uint8Array };
  let matches: boolean;
  try {
    computed = digestRow({ schemaHash, table: table.shape, row, pk, serverVersion });
    // Validates the checksum object and compares its digest text with the computed digest's hex (no decoding on a match).
    matches = checksumNames(checksum, computed.digest);
  } catch (e) {
    throw new ClientError(op, 'invalid_row', `row of ${table.tableId} is invalid: ${(e as Error).message}`, false, 'retry');
  }
  if (fault('skip-row-checksum')) return { identity: computed.identity, digest: readChecksumObject(checksum) }; // fault: client:skip-row-checksum
  if (!matches) {
    throw new ClientError(op, 'row_checksum_mismatch', `row checksum of ${table.tableId} does not match (computed ${checksumObject(computed.digest).digest})`, false, 'retry');
  }
  return { identity: computed.identity, digest: computed.digest };
}

export function isProtected(ctx: Ctx, tableId: string, recordId: string): boolean {
  const pending = ctx.db
    .prepare(`SELECT 1 FROM _synchro_pending_changes WHERE table_id = ? AND record_id = ? AND lifecycle_state IN ('pending', 'sealed', 'blocked_by_predecessor') LIMIT 1`)
    .get(tableId, recordId);
  if (pending !== undefined) return true;
  if (fault('local006-rejected-edit-unprotected')) return false; // fault: client:local006-rejected-edit-unprotected
  const table = [...(ctx.schema?.tables ?? [])].find((t) => t.tableId === tableId);
  if (table === undefined) return false;
  const rejected = ctx.db
    .prepare(`SELECT 1 FROM _synchro_rejected_mutations WHERE table_name = ? AND record_id = ? AND status = 'rejected_terminal' LIMIT 1`)
    .get(table.name, recordId);
  return rejected !== undefined;
}

/**
 * Every protected row at once, keyed `table_id NUL record_id`, for applying a
 * whole page without one lookup per row. Taken inside the page transaction,
 * where no application write can interleave.
 */
export function protectedRows(ctx: Ctx): Set<string> {
  const out = new Set<string>();
  const pending = ctx.db.prepare(`SELECT DISTINCT table_id, record_id FROM _synchro_pending_changes WHERE lifecycle_state IN ('pending', 'sealed', 'blocked_by_predecessor')`).all() as { table_id: string; record_id: string }[];
  for (const r of pending) out.add(`${r.table_id}\u0000${r.record_id}`);
  const rejected = ctx.db.prepare(`SELECT DISTINCT table_name, record_id FROM _synchro_rejected_mutations WHERE status = 'rejected_terminal'`).all() as { table_name: string; record_id: string }[];
  for (const r of rejected) {
    const table = ctx.schema?.byName.get(r.table_name.toLowerCase());
    if (table !== undefined) out.add(`${table.tableId}\u0000${r.record_id}`);
  }
  return out;
}

/** The upsert of server rows into an application table, built once per table: the part before VALUES and the conflict clause after. */
const upsertParts = new WeakMap<LocalTable, { head: string; tail: string; single: string }>();

function upsertFor(table: LocalTable): { head: string; tail: string; single: string } {
  let parts = upsertParts.get(table);
  if (parts === undefined) {
    const cols = table.columns.map((c) => q(c.name));
    const updates = table.columns.filter((c) => c !== table.pk).map((c) => `${q(c.name)} = excluded.${q(c.name)}`);
    const head = `INSERT INTO ${q(table.name)} (${cols.join(', ')})`;
    const tail = `ON CONFLICT(${q(table.pk.name)}) ${updates.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${updates.join(', ')}`}`;
    parts = { head, tail, single: `${head} VALUES (${cols.map(() => '?').join(', ')}) ${tail}` };
    upsertParts.set(table, parts);
  }
  return parts;
}

function sqlValues(table: LocalTable, row: WireRow): SqlValue[] {
  return table.columns.map((c) => toSql(c.type, row[c.fieldId]));
}

export function writeRow(ctx: Ctx, table: LocalTable, row: WireRow): void {
  const values = sqlValues(table, row);
  if (fault('replace-server-rows-captured')) { const cols = table.columns.map((c) => q(c.name)); ctx.db.exec(`UPDATE _synchro_meta SET value = '0' WHERE key = 'sync_lock'`); ctx.db.prepare(`INSERT OR REPLACE INTO ${q(table.name)} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`).run(...values); return; } // fault: client:replace-server-rows-captured
  prepared(ctx.db, upsertFor(table).single).run(...values);
}

/** `writeRow` for many rows of one table, in the order given, several rows per statement. */
export function writeRows(ctx: Ctx, table: LocalTable, rows: readonly WireRow[]): void {
  if (fault('replace-server-rows-captured')) {
    for (const row of rows) writeRow(ctx, table, row); // that switch's own path, row by row
    return;
  }
  const { head, tail } = upsertFor(table);
  runMultiRow(ctx.db, head, tail, table.columns.length, rows.map((row) => sqlValues(table, row)));
}

export function deleteRow(ctx: Ctx, table: LocalTable, recordId: string): void {
  ctx.db.prepare(`DELETE FROM ${q(table.name)} WHERE CAST(${q(table.pk.name)} AS TEXT) = ?`).run(recordId);
}

export function readLocalRow(ctx: Ctx, table: LocalTable, recordId: string): WireRow | undefined {
  const raw = ctx.db.prepare(`SELECT * FROM ${q(table.name)} WHERE CAST(${q(table.pk.name)} AS TEXT) = ?`).get(recordId) as Record<string, unknown> | undefined;
  if (raw === undefined) return undefined;
  const out: WireRow = {};
  for (const c of table.columns) out[c.fieldId] = toWire(c.type, raw[c.name]);
  return out;
}

/**
 * Only for the fault switch in storeVersion: the greatest version this
 * process has seen for a row, in numeric-aware text order, the way a client
 * that wrongly orders versions would keep it.
 */
const seenVersions = new Map<string, string>();
function greatestSeen(key: string, version: string): string {
  const prior = seenVersions.get(key);
  if (prior !== undefined && prior.localeCompare(version, 'en', { numeric: true }) > 0) return prior;
  seenVersions.set(key, version);
  return version;
}

/**
 * A row's version record holds what the client needs of the server's row: its
 * version (the base of the next write) and its identity and digest (the scope
 * digest). The row's values live in the application table alone.
 */
const VERSION_HEAD = 'INSERT INTO _synchro_row_versions(table_id, record_id, server_version, row_identity, row_digest)';
const VERSION_TAIL = 'ON CONFLICT(table_id, record_id) DO UPDATE SET server_version = excluded.server_version, row_identity = excluded.row_identity, row_digest = excluded.row_digest';
const VERSION_SINGLE = `${VERSION_HEAD} VALUES (?, ?, ?, ?, ?) ${VERSION_TAIL}`;

function versionValues(table: LocalTable, recordId: string, version: string, verified: VerifiedRow | undefined): unknown[] {
  if (fault('keep-greater-server-version')) version = greatestSeen(`${table.tableId}\u0000${recordId}`, version); // fault: client:keep-greater-server-version
  return [table.tableId, recordId, version, verified?.identity ?? null, verified?.digest ?? null];
}

export function storeVersion(ctx: Ctx, table: LocalTable, recordId: string, version: string, verified: VerifiedRow | undefined): void {
  prepared(ctx.db, VERSION_SINGLE).run(...versionValues(table, recordId, version, verified));
}

export interface VersionToStore {
  table: LocalTable;
  recordId: string;
  version: string;
  verified: VerifiedRow;
}

/** `storeVersion` for many rows, in the order given, several rows per statement. */
export function storeVersions(ctx: Ctx, versions: readonly VersionToStore[]): void {
  runMultiRow(ctx.db, VERSION_HEAD, VERSION_TAIL, 5, versions.map((v) => versionValues(v.table, v.recordId, v.version, v.verified)));
}

export function forgetVersion(ctx: Ctx, table: LocalTable, recordId: string): void {
  ctx.db.prepare('DELETE FROM _synchro_row_versions WHERE table_id = ? AND record_id = ?').run(table.tableId, recordId);
}

/**
 * Puts the server row in place and then reapplies, in local order, the
 * authored values of every unresolved later intent on that row, so the
 * application keeps seeing what it wrote.
 */
export function applyServerRowKeepingIntent(ctx: Ctx, table: LocalTable, recordId: string, row: WireRow | undefined): void {
  const later = ctx.db
    .prepare(`SELECT mutation_id, operation FROM _synchro_pending_changes WHERE table_id = ? AND record_id = ? AND lifecycle_state IN ('pending', 'sealed', 'blocked_by_predecessor') ORDER BY local_order`)
    .all(table.tableId, recordId) as { mutation_id: string; operation: string }[];
  if (fault('outcome-drops-later-intent')) later.length = 0; // fault: client:outcome-drops-later-intent
  if (later.some((m) => m.operation === 'delete')) return; // the local deletion stays visible
  if (row === undefined) {
    if (later.length === 0) deleteRow(ctx, table, recordId);
    return;
  }
  const merged: WireRow = { ...row };
  const local = readLocalRow(ctx, table, recordId);
  for (const m of later) {
    const values = ctx.db.prepare('SELECT field_id, value FROM _synchro_mutation_values WHERE mutation_id = ?').all(m.mutation_id) as { field_id: string; value: unknown }[];
    for (const v of values) {
      const col = table.columns.find((c) => c.fieldId === v.field_id);
      if (col !== undefined) merged[v.field_id] = toWire(col.type, v.value);
    }
  }
  if (later.length > 0 && local === undefined && later[0]?.operation !== 'insert') return;
  writeRow(ctx, table, merged);
}
