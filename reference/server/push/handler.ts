/**
 * POST /sync/push. Gate order: authentication, structure, retirement, replay
 * lookup, generation, schema, then one first-execution transaction holding
 * the batch claim, every outcome, every source write and the exact response
 * bytes. Replay sends the stored bytes and does nothing else.
 */
import type { Pool, PoolClient } from 'pg';
import { canonicalJson, pushFingerprints } from '../../../harness/codec/index.ts';
import type { PushRequest } from '../../../harness/wire/index.ts';
import type { Admit } from '../core/admission.ts';
import { serverTime } from '../core/clock.ts';
import { commitThroughEntryPoint } from '../core/entry-points.ts';
import { authRequired, invalidRequest, SyncError, temporarilyUnavailable } from '../core/errors.ts';
import { fault } from '../core/faults.ts';
import { checkPushText } from '../core/input-limits.ts';
import type { ManifestStore } from '../core/manifests.ts';
import { allocateBeforeLimits } from './ledger-faults.ts';
import { type Outcome, runAtomic, runNonAtomic } from './units.ts';
import { checkKeys, type Mutation, pkText, validatePushShape } from './validate.ts';

export interface PushResult {
  status: number;
  body: string;
}

/** Microsecond UTC time in the protocol's `Z` form. */

/** Raised inside the transaction when a concurrent request claimed the batch first; the lookup is redone. */
class ClaimLost extends Error {}

export async function handlePush(pool: Pool, manifests: ManifestStore, userId: string, value: unknown, admit: Admit = () => {}): Promise<PushResult> {
  if (fault('schema007-ledger-before-limits')) await allocateBeforeLimits(pool, userId, value); // fault: server:schema007-ledger-before-limits
  if (fault('schema007-push-batch-truncated') && Array.isArray((value as { mutations?: unknown }).mutations)) (value as { mutations: unknown[] }).mutations.splice(1000); // fault: server:schema007-push-batch-truncated
  const request = validatePushShape(value);
  checkPushText(request);
  const catalog = await manifests.catalog();
  checkKeys(request, catalog.tables);
  const { batch: batchFp, mutations: mutationFps } = pushFingerprints(userId, request);
  for (let attempt = 0; ; attempt++) {
    const db = await pool.connect();
    try {
      await db.query("BEGIN; SET LOCAL ROLE synchro_owner; SET LOCAL lock_timeout = '5s'");
      const result = await execute(db, userId, request, batchFp, mutationFps, catalog, admit);
      // A replay changed nothing: its transaction is rolled back and the call is committed alone.
      return await commitThroughEntryPoint(db, 'push', userId, result.body, result.commit && !(fault('atomic-group-uncommitted') && request.atomic === true)); // fault: server:atomic-group-uncommitted
    } catch (e) {
      await db.query('ROLLBACK').catch(() => undefined);
      if (e instanceof ClaimLost && attempt === 0) continue;
      if (e instanceof ClaimLost) throw temporarilyUnavailable();
      throw e;
    } finally {
      db.release();
    }
  }
}

/**
 * The push entry point for a caller that already holds an open transaction on
 * `db` (an application pushing from inside its own SQL transaction, as the
 * upstream `synchro_push` function is called). Step 1 of the push units comes
 * first: with a pending deferred trigger event in the caller's transaction the
 * call fails with SQLSTATE 25000 before the batch claim, and the event is not
 * fired. The caller commits or rolls back; a replay changes nothing.
 */
export async function pushInCallerTransaction(db: PoolClient, manifests: ManifestStore, userId: string, value: unknown): Promise<PushResult> {
  const request = validatePushShape(value);
  const catalog = await manifests.catalog();
  checkKeys(request, catalog.tables);
  const { batch: batchFp, mutations: mutationFps } = pushFingerprints(userId, request);
  await db.query('SELECT synchro.synchro_push_guard()');
  await db.query("SET LOCAL ROLE synchro_owner; SET LOCAL lock_timeout = '5s'");
  try {
    return { status: 200, body: (await execute(db, userId, request, batchFp, mutationFps, catalog, () => {})).body };
  } catch (e) {
    // No retry here: the caller's transaction is what a lost claim would have to redo.
    if (e instanceof ClaimLost) throw temporarilyUnavailable();
    throw e;
  } finally {
    await db.query('RESET ROLE').catch(() => undefined);
  }
}

async function execute(
  db: PoolClient,
  userId: string,
  request: PushRequest,
  batchFp: Uint8Array,
  mutationFps: Uint8Array[],
  catalog: Awaited<ReturnType<ManifestStore['catalog']>>,
  admit: Admit,
): Promise<{ commit: boolean; body: string }> {
  const scope = [userId, request.client_id];
  const retired = await db.query('SELECT 1 FROM synchro.client_retirements WHERE user_id = $1 AND client_id = $2', scope);
  if (retired.rowCount !== 0) throw new SyncError('client_retired', 'client has been retired');
  const client = await db.query<{ client_generation: string; expired: boolean }>(
    'SELECT client_generation, expired FROM synchro.clients WHERE user_id = $1 AND client_id = $2',
    scope,
  );
  const clientRow = client.rows[0];
  if (clientRow === undefined) throw authRequired();

  if (fault('ledger-ttl')) await db.query("WITH b AS (DELETE FROM synchro.push_batches WHERE completed_at < $1::timestamptz - interval '365 days' RETURNING user_id, client_id, batch_id) DELETE FROM synchro.push_mutations m USING b WHERE m.user_id = b.user_id AND m.client_id = b.client_id AND m.first_batch_id = b.batch_id", [serverTime()]); // fault: server:ledger-ttl
  // Replay lookup comes before the generation and schema gates.
  const batch = await db.query<{ fp: Buffer; state: string; response_body: string | null }>(
    'SELECT fp, state, response_body FROM synchro.push_batches WHERE user_id = $1 AND client_id = $2 AND batch_id = $3',
    [...scope, request.batch_id],
  );
  const stored = batch.rows[0];
  if (stored !== undefined) {
    if (!Buffer.from(batchFp).equals(stored.fp) && !fault('batch-fingerprint-ignored')) throw new SyncError('idempotency_conflict', 'batch_id was used for different content'); // fault: server:batch-fingerprint-ignored
    if (stored.state === 'complete' && stored.response_body !== null) {
      const body = fault('replay-fresh-time') ? stored.response_body.replace(/"server_time":"[^"]*"/, `"server_time":"${serverTime()}"`) : stored.response_body; // fault: server:replay-fresh-time
      return { commit: false, body };
    }
  }
  const replays = new Map<string, Outcome>();
  const known = await db.query<{ mutation_id: string; fp: Buffer; code: string | null; outcome: string }>(
    'SELECT mutation_id, fp, code, outcome FROM synchro.push_mutations WHERE user_id = $1 AND client_id = $2 AND mutation_id = ANY ($3::uuid[])',
    [...scope, request.mutations.map((m) => m.mutation_id)],
  );
  const fpById = new Map(request.mutations.map((m, k) => [m.mutation_id, mutationFps[k] as Uint8Array]));
  for (const row of known.rows) {
    if (!Buffer.from(fpById.get(row.mutation_id) ?? []).equals(row.fp) && !fault('mutation-fingerprint-ignored')) { // fault: server:mutation-fingerprint-ignored
      throw new SyncError('idempotency_conflict', 'mutation_id was used for different content');
    }
    if (request.atomic === true && !fault('atomic-carries-ledgered-mutation')) throw invalidRequest('an atomic request cannot reuse a mutation of another batch'); // fault: server:atomic-carries-ledgered-mutation
    if (row.code === 'atomic_batch_rejected') throw invalidRequest('a mutation rejected with its atomic batch cannot be reused');
    replays.set(row.mutation_id, { ...(JSON.parse(row.outcome) as Outcome), ...(fault('replay-rebinds-outcome-schema') ? { outcome_schema: request.schema } : {}) }); // fault: server:replay-rebinds-outcome-schema
  }

  if (clientRow.expired || Number(clientRow.client_generation) !== request.client_generation) {
    if (fault('schema005-generation-refusal-ledgered')) { await db.query(`INSERT INTO synchro.push_batches (user_id, client_id, batch_id, protocol_version, client_generation, schema_version, schema_hash, fp_algorithm, fp_version, fp_domain, fp, state) VALUES ($1, $2, $3, 3, $4, $5, $6, 'sha256', 1, 'synchro:v3:push-batch-fingerprint:v1', $7, 'claimed') ON CONFLICT DO NOTHING`, [...scope, request.batch_id, request.client_generation, request.schema.version, request.schema.hash, Buffer.from(batchFp)]); await db.query('COMMIT; BEGIN; SET LOCAL ROLE synchro_owner'); } // fault: server:schema005-generation-refusal-ledgered
    throw new SyncError('client_generation_expired', 'client generation has expired', {
      current_client_generation: Number(clientRow.client_generation),
    });
  }
  const current = catalog.current;
  if (request.schema.version !== current.version || request.schema.hash !== current.hash) {
    throw new SyncError('schema_mismatch', 'schema is not current', {
      current_schema: { version: current.version, hash: current.hash },
      received_schema: { version: request.schema.version, hash: request.schema.hash },
    });
  }
  admit();

  const claim = await db.query(
    `INSERT INTO synchro.push_batches (user_id, client_id, batch_id, protocol_version, client_generation, schema_version, schema_hash,
       fp_algorithm, fp_version, fp_domain, fp, state)
     VALUES ($1, $2, $3, 3, $4, $5, $6, 'sha256', 1, 'synchro:v3:push-batch-fingerprint:v1', $7, 'claimed')
     ON CONFLICT DO NOTHING`,
    [...scope, request.batch_id, request.client_generation, request.schema.version, request.schema.hash, Buffer.from(batchFp)],
  );
  if (claim.rowCount === 0) throw new ClaimLost();

  const fresh = request.mutations.filter((m) => !replays.has(m.mutation_id));
  const ctx = { db, catalog, schema: request.schema };
  const freshOutcomes = request.atomic === true ? await runAtomic(ctx, fresh) : await runNonAtomic(ctx, fresh);
  const byId = new Map(replays);
  for (const [k, m] of fresh.entries()) byId.set(m.mutation_id, freshOutcomes[k] as Outcome);

  await recordMutations(
    db,
    userId,
    request,
    request.mutations.flatMap((m, k) => (replays.has(m.mutation_id) ? [] : [{ m, ordinal: k, fp: mutationFps[k] as Uint8Array, outcome: byId.get(m.mutation_id) as Outcome }])),
  );
  if (freshOutcomes.some((o) => o.status === 'applied') && !fault('no-epoch-advance')) { // fault: server:no-epoch-advance
    await db.query('UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1 WHERE user_id = $1 AND client_id = $2', scope);
  }
  if (!freshOutcomes.some((o) => o.status === 'applied') && fault('pull014-any-push-advances-epoch')) await db.query('UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1 WHERE user_id = $1 AND client_id = $2', scope); // fault: server:pull014-any-push-advances-epoch
  if (request.atomic === true && !freshOutcomes.some((o) => o.status === 'applied') && fault('atomic-rollback-advances-epoch')) await db.query('UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1 WHERE user_id = $1 AND client_id = $2', scope); // fault: server:atomic-rollback-advances-epoch
  const outcomes = request.mutations.map((m) => byId.get(m.mutation_id) as Outcome);
  const body = canonicalJson({
    batch_id: request.batch_id,
    server_time: serverTime(),
    accepted: outcomes.filter((o) => o.status === 'applied'),
    rejected: outcomes.filter((o) => o.status !== 'applied'),
  });
  if (!fault('response-not-stored')) await db.query( // fault: server:response-not-stored
    `UPDATE synchro.push_batches SET state = 'complete', http_status = 200, response_body = $4, completed_at = now()
      WHERE user_id = $1 AND client_id = $2 AND batch_id = $3`,
    [...scope, request.batch_id, body],
  );
  return { commit: true, body };
}

interface NewMutation {
  m: Mutation;
  ordinal: number;
  fp: Uint8Array;
  outcome: Outcome;
}

/** One statement writes every new mutation's identity, fingerprint and exact outcome. */
async function recordMutations(db: PoolClient, userId: string, request: PushRequest, rows: NewMutation[]): Promise<void> {
  if (rows.length === 0) return;
  const col = <T>(f: (r: NewMutation) => T) => rows.map(f);
  const inserted = await db.query(
    `INSERT INTO synchro.push_mutations (user_id, client_id, mutation_id, fp_algorithm, fp_version, fp_domain, fp, first_batch_id,
       request_ordinal, authored_schema_version, authored_schema_hash, submitted_schema_version, submitted_schema_hash,
       table_id, pk_text, op, status, code, outcome, outcome_schema_version, outcome_schema_hash)
     SELECT $1, $2, u.mutation_id, 'sha256', 1, 'synchro:v3:push-mutation-fingerprint:v1', u.fp, $3, u.ordinal,
            u.authored_version, u.authored_hash, $4, $5, u.table_id, u.pk_text, u.op, u.status, u.code, u.outcome,
            u.outcome_version, u.outcome_hash
       FROM unnest($6::uuid[], $7::bytea[], $8::int[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::text[],
                   $14::text[], $15::text[], $16::text[], $17::bigint[], $18::text[])
         AS u(mutation_id, fp, ordinal, authored_version, authored_hash, table_id, pk_text, op, status, code, outcome, outcome_version, outcome_hash)
     ON CONFLICT DO NOTHING`,
    [
      userId, request.client_id, request.batch_id, request.schema.version, request.schema.hash,
      col((r) => r.m.mutation_id), col((r) => Buffer.from(r.fp)), col((r) => r.ordinal),
      col((r) => r.m.authored_schema.version), col((r) => r.m.authored_schema.hash), col((r) => r.m.table), col((r) => pkText(r.m)),
      col((r) => r.m.op), col((r) => r.outcome.status), col((r) => (r.outcome.code as string | undefined) ?? null),
      col((r) => canonicalJson(r.outcome)),
      col((r) => (r.outcome.outcome_schema as { version: number }).version), col((r) => (r.outcome.outcome_schema as { hash: string }).hash),
    ],
  );
  // Another request owns one of these mutation IDs right now: never execute it twice.
  if (inserted.rowCount !== rows.length) throw temporarilyUnavailable();
}
