/**
 * Scope rebuild: a durable attempt (one rebuild ID, fixed page limit, next
 * token) that survives process death, pages applied one transaction each
 * with their receipts, and finality that installs cursor and checksum only
 * when the recomputed scope digest matches the server's.
 */
import { randomUUID } from 'node:crypto';
import type { RebuildResponse } from '../../../harness/wire/generated.ts';
import { protectedRows, storeVersions, verifyRow, type WireRow, writeRows } from '../apply/rows.ts';
import { addProvenances, clearScopeRows, localScopeDigest, markRebuild } from '../apply/scopes.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { durably, emit } from '../events.ts';
import { clearApplicationTables, deleteRowsOfScope, resetEveryOtherScope } from '../fault-behaviour.ts';
import { fault } from '../faults.ts';
import { settleMigration } from '../journal/migration.ts';
import type { LocalTable } from '../local/manifest.ts';
import { getMeta, serverApply } from '../local/metadata.ts';
import { prepared } from '../local/statements.ts';
import { recordIdOf } from '../local/values.ts';
import { clearBackoff } from '../sync/backoff.ts';
import { readResponse } from '../sync/response.ts';

export interface Attempt {
  scope_id: string;
  rebuild_id: string;
  client_generation: number;
  schema_version: number;
  schema_hash: string;
  generation: number;
  cursor: string | null;
  page_limit: number;
  pages_applied: number;
  final_cursor: string | null;
  final_checksum: string | null;
}

export function attemptFor(ctx: Ctx, scopeId: string): Attempt | undefined {
  return ctx.db.prepare('SELECT * FROM _synchro_rebuild_attempts WHERE scope_id = ?').get(scopeId) as Attempt | undefined;
}

export function scopeNeedingRebuild(ctx: Ctx): string | undefined {
  const row = ctx.db.prepare('SELECT scope_id FROM _synchro_scopes WHERE rebuild_required = 1 ORDER BY scope_id LIMIT 1').get() as { scope_id: string } | undefined;
  return row?.scope_id;
}

/** Starts a fresh attempt: drops the scope's provenance and unjustified rows, then records the new attempt. */
export function startAttempt(ctx: Ctx, scopeId: string): Attempt {
  const schema = ctx.schema;
  if (schema === undefined) throw new ClientError('rebuilding', 'schema_missing', 'no schema installed', false, 'none');
  serverApply(ctx.db, () => {
    const old = attemptFor(ctx, scopeId);
    if (old !== undefined) ctx.db.prepare('DELETE FROM _synchro_rebuild_page_receipts WHERE rebuild_id = ?').run(old.rebuild_id);
    ctx.db.prepare('DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?').run(scopeId);
    if (fault('rebuild-resets-every-scope')) resetEveryOtherScope(ctx, scopeId); // fault: client:rebuild-resets-every-scope
    if (fault('rebuild-drops-shared-rows')) deleteRowsOfScope(ctx, scopeId); // fault: client:rebuild-drops-shared-rows
    if (fault('local004-rebuild-clears-rejections')) ctx.db.prepare('DELETE FROM _synchro_rejected_mutations').run(); // fault: client:local004-rebuild-clears-rejections
    if (!fault('local005-rebuild-keeps-old-provenance')) clearScopeRows(ctx, scopeId); // fault: client:local005-rebuild-keeps-old-provenance
    if (fault('rebuild-clears-local-tables')) clearApplicationTables(ctx); // fault: client:rebuild-clears-local-tables
    ctx.db.prepare('UPDATE _synchro_scopes SET generation = generation + 1, cursor = NULL, checksum = NULL, rebuild_required = 1 WHERE scope_id = ?').run(scopeId);
    const gen = (ctx.db.prepare('SELECT generation FROM _synchro_scopes WHERE scope_id = ?').get(scopeId) as { generation: number }).generation;
    ctx.db
      .prepare(
        'INSERT INTO _synchro_rebuild_attempts(scope_id, rebuild_id, client_generation, schema_version, schema_hash, generation, cursor, page_limit) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)',
      )
      .run(scopeId, randomUUID(), Number(getMeta(ctx.db, 'client_generation')), schema.version, schema.hash, gen, ctx.config.rebuildLimit);
  });
  ctx.crash('after_rebuild_attempt_commit');
  return attemptFor(ctx, scopeId) as Attempt;
}

export function rebuildRequest(ctx: Ctx, a: Attempt): Buffer {
  return Buffer.from(
    JSON.stringify({
      client_id: ctx.config.clientId,
      client_generation: a.client_generation,
      schema: { version: a.schema_version, hash: a.schema_hash },
      scope: a.scope_id,
      rebuild_id: a.rebuild_id,
      cursor: a.cursor,
      limit: a.page_limit,
    }),
    'utf8',
  );
}

function invalid(message: string): ClientError {
  return new ClientError('rebuilding', 'invalid_rebuild_page', message, false, 'retry');
}

/** Fetches and applies the attempt's next page (the same request on every retry). */
export async function rebuildPage(ctx: Ctx, a: Attempt): Promise<void> {
  const request = rebuildRequest(ctx, a);
  const res = await ctx.transport('/sync/rebuild', request);
  const page = readResponse('rebuild-response', res, 'rebuilding', ctx.clock.now());
  applyRebuildPage(ctx, a, request, page, res.body);
  ctx.crash('after_rebuild_page_commit');
}

/**
 * Applies one validated page in one transaction. `response` is the body the
 * server sent: the page receipt keeps the exchange's exact octets, request
 * and response as they went over the wire, never a re-serialization of what
 * was parsed.
 */
export function applyRebuildPage(ctx: Ctx, a: Attempt, request: Buffer, page: RebuildResponse, response: Uint8Array): void {
  const schema = ctx.schema;
  if (schema === undefined || schema.hash !== a.schema_hash) throw new ClientError('rebuilding', 'schema_changed', 'the schema changed during the rebuild', false, 'retry');
  if (page.scope !== a.scope_id) throw invalid('rebuild page names another scope');
  const final = !page.has_more;
  if (final && (page.cursor !== null || page.final_scope_cursor === undefined || page.checksum === undefined)) throw invalid('final page lacks its cursor or checksum');
  if (!final && (page.cursor === null || page.final_scope_cursor !== undefined || page.checksum !== undefined)) throw invalid('intermediate page has the wrong shape');
  const checked = page.records.map((r, k) => {
    const table = schema.byId.get(r.table);
    if (table === undefined) throw invalid(`record ${k} names unknown table ${r.table}`);
    const pk = Object.values(r.pk)[0];
    return { r, table, recordId: recordIdOf(table.pk.type, pk), verified: verifyRow('rebuilding', schema.hash, table, r.row, pk, r.server_version, r.row_checksum) };
  });
  // A snapshot holds each row once: a repeat on this page or of an earlier page of the attempt is refused, never deduplicated.
  const earlier = heldByAttempt(ctx, a, checked);
  const seen = new Set<string>();
  for (const { table, recordId } of checked) {
    const id = `${table.tableId}\u0000${recordId}`;
    if (seen.has(id) || earlier.has(id)) throw invalid(`the rebuild repeats the record of ${table.tableId} ${recordId}`);
    seen.add(id);
  }
  serverApply(ctx.db, () => {
    const guarded = protectedRows(ctx);
    // Each bookkeeping table is written for the whole page at once; application rows follow in page order.
    storeVersions(ctx, checked.map(({ r, table, recordId, verified }) => ({ table, recordId, version: r.server_version, verified })));
    addProvenances(ctx, a.scope_id, a.generation, checked.map(({ table, recordId }) => ({ tableId: table.tableId, recordId })));
    for (const run of runsByTable(checked.filter(({ table, recordId }) => !guarded.has(`${table.tableId}\u0000${recordId}`)))) {
      writeRows(ctx, run.table, run.rows);
    }
    ctx.db
      .prepare('INSERT INTO _synchro_rebuild_page_receipts(rebuild_id, page, request_json, response_json, is_final) VALUES (?, ?, ?, ?, ?)')
      .run(a.rebuild_id, a.pages_applied, request, response, final ? 1 : 0);
    ctx.db
      .prepare('UPDATE _synchro_rebuild_attempts SET cursor = ?, pages_applied = pages_applied + 1, final_cursor = ?, final_checksum = ? WHERE scope_id = ?')
      .run(page.cursor, page.final_scope_cursor ?? null, page.checksum?.digest ?? null, a.scope_id);
    if (fault('pull019-page-clears-rebuild-flag')) ctx.db.prepare('UPDATE _synchro_scopes SET rebuild_required = 0 WHERE scope_id = ?').run(a.scope_id); // fault: client:pull019-page-clears-rebuild-flag
    clearBackoff(ctx);
  });
}

/** Records of the page this attempt already holds from an earlier page, keyed `table_id NUL record_id`: one query per table on the page. */
function heldByAttempt(ctx: Ctx, a: Attempt, checked: readonly { table: LocalTable; recordId: string }[]): Set<string> {
  const byTable = new Map<string, string[]>();
  for (const { table, recordId } of checked) {
    const ids = byTable.get(table.tableId);
    if (ids === undefined) byTable.set(table.tableId, [recordId]);
    else ids.push(recordId);
  }
  const held = new Set<string>();
  const query = prepared(
    ctx.db,
    'SELECT record_id FROM _synchro_scope_rows WHERE scope_id = ? AND table_id = ? AND generation = ? AND record_id IN (SELECT value FROM json_each(?))',
  );
  for (const [tableId, ids] of byTable) {
    for (const row of query.all(a.scope_id, tableId, a.generation, JSON.stringify(ids)) as { record_id: string }[]) held.add(`${tableId}\u0000${row.record_id}`);
  }
  return held;
}

/** Consecutive records of the same table, in page order, so their application rows go in multi-row statements without reordering any write. */
function runsByTable(records: readonly { r: RebuildResponse['records'][number]; table: LocalTable }[]): { table: LocalTable; rows: WireRow[] }[] {
  const runs: { table: LocalTable; rows: WireRow[] }[] = [];
  for (const { r, table } of records) {
    const last = runs[runs.length - 1];
    if (last !== undefined && last.table === table) last.rows.push(r.row as WireRow);
    else runs.push({ table, rows: [r.row as WireRow] });
  }
  return runs;
}

/**
 * Installs the final cursor and checksum when the digest matches, in one
 * transaction; on mismatch nothing final is installed, the attempt is
 * discarded and the scope stays rebuild-required. Returns whether it matched.
 */
export function finishRebuild(ctx: Ctx, scopeId: string): boolean {
  return durably(ctx, () => serverApply(ctx.db, () => {
    const a = attemptFor(ctx, scopeId);
    if (a === undefined || a.final_checksum === null) throw invalid('no final page to finish');
    const local = localScopeDigest(ctx, scopeId);
    ctx.crash('before_rebuild_finality_commit');
    ctx.db.prepare('DELETE FROM _synchro_rebuild_page_receipts WHERE rebuild_id = ?').run(a.rebuild_id);
    ctx.db.prepare('DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?').run(scopeId);
    if (local !== a.final_checksum && !fault('trust-final-checksum')) { // fault: client:trust-final-checksum
      if (fault('pull021-first-sync-unverified') && a.generation === 1) return ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ?, checksum = ?, local_checksum = ?, rebuild_required = 0 WHERE scope_id = ?').run(a.final_cursor, a.final_checksum, local, scopeId) !== undefined; // fault: client:pull021-first-sync-unverified
      if (fault('pull019-mismatch-installs-own-digest')) return ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ?, checksum = ?, local_checksum = ?, rebuild_required = 0 WHERE scope_id = ?').run(a.final_cursor, local, local, scopeId) !== undefined; // fault: client:pull019-mismatch-installs-own-digest
      if (fault('cursor-means-healthy')) return ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ?, rebuild_required = 0 WHERE scope_id = ?').run(a.final_cursor, scopeId) !== undefined; // fault: client:cursor-means-healthy
      markRebuild(ctx, scopeId);
      ctx.db.prepare('UPDATE _synchro_scopes SET local_checksum = ? WHERE scope_id = ?').run(local, scopeId);
      return false;
    }
    ctx.db
      .prepare('UPDATE _synchro_scopes SET cursor = ?, checksum = ?, local_checksum = ?, rebuild_required = 0 WHERE scope_id = ?')
      .run(a.final_cursor, a.final_checksum, local, scopeId);
    if (fault('pull019-checksum-apart-from-cursor')) ctx.db.prepare('UPDATE _synchro_scopes SET checksum = NULL WHERE scope_id = ?').run(scopeId); // fault: client:pull019-checksum-apart-from-cursor
    settleMigration(ctx);
    emit(ctx, { kind: 'rebuild_completed', scopeID: scopeId });
    return true;
  }));
}

/**
 * One rebuild step for `scopeId`: start an attempt, fetch the next page, or
 * finish. Returns 'mismatch' when finality found a wrong digest.
 */
export async function rebuildStep(ctx: Ctx, scopeId: string): Promise<'page' | 'done' | 'mismatch'> {
  let a = attemptFor(ctx, scopeId);
  if (a !== undefined && a.final_checksum !== null) return finishRebuild(ctx, scopeId) ? 'done' : 'mismatch';
  if (a === undefined || a.client_generation !== Number(getMeta(ctx.db, 'client_generation')) || a.schema_hash !== ctx.schema?.hash) a = startAttempt(ctx, scopeId);
  try {
    await rebuildPage(ctx, a);
  } catch (e) {
    if (e instanceof ClientError && e.code === 'rebuild_restart_required') {
      startAttempt(ctx, scopeId);
      return 'page';
    }
    throw e;
  }
  return 'page';
}
