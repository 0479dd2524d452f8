/**
 * Fault-only behaviour of the push ledger, switched on by its recipe and
 * never reached otherwise: the ledger row an implementation would leave if it
 * allocated the batch before checking the push limits. The row holds the
 * fingerprint of the refused body, so the batch ID is spent on content the
 * server never accepted.
 */
import { createHash } from 'node:crypto';
import type { Pool } from 'pg';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export async function allocateBeforeLimits(pool: Pool, userId: string, value: unknown): Promise<void> {
  const v = (value ?? {}) as { client_id?: unknown; batch_id?: unknown; client_generation?: unknown; schema?: { version?: unknown; hash?: unknown } };
  if (typeof v.client_id !== 'string' || typeof v.batch_id !== 'string' || !UUID.test(v.batch_id)) return;
  if (typeof v.client_generation !== 'number' || typeof v.schema?.version !== 'number' || typeof v.schema?.hash !== 'string') return;
  const fp = createHash('sha256').update(JSON.stringify(value)).digest();
  await pool.query(
    `INSERT INTO synchro.push_batches (user_id, client_id, batch_id, protocol_version, client_generation, schema_version, schema_hash, fp_algorithm, fp_version, fp_domain, fp, state)
     VALUES ($1, $2, $3, 3, $4, $5, $6, 'sha256', 1, 'synchro:v3:push-batch-fingerprint:v1', $7, 'claimed') ON CONFLICT DO NOTHING`,
    [userId, v.client_id, v.batch_id, v.client_generation, v.schema.version, v.schema.hash, fp],
  );
}
