/**
 * Incremental pull. Each page is validated completely (shape, scope
 * membership, row digests, checksum keys) before one transaction applies
 * rows, provenance, assignment changes, cursors and terminal checksum
 * results; a bad page changes nothing.
 */
import { createHash } from 'node:crypto';
import type { PullResponse } from '../../../harness/wire/generated.ts';
import { protectedRows, storeVersion, verifyRow, type WireRow, writeRow } from '../apply/rows.ts';
import { addProvenance, addScope, dropProvenance, localScopeDigest, markRebuild, removeScope, scopes } from '../apply/scopes.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { durably } from '../events.ts';
import { fault } from '../faults.ts';
import { getMeta, serverApply, setMeta } from '../local/metadata.ts';
import { recordIdOf } from '../local/values.ts';
import { clearBackoff } from './backoff.ts';
import { readResponse } from './response.ts';

export interface PullPageResult {
  hasMore: boolean;
  /** Scopes that failed their terminal checksum on this page. */
  mismatched: string[];
}

function invalid(message: string): ClientError {
  return new ClientError('pulling', 'invalid_pull_page', message, false, 'retry');
}

export function pullRequest(ctx: Ctx): Buffer {
  const schema = ctx.schema;
  if (schema === undefined) throw new ClientError('pulling', 'schema_missing', 'no schema installed', false, 'none');
  const map: Record<string, { cursor: string }> = {};
  for (const s of scopes(ctx)) if (s.rebuild_required === 0 && s.cursor !== null) map[s.scope_id] = { cursor: s.cursor };
  const body = {
    client_id: ctx.config.clientId,
    client_generation: Number(getMeta(ctx.db, 'client_generation')),
    schema: { version: schema.version, hash: schema.hash },
    scope_set_version: Number(getMeta(ctx.db, 'scope_set_version') ?? 0),
    scopes: map,
    limit: ctx.config.pullLimit,
  };
  return Buffer.from(JSON.stringify(body), 'utf8');
}

export function pullIdentity(request: Buffer): string {
  return createHash('sha256').update(request).digest('hex');
}

export async function pullPage(ctx: Ctx): Promise<PullPageResult> {
  const request = pullRequest(ctx);
  const res = await ctx.transport('/sync/pull', request);
  ctx.crash('after_pull_response_received');
  const page = readResponse('pull-response', res, 'pulling', ctx.clock.now());
  const result = applyPullPage(ctx, page);
  ctx.crash('after_pull_apply_commit');
  return result;
}

export function applyPullPage(ctx: Ctx, page: PullResponse): PullPageResult {
  const schema = ctx.schema;
  if (schema === undefined) throw new ClientError('pulling', 'schema_missing', 'no schema installed', false, 'none');
  const before = new Set(scopes(ctx).map((s) => s.scope_id));
  const removed = new Set(page.scope_updates.remove);
  const added = new Set(page.scope_updates.add.map((a) => a.id));
  const active = new Set([...before].filter((s) => !removed.has(s)));
  for (const a of added) active.add(a);
  const rebuild = new Set(page.rebuild);
  if (page.scope_set_version < Number(getMeta(ctx.db, 'scope_set_version') ?? 0)) throw invalid('scope_set_version moved backwards');
  for (const r of removed) if (!before.has(r)) throw invalid(`removal of unassigned scope ${r}`);
  for (const r of rebuild) if (!active.has(r)) throw invalid(`rebuild of unassigned scope ${r}`);
  for (const s of Object.keys(page.scope_cursors)) {
    if (!active.has(s)) throw invalid(`cursor for unassigned scope ${s}`);
    if (rebuild.has(s) || added.has(s)) throw invalid(`cursor for scope ${s} that needs a rebuild`);
  }
  if (page.has_more && page.checksums !== undefined) throw invalid('an intermediate page carries checksums');
  if (!page.has_more) {
    const keys = Object.keys(page.checksums ?? {});
    if ((page.checksums === undefined || keys.length !== active.size || !keys.every((k) => active.has(k))) && !fault('terminal-map-keys-unchecked')) throw invalid('terminal checksums do not cover exactly the active scopes'); // fault: client:terminal-map-keys-unchecked
  }
  if (fault('cursor-before-verify')) for (const [s, cursor] of Object.entries(page.scope_cursors)) ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ? WHERE scope_id = ?').run(cursor, s); // fault: client:cursor-before-verify
  // Validate every change and its digest before writing anything.
  const checked = page.changes.map((c, k) => {
    if (!active.has(c.scope)) throw invalid(`change ${k} names unassigned scope ${c.scope}`);
    const table = schema.byId.get(c.table);
    if (table === undefined) throw invalid(`change ${k} names unknown table ${c.table}`);
    const pkEntries = Object.entries(c.pk);
    if (pkEntries.length !== 1 || pkEntries[0]?.[0] !== table.pk.fieldId) throw invalid(`change ${k} key is not the table's key field`);
    const pk = pkEntries[0]?.[1];
    const verified = c.row === undefined ? undefined : verifyRow('pulling', schema.hash, table, c.row, pk, c.server_version, c.row_checksum);
    return { change: c, table, recordId: recordIdOf(table.pk.type, pk), verified };
  });
  if (fault('cursors-before-rows')) for (const [s, cursor] of Object.entries(page.scope_cursors)) ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ? WHERE scope_id = ?').run(cursor, s); // fault: client:cursors-before-rows
  return durably(ctx, () => serverApply(ctx.db, () => {
    for (const r of removed) removeScope(ctx, r);
    for (const a of page.scope_updates.add) addScope(ctx, a.id, null);
    setMeta(ctx.db, 'scope_set_version', page.scope_set_version);
    const guarded = protectedRows(ctx);
    if (fault('pull-apply-captured')) setMeta(ctx.db, 'sync_lock', '0'); // fault: client:pull-apply-captured
    for (const { change, table, recordId, verified } of checked) {
      if (change.op === 'upsert') {
        storeVersion(ctx, table, recordId, change.server_version, verified);
        addProvenance(ctx, change.scope, table.tableId, recordId);
        if (!guarded.has(`${table.tableId}\u0000${recordId}`)) writeRow(ctx, table, change.row as WireRow);
      } else {
        dropProvenance(ctx, change.scope, table.tableId, recordId);
      }
    }
    ctx.crash('inside_pull_apply');
    for (const [s, cursor] of Object.entries(page.scope_cursors)) {
      if (fault('keep-greater-cursor') && String(cursor) < String((ctx.db.prepare('SELECT cursor FROM _synchro_scopes WHERE scope_id = ?').get(s) as { cursor: string | null } | undefined)?.cursor ?? '')) continue; // fault: client:keep-greater-cursor
      ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ? WHERE scope_id = ?').run(fault('trim-cursor') ? String(cursor).trim() : cursor, s); // fault: client:trim-cursor
    }
    if (fault('cursor-copied-to-other-scopes')) for (const s of active) if (page.scope_cursors[s] === undefined && !rebuild.has(s) && Object.values(page.scope_cursors)[0] !== undefined) ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ? WHERE scope_id = ?').run(Object.values(page.scope_cursors)[0], s); // fault: client:cursor-copied-to-other-scopes
    for (const s of rebuild) markRebuild(ctx, s);
    const mismatched: string[] = [];
    if (!page.has_more) {
      for (const s of scopes(ctx)) {
        if (fault('listed-checksum-is-health') && page.checksums?.[s.scope_id] !== undefined) { ctx.db.prepare('UPDATE _synchro_scopes SET checksum = ?, rebuild_required = 0 WHERE scope_id = ?').run(page.checksums[s.scope_id]?.digest, s.scope_id); continue; } // fault: client:listed-checksum-is-health
        if (s.rebuild_required === 1) continue;
        const local = localScopeDigest(ctx, s.scope_id);
        const claimed = page.checksums?.[s.scope_id]?.digest;
        if (local === claimed) ctx.db.prepare('UPDATE _synchro_scopes SET checksum = ?, local_checksum = ? WHERE scope_id = ?').run(claimed, local, s.scope_id);
        else {
          // A cursor never marks a scope healthy: a mismatch drops it and asks for a rebuild.
          if (!fault('mismatch-keeps-page-cursor')) markRebuild(ctx, s.scope_id); // fault: client:mismatch-keeps-page-cursor
          ctx.db.prepare('UPDATE _synchro_scopes SET local_checksum = ? WHERE scope_id = ?').run(local, s.scope_id);
          mismatched.push(s.scope_id);
        }
      }
    }
    clearBackoff(ctx);
    return { hasMore: page.has_more, mismatched };
  }));
}
