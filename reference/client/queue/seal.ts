/**
 * Batch selection and sealing. A sealed batch is stored with its exact
 * request bytes before anything is sent, and it is resent byte for byte
 * until a response is reconciled; sealing never edits or reorders it.
 */
import { randomUUID } from 'node:crypto';
import { canonicalJson, normalizedMutationOctets } from '../../../harness/codec/index.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { fault } from '../faults.ts';
import { getMeta } from '../local/metadata.ts';
import { normalizePending } from './normalize.ts';
import { blockDependents, type MutationRecord, QUEUE_ORDER, type WireMutation, wireMutation } from './records.ts';

export const REQUEST_MAX_OCTETS = 1_048_576;
export const MUTATION_MAX_OCTETS = 65_536;
export const MUTATION_MAX_COLUMNS = 256;
export const BATCH_MAX_MUTATIONS = 1000;
/** Sizes are measured with the largest envelope integers, so a later generation can never push a sealed batch over a limit. */
const WORST_INTEGER = 9007199254740991;

export interface SealedBatch {
  seq: number;
  batch_id: string;
  request_bytes: Buffer;
  atomic: number;
  state: string;
}

/** The oldest sealed batch that still awaits a reconciled response. */
export function nextSealedBatch(ctx: Ctx): SealedBatch | undefined {
  return ctx.db.prepare(`SELECT seq, batch_id, request_bytes, atomic, state FROM _synchro_push_batches WHERE state = 'sealed' ORDER BY seq LIMIT 1`).get() as SealedBatch | undefined;
}

/**
 * A pending update or delete whose accepted predecessor came back bound to an
 * older schema has no base yet: that outcome's version was not applied (see
 * reconcile.ts). Once every scope holding the row has been rebuilt under the
 * current schema, the version the rebuild stored is the row's authoritative
 * version, and it becomes the base, before sealing, as an accepted
 * predecessor's version would. Until then the mutation waits, unsent.
 */
function baseAfterHistoricalOutcome(ctx: Ctx): void {
  ctx.db
    .prepare(
      `UPDATE _synchro_pending_changes AS p
          SET base_version = (SELECT v.server_version FROM _synchro_row_versions v WHERE v.table_id = p.table_id AND v.record_id = p.record_id)
        WHERE p.lifecycle_state = 'pending' AND p.operation <> 'insert' AND p.base_version IS NULL
          AND EXISTS (SELECT 1 FROM _synchro_pending_changes d WHERE d.mutation_id = p.depends_on_mutation_id AND d.lifecycle_state = 'accepted'
                        AND json_extract(d.accepted_outcome_json, '$.outcome_schema.hash') IS NOT (SELECT value FROM _synchro_meta WHERE key = 'schema_hash'))
          AND EXISTS (SELECT 1 FROM _synchro_row_versions v WHERE v.table_id = p.table_id AND v.record_id = p.record_id)
          AND NOT EXISTS (SELECT 1 FROM _synchro_scope_rows r JOIN _synchro_scopes s ON s.scope_id = r.scope_id
                           WHERE r.table_id = p.table_id AND r.record_id = p.record_id AND s.rebuild_required = 1)`,
    )
    .run();
}

function isSendable(ctx: Ctx, rec: MutationRecord): boolean {
  if (rec.operation !== 'insert' && rec.base_version === null) return false;
  if (rec.depends_on_mutation_id === null) return true;
  const dep = ctx.db.prepare('SELECT lifecycle_state FROM _synchro_pending_changes WHERE mutation_id = ?').get(rec.depends_on_mutation_id) as { lifecycle_state: string } | undefined;
  return dep === undefined || !['pending', 'sealed', 'blocked_by_predecessor'].includes(dep.lifecycle_state);
}

export function envelope(ctx: Ctx, batchId: string, generation: number, atomic: boolean): Record<string, unknown> {
  const schema = ctx.schema;
  if (schema === undefined) throw new ClientError('pushing', 'schema_missing', 'no schema installed', false, 'none');
  const env: Record<string, unknown> = { client_id: ctx.config.clientId, client_generation: generation, batch_id: batchId, schema: { version: schema.version, hash: schema.hash }, mutations: [] };
  if (atomic) env.atomic = true;
  return env;
}

/** Octets of body and RFC 8785 form of a request holding `mutations`, measured with the worst-case envelope. */
export class RequestMeter {
  readonly #bodyBase: number;
  readonly #canonBase: number;
  body = 0;
  canon = 0;
  count = 0;

  constructor(ctx: Ctx, atomic: boolean) {
    const env = envelope(ctx, randomUUID(), WORST_INTEGER, atomic);
    (env.schema as Record<string, unknown>).version = WORST_INTEGER;
    this.#bodyBase = Buffer.byteLength(JSON.stringify(env));
    this.#canonBase = Buffer.byteLength(canonicalJson(env));
    this.body = this.#bodyBase;
    this.canon = this.#canonBase;
  }

  /** Sizes after adding `m`, without adding it. */
  probe(m: WireMutation): { body: number; canon: number } {
    const sep = this.count === 0 ? 0 : 1;
    return { body: this.body + sep + Buffer.byteLength(JSON.stringify(m)), canon: this.canon + sep + Buffer.byteLength(canonicalJson(m)) };
  }

  add(m: WireMutation): void {
    const next = this.probe(m);
    this.body = next.body;
    this.canon = next.canon;
    this.count++;
  }

  fits(m: WireMutation): boolean {
    const next = this.probe(m);
    return next.body <= REQUEST_MAX_OCTETS && next.canon <= REQUEST_MAX_OCTETS;
  }
}

/** Whether one mutation alone breaks a per-mutation limit. */
export function mutationTooLarge(m: WireMutation): boolean {
  const columns = (m.columns as Record<string, unknown> | undefined) ?? {};
  return normalizedMutationOctets(m) > MUTATION_MAX_OCTETS || Object.keys(columns).length > MUTATION_MAX_COLUMNS;
}

function markExceeds(ctx: Ctx, rec: MutationRecord): void {
  ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'exceeds_push_limit' WHERE mutation_id = ?`).run(rec.mutation_id);
  blockDependents(ctx, [rec.mutation_id]);
}

/**
 * Returns the batch to send next: an already sealed one first, otherwise a
 * newly sealed one (committed before returning), or undefined when nothing is
 * sendable.
 */
export function sealNextBatch(ctx: Ctx): SealedBatch | undefined {
  const existing = nextSealedBatch(ctx);
  if (existing !== undefined && !fault('abandon-sealed-batch')) return existing; // fault: client:abandon-sealed-batch
  const sealed = ctx.db.transaction((): SealedBatch | undefined => {
    baseAfterHistoricalOutcome(ctx);
    normalizePending(ctx);
    if (fault('purge-folded-records')) ctx.db.prepare(`DELETE FROM _synchro_pending_changes WHERE lifecycle_state IN ('superseded_before_send', 'cancelled_before_send')`).run(); // fault: client:purge-folded-records
    const candidates = ctx.db.prepare(`SELECT * FROM _synchro_pending_changes WHERE lifecycle_state = 'pending' ORDER BY ${QUEUE_ORDER}`).all() as MutationRecord[];
    const chosen: { rec: MutationRecord; wire: WireMutation }[] = [];
    let atomic = false;
    let meter = new RequestMeter(ctx, false);
    for (const rec of candidates) {
      if (rec.lifecycle_state !== 'pending') continue;
      const current = ctx.db.prepare('SELECT lifecycle_state FROM _synchro_pending_changes WHERE mutation_id = ?').get(rec.mutation_id) as { lifecycle_state: string };
      if (current.lifecycle_state !== 'pending') continue; // blocked earlier in this pass
      if (rec.atomic_group_id !== null) {
        if (chosen.length > 0 && !fault('atomic-group-joins-open-batch')) break; // fault: client:atomic-group-joins-open-batch
        const members = candidates.filter((c) => c.atomic_group_id === rec.atomic_group_id);
        if (!members.every((m) => isSendable(ctx, m))) break; // the group waits and holds back everything behind it
        meter = new RequestMeter(ctx, true);
        for (const m of fault('atomic-group-split-by-batch-size') ? members.slice(0, ctx.config.pushBatchSize) : members) { // fault: client:atomic-group-split-by-batch-size
          const wire = wireMutation(ctx, m, tableOf(ctx, m));
          chosen.push({ rec: m, wire });
          meter.add(wire);
        }
        atomic = true;
        break;
      }
      if (!isSendable(ctx, rec)) continue;
      const wire = wireMutation(ctx, rec, tableOf(ctx, rec));
      if (mutationTooLarge(wire) || (chosen.length === 0 && !meter.fits(wire))) {
        markExceeds(ctx, rec);
        continue;
      }
      if (chosen.length >= ctx.config.pushBatchSize || chosen.length >= BATCH_MAX_MUTATIONS || !meter.fits(wire)) break;
      chosen.push({ rec, wire });
      meter.add(wire);
    }
    if (chosen.length === 0) return undefined;
    const batchId = randomUUID();
    const generation = Number(getMeta(ctx.db, 'client_generation') ?? 0);
    const request = envelope(ctx, batchId, generation, atomic);
    request.mutations = chosen.map((c) => c.wire);
    const bytes = Buffer.from(JSON.stringify(request), 'utf8');
    const info = ctx.db
      .prepare(`INSERT INTO _synchro_push_batches(batch_id, request_bytes, atomic, state, created_at_ms) VALUES (?, ?, ?, 'sealed', ?)`)
      .run(batchId, bytes, atomic ? 1 : 0, ctx.clock.now());
    const mark = ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'sealed', sealed_batch_id = ?, sealed_ordinal = ? WHERE mutation_id = ?`);
    for (const [ordinal, c] of chosen.entries()) mark.run(batchId, ordinal, c.rec.mutation_id);
    return { seq: Number(info.lastInsertRowid), batch_id: batchId, request_bytes: bytes, atomic: atomic ? 1 : 0, state: 'sealed' };
  })();
  if (sealed !== undefined) ctx.crash('after_seal_commit');
  return sealed;
}

/**
 * Moves the unchanged members of a batch the server refused at first
 * execution (expired generation, changed request schema) into a new batch
 * with a new UUID. The old batch stays stored and is never sent again.
 */
export function resealBatch(ctx: Ctx, old: SealedBatch): void {
  if (fault('reseal-in-place')) { const patched = { ...JSON.parse(old.request_bytes.toString('utf8')), client_generation: Number(getMeta(ctx.db, 'client_generation') ?? 0), schema: { version: ctx.schema?.version, hash: ctx.schema?.hash } }; ctx.db.prepare('UPDATE _synchro_push_batches SET request_bytes = ? WHERE batch_id = ?').run(Buffer.from(JSON.stringify(patched), 'utf8'), old.batch_id); return; } // fault: client:reseal-in-place
  ctx.db.transaction(() => {
    const request = JSON.parse(old.request_bytes.toString('utf8')) as { mutations: WireMutation[]; atomic?: true };
    const batchId = randomUUID();
    const generation = Number(getMeta(ctx.db, 'client_generation') ?? 0);
    const next = envelope(ctx, batchId, generation, request.atomic === true);
    next.mutations = request.mutations;
    if (fault('reseal-rewrites-authored-schema')) next.mutations = request.mutations.map((m) => ({ ...m, authored_schema: { version: ctx.schema?.version, hash: ctx.schema?.hash } })); // fault: client:reseal-rewrites-authored-schema
    const bytes = Buffer.from(JSON.stringify(next), 'utf8');
    ctx.db.prepare(`UPDATE _synchro_push_batches SET state = 'superseded' WHERE batch_id = ?`).run(old.batch_id);
    ctx.db
      .prepare(`INSERT INTO _synchro_push_batches(batch_id, request_bytes, atomic, state, created_at_ms) VALUES (?, ?, ?, 'sealed', ?)`)
      .run(batchId, bytes, old.atomic, ctx.clock.now());
    ctx.db.prepare(`UPDATE _synchro_pending_changes SET sealed_batch_id = ? WHERE sealed_batch_id = ? AND lifecycle_state = 'sealed'`).run(batchId, old.batch_id);
  })();
}

export function tableOf(ctx: Ctx, rec: MutationRecord) {
  const table = ctx.schema?.byId.get(rec.table_id);
  if (table === undefined) throw new ClientError('pushing', 'table_not_in_schema', `table ${rec.table_id} is not in the installed schema`, false, 'none');
  return table;
}
