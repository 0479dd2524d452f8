/**
 * Applying a push response. Outcomes are matched to mutations by exact
 * mutation ID, never by position; a response that does not account for every
 * sealed mutation exactly once changes nothing. Everything one response
 * implies (rows, versions, queue states, rejections, dependents) commits in
 * one transaction with capture suppressed.
 */
import type { PushResponse } from '../../../harness/wire/generated.ts';
import { canonicalJson } from '../../../harness/codec/index.ts';
import { applyServerRowKeepingIntent, forgetVersion, storeVersion, verifyRow, type WireRow } from '../apply/rows.ts';
import { markRebuild, scopes } from '../apply/scopes.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { durably, emit } from '../events.ts';
import { fault } from '../faults.ts';
import { type LocalSchema, localSchema, verifyManifest } from '../local/manifest.ts';
import { serverApply } from '../local/metadata.ts';
import { blockDependents, type MutationRecord, recordById } from './records.ts';
import type { SealedBatch } from './seal.ts';

type Outcome = PushResponse['accepted'][number] | PushResponse['rejected'][number];

function mismatch(message: string): ClientError {
  return new ClientError('pushing', 'push_response_mismatch', message, false, 'retry');
}

function schemaFor(ctx: Ctx, version: number, hash: string): LocalSchema {
  if (ctx.schema !== undefined && ((ctx.schema.version === version && ctx.schema.hash === hash) || fault('verify-under-current-schema'))) return ctx.schema; // fault: client:verify-under-current-schema
  const row = ctx.db.prepare('SELECT manifest_json FROM _synchro_schema_archives WHERE schema_version = ? AND schema_hash = ?').get(version, hash) as { manifest_json: string } | undefined;
  if (row === undefined) throw mismatch(`outcome schema ${version}/${hash} is not known locally`);
  return localSchema(verifyManifest(JSON.parse(row.manifest_json)));
}

/** Checks that the response accounts for exactly the batch's mutations. */
function matchOutcomes(batch: SealedBatch, response: PushResponse): Map<string, Outcome> {
  if (response.batch_id !== batch.batch_id) throw mismatch('push response names another batch');
  const request = JSON.parse(batch.request_bytes.toString('utf8')) as { mutations: { mutation_id: string; table: string; pk: Record<string, unknown> }[] };
  const outcomes = new Map<string, Outcome>();
  for (const o of [...response.accepted, ...response.rejected]) {
    if (outcomes.has(o.mutation_id)) throw mismatch(`mutation ${o.mutation_id} has two outcomes`);
    outcomes.set(o.mutation_id, o);
  }
  if (outcomes.size !== request.mutations.length) throw mismatch('push response does not have one outcome per mutation');
  for (const m of request.mutations) {
    const o = outcomes.get(m.mutation_id);
    if (o === undefined) throw mismatch(`mutation ${m.mutation_id} has no outcome`);
    if (o.table !== m.table || JSON.stringify(o.pk) !== JSON.stringify(m.pk)) throw mismatch(`outcome of ${m.mutation_id} names another row`);
  }
  return outcomes;
}

/**
 * True when a row encoded under `schema` cannot stand as a row of the current
 * schema: the outcome names an older manifest and the table is not exactly
 * what it was there (a field added, removed or changed). Such a row is
 * verified under its own manifest but never written as current state.
 */
function historicalShape(ctx: Ctx, schema: LocalSchema, tableId: string): boolean {
  if (schema === ctx.schema) return false;
  const then = schema.manifest.tables.find((t) => t.table_id === tableId);
  const now = ctx.schema?.manifest.tables.find((t) => t.table_id === tableId);
  return then === undefined || now === undefined || canonicalJson(then) !== canonicalJson(now);
}

export function reconcilePush(ctx: Ctx, batch: SealedBatch, response: PushResponse): void {
  const outcomes = matchOutcomes(batch, response);
  // Verify every returned row before writing anything.
  const verified = new Map<string, ReturnType<typeof verifyRow>>();
  const historical = new Set<string>();
  for (const o of outcomes.values()) {
    if (!('server_row' in o) || o.server_row === undefined) continue;
    const schema = schemaFor(ctx, o.outcome_schema.version, o.outcome_schema.hash);
    const table = schema.byId.get(o.table);
    if (table === undefined) throw mismatch(`outcome table ${o.table} is not in its schema`);
    verified.set(o.mutation_id, verifyRow('pushing', schema.hash, table, o.server_row, Object.values(o.pk)[0], o.server_version as string, o.row_checksum));
    if (historicalShape(ctx, schema, o.table) && !fault('apply-historical-row')) historical.add(o.mutation_id); // fault: client:apply-historical-row
  }
  durably(ctx, () => serverApply(ctx.db, () => {
    const request = JSON.parse(batch.request_bytes.toString('utf8')) as { mutations: { mutation_id: string }[] };
    for (const { mutation_id } of request.mutations) {
      const o = outcomes.get(mutation_id) as Outcome;
      const rec = recordById(ctx, mutation_id);
      if (rec === undefined || rec.lifecycle_state !== 'sealed') continue; // already reconciled: an exact replay is applied once
      if (historical.has(mutation_id)) applyHistoricalOutcome(ctx, rec, o);
      else applyOutcome(ctx, rec, o, verified.get(mutation_id));
      // Announced in request order, once the whole response has committed (the unit holds them until then).
      if (o.status === 'applied') emit(ctx, { kind: 'mutation_accepted', mutationID: mutation_id, tableID: o.table, status: o.status, batchID: batch.batch_id });
      else emit(ctx, { kind: 'mutation_rejected', mutationID: mutation_id, tableID: o.table, status: o.status, rejectionCode: o.code, batchID: batch.batch_id });
    }
    ctx.db.prepare(`UPDATE _synchro_push_batches SET state = 'completed', response_json = ? WHERE batch_id = ?`).run(JSON.stringify(response), batch.batch_id);
  }));
}

function applyOutcome(ctx: Ctx, rec: MutationRecord, o: Outcome, verified: ReturnType<typeof verifyRow> | undefined): void {
  const table = ctx.schema?.byId.get(rec.table_id);
  const row = 'server_row' in o ? (o.server_row as WireRow | undefined) : undefined;
  const version = 'server_version' in o ? (o.server_version as string | undefined) : undefined;
  if (o.status === 'applied') {
    ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'accepted', accepted_outcome_json = ? WHERE mutation_id = ?`).run(JSON.stringify(o), rec.mutation_id);
    if (fault('successor-clears-original')) ctx.db.prepare(`DELETE FROM _synchro_pending_changes WHERE table_id = ? AND record_id = ? AND lifecycle_state = 'server_rejected'`).run(rec.table_id, rec.record_id); // fault: client:successor-clears-original
    if (table !== undefined) {
      if (row !== undefined) storeVersion(ctx, table, rec.record_id, o.server_version, verified);
      else forgetVersion(ctx, table, rec.record_id);
      applyServerRowKeepingIntent(ctx, table, rec.record_id, row);
    }
    // Unsent successors get only the server-owned base refreshed; their UUID and content stay.
    ctx.db
      .prepare(`UPDATE _synchro_pending_changes SET base_version = ? WHERE depends_on_mutation_id = ? AND lifecycle_state = 'pending' AND operation <> 'insert'`)
      .run(fault('guess-dependent-base') ? rec.client_version : o.server_version, rec.mutation_id); // fault: client:guess-dependent-base
    return;
  }
  ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'server_rejected' WHERE mutation_id = ?`).run(rec.mutation_id);
  ctx.db
    .prepare(
      `INSERT OR REPLACE INTO _synchro_rejected_mutations(mutation_id, table_name, record_id, status, code, message, server_row_json, server_version, rejection_json, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(rec.mutation_id, rec.table_name, rec.record_id, o.status, o.code, o.message, row === undefined ? null : JSON.stringify(row), version ?? null, JSON.stringify(o), ctx.clock.now());
  if (o.code === 'schema_incompatible' && fault('drop-incompatible-values')) ctx.db.prepare('DELETE FROM _synchro_mutation_values WHERE mutation_id = ? AND field_id IN (SELECT value FROM json_each(?))').run(rec.mutation_id, JSON.stringify(o.incompatible_field_ids ?? [])); // fault: client:drop-incompatible-values
  if (o.status === 'conflict' && table !== undefined && !fault('conflict-keeps-old-base')) { // fault: client:conflict-keeps-old-base
    if (version !== undefined) storeVersion(ctx, table, rec.record_id, version, verified);
    else forgetVersion(ctx, table, rec.record_id);
    applyServerRowKeepingIntent(ctx, table, rec.record_id, row);
  }
  blockDependents(ctx, [rec.mutation_id]);
}

/**
 * An outcome whose row is bound to an older schema the current one does not
 * match: its status is recorded as usual, but neither its row nor its version
 * becomes current state. Every scope holding the row is rebuilt under the
 * current schema instead; later intent on the row stays as the application
 * wrote it and is sent from the version that rebuild brings (see seal.ts).
 */
function applyHistoricalOutcome(ctx: Ctx, rec: MutationRecord, o: Outcome): void {
  if (o.status === 'applied') {
    ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'accepted', accepted_outcome_json = ? WHERE mutation_id = ?`).run(JSON.stringify(o), rec.mutation_id);
  } else {
    ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'server_rejected' WHERE mutation_id = ?`).run(rec.mutation_id);
    ctx.db
      .prepare(
        `INSERT OR REPLACE INTO _synchro_rejected_mutations(mutation_id, table_name, record_id, status, code, message, server_row_json, server_version, rejection_json, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(rec.mutation_id, rec.table_name, rec.record_id, o.status, o.code, o.message, null, null, JSON.stringify(o), ctx.clock.now());
    blockDependents(ctx, [rec.mutation_id]);
  }
  const holders = ctx.db.prepare('SELECT DISTINCT scope_id FROM _synchro_scope_rows WHERE table_id = ? AND record_id = ?').all(rec.table_id, rec.record_id) as { scope_id: string }[];
  for (const { scope_id } of holders.length > 0 ? holders : scopes(ctx)) markRebuild(ctx, scope_id);
}
