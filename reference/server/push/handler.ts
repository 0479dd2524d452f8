/**
 * POST /sync/push. Gate order: authentication, structure, retirement, replay
 * lookup, generation, schema, then one first-execution transaction holding
 * the batch claim, every outcome, every source write and the exact response
 * bytes. Replay sends the stored bytes and does nothing else.
 */
import type { Pool, PoolClient, QueryResult } from 'pg';
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
      const result = await execute(db, ['BEGIN', ...OWNER_SETTINGS], userId, request, batchFp, mutationFps, catalog, admit);
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
  try {
    return { status: 200, body: (await execute(db, OWNER_SETTINGS, userId, request, batchFp, mutationFps, catalog, () => {})).body };
  } catch (e) {
    // No retry here: the caller's transaction is what a lost claim would have to redo.
    if (e instanceof ClaimLost) throw temporarilyUnavailable();
    throw e;
  } finally {
    await db.query('RESET ROLE').catch(() => undefined);
  }
}

/** The role and lock wait of the push's work, set for its transaction. */
const OWNER_SETTINGS = ['SET LOCAL ROLE synchro_owner', "SET LOCAL lock_timeout = '5s'"];

async function execute(
  db: PoolClient,
  opening: string[],
  userId: string,
  request: PushRequest,
  batchFp: Uint8Array,
  mutationFps: Uint8Array[],
  catalog: Awaited<ReturnType<ManifestStore['catalog']>>,
  admit: Admit,
): Promise<{ commit: boolean; body: string }> {
  const scope = [userId, request.client_id];
  // The gates' reads go in the opening's round trip, in gate order, as statements without parameters
  // (escaped literals; simple-protocol results are text, parsed by the same type parsers).
  const [user, clientId, batchId] = [userId, request.client_id, request.batch_id].map((v) => db.escapeLiteral(v));
  const mutationIds = db.escapeLiteral(`{${request.mutations.map((m) => m.mutation_id).join(',')}}`);
  const reads = [
    `SELECT 1 FROM synchro.client_retirements WHERE user_id = ${user} AND client_id = ${clientId}`,
    `SELECT client_generation, expired FROM synchro.clients WHERE user_id = ${user} AND client_id = ${clientId}`,
    ...(fault('ledger-ttl') ? [`WITH b AS (DELETE FROM synchro.push_batches WHERE completed_at < ${db.escapeLiteral(serverTime())}::timestamptz - interval '365 days' RETURNING user_id, client_id, batch_id) DELETE FROM synchro.push_mutations m USING b WHERE m.user_id = b.user_id AND m.client_id = b.client_id AND m.first_batch_id = b.batch_id`] : []), // fault: server:ledger-ttl
    // Replay lookup comes before the generation and schema gates.
    `SELECT fp, state, response_body FROM synchro.push_batches WHERE user_id = ${user} AND client_id = ${clientId} AND batch_id = ${batchId}`,
    `SELECT mutation_id, fp, code, outcome FROM synchro.push_mutations WHERE user_id = ${user} AND client_id = ${clientId} AND mutation_id = ANY (${mutationIds}::uuid[])`,
  ];
  const results = (await db.query([...opening, ...reads].join(';\n'))) as unknown as QueryResult[];
  const [retired, client] = results.slice(opening.length) as [QueryResult, QueryResult<{ client_generation: string; expired: boolean }>];
  const [batch, known] = results.slice(-2) as [QueryResult<{ fp: Buffer; state: string; response_body: string | null }>, QueryResult<{ mutation_id: string; fp: Buffer; code: string | null; outcome: string }>];
  if (retired.rowCount !== 0) throw new SyncError('client_retired', 'client has been retired');
  const clientRow = client.rows[0];
  if (clientRow === undefined) throw authRequired();

  const stored = batch.rows[0];
  if (stored !== undefined) {
    if (!Buffer.from(batchFp).equals(stored.fp) && !fault('batch-fingerprint-ignored')) throw new SyncError('idempotency_conflict', 'batch_id was used for different content'); // fault: server:batch-fingerprint-ignored
    if (stored.state === 'complete' && stored.response_body !== null) {
      const body = fault('replay-fresh-time') ? stored.response_body.replace(/"server_time":"[^"]*"/, `"server_time":"${serverTime()}"`) : stored.response_body; // fault: server:replay-fresh-time
      return { commit: false, body };
    }
  }
  const replays = new Map<string, Outcome>();
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

  const applied = freshOutcomes.some((o) => o.status === 'applied');
  let epochSteps = 0;
  if (applied && !fault('no-epoch-advance')) epochSteps++; // fault: server:no-epoch-advance
  if (!applied && fault('pull014-any-push-advances-epoch')) epochSteps++; // fault: server:pull014-any-push-advances-epoch
  if (request.atomic === true && !applied && fault('atomic-rollback-advances-epoch')) epochSteps++; // fault: server:atomic-rollback-advances-epoch
  const outcomes = request.mutations.map((m) => byId.get(m.mutation_id) as Outcome);
  const body = canonicalJson({
    batch_id: request.batch_id,
    server_time: serverTime(),
    accepted: outcomes.filter((o) => o.status === 'applied'),
    rejected: outcomes.filter((o) => o.status !== 'applied'),
  });
  await completeBatch(db, userId, request, {
    mutations: request.mutations.flatMap((m, k) => (replays.has(m.mutation_id) ? [] : [{ m, ordinal: k, fp: mutationFps[k] as Uint8Array, outcome: byId.get(m.mutation_id) as Outcome }])),
    epochSteps,
    response: fault('response-not-stored') ? null : body, // fault: server:response-not-stored
  });
  return { commit: true, body };
}

interface NewMutation {
  m: Mutation;
  ordinal: number;
  fp: Uint8Array;
  outcome: Outcome;
}

/**
 * The batch's last writes, in one statement: every new mutation's identity, fingerprint and exact
 * outcome, the client's accepted-write epoch stepped on (`epochSteps` times), and the response
 * stored on the batch's claim (unless `response` is null). The three touch different tables and
 * none reads what another writes, so running them as parts of one statement changes nothing.
 */
async function completeBatch(db: PoolClient, userId: string, request: PushRequest, last: { mutations: NewMutation[]; epochSteps: number; response: string | null }): Promise<void> {
  const values: unknown[] = [];
  const $ = (value: unknown) => `$${values.push(value)}`;
  const [user, client] = [$(userId), $(request.client_id)];
  const parts: string[] = [];
  const rows = last.mutations;
  if (rows.length > 0) {
    const col = <T>(f: (r: NewMutation) => T) => rows.map(f);
    parts.push(`recorded AS (
      INSERT INTO synchro.push_mutations (user_id, client_id, mutation_id, fp_algorithm, fp_version, fp_domain, fp, first_batch_id,
         request_ordinal, authored_schema_version, authored_schema_hash, submitted_schema_version, submitted_schema_hash,
         table_id, pk_text, op, status, code, outcome, outcome_schema_version, outcome_schema_hash)
       SELECT ${user}, ${client}, u.mutation_id, 'sha256', 1, 'synchro:v3:push-mutation-fingerprint:v1', u.fp, ${$(request.batch_id)}, u.ordinal,
              u.authored_version, u.authored_hash, ${$(request.schema.version)}, ${$(request.schema.hash)}, u.table_id, u.pk_text, u.op, u.status, u.code, u.outcome,
              u.outcome_version, u.outcome_hash
         FROM unnest(${$(col((r) => r.m.mutation_id))}::uuid[], ${$(col((r) => Buffer.from(r.fp)))}::bytea[], ${$(col((r) => r.ordinal))}::int[],
                     ${$(col((r) => r.m.authored_schema.version))}::bigint[], ${$(col((r) => r.m.authored_schema.hash))}::text[], ${$(col((r) => r.m.table))}::text[],
                     ${$(col((r) => pkText(r.m)))}::text[], ${$(col((r) => r.m.op))}::text[], ${$(col((r) => r.outcome.status))}::text[],
                     ${$(col((r) => (r.outcome.code as string | undefined) ?? null))}::text[], ${$(col((r) => canonicalJson(r.outcome)))}::text[],
                     ${$(col((r) => (r.outcome.outcome_schema as { version: number }).version))}::bigint[], ${$(col((r) => (r.outcome.outcome_schema as { hash: string }).hash))}::text[])
           AS u(mutation_id, fp, ordinal, authored_version, authored_hash, table_id, pk_text, op, status, code, outcome, outcome_version, outcome_hash)
       ON CONFLICT DO NOTHING
       RETURNING 1)`);
  }
  if (last.epochSteps > 0) {
    parts.push(`epoch AS (UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + ${$(last.epochSteps)}::bigint WHERE user_id = ${user} AND client_id = ${client})`);
  }
  if (last.response !== null) {
    parts.push(`stored AS (UPDATE synchro.push_batches SET state = 'complete', http_status = 200, response_body = ${$(last.response)}, completed_at = now()
      WHERE user_id = ${user} AND client_id = ${client} AND batch_id = ${$(request.batch_id)})`);
  }
  if (parts.length === 0) return;
  const { rows: counted } = await db.query<{ recorded: string }>(`WITH ${parts.join(',\n')}\nSELECT ${rows.length > 0 ? '(SELECT count(*) FROM recorded)' : '0'} AS recorded`, values);
  // Another request owns one of these mutation IDs right now: never execute it twice.
  if (Number(counted[0]?.recorded) !== rows.length) throw temporarilyUnavailable();
}
