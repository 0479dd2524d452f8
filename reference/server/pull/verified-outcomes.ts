/**
 * The verifying read of a pull page (SYNC-PULL-004): before any change is
 * built, every selected candidate must have an outcome the store can vouch
 * for. An upsert needs its captured projection (a stored row object), and a
 * stored row digest is recomputed from the stored row and version and
 * compared, never served on trust. A candidate that fails either is an
 * integrity failure of the whole page: the caller's transaction rolls back
 * (no changes, cursors, checksums or acknowledgement) and the failure is
 * recorded in a transaction of its own, which keeps readiness unready while
 * the store still holds that damage (075-capture-store-integrity.sql).
 *
 * Cost: one row digest per served row (a few microseconds each), the same
 * work the worker did once when it stored the digest.
 */
import type { Pool } from 'pg';
import { rowDigest } from '../../../harness/codec/index.ts';
import { digestTag } from '../core/checksums.ts';
import { integrityFailure, SyncError } from '../core/errors.ts';
import { fault } from '../core/faults.ts';
import { formatLsn } from '../core/lsn.ts';
import type { TableDef } from '../core/tables.ts';
import type { Candidate } from './candidate.ts';

export type StoreFailure = 'projection_missing' | 'digest_mismatch';

/** A selected candidate the store cannot give a valid outcome for. */
export interface BrokenCandidate {
  candidate: Candidate;
  failure: StoreFailure;
}

/** The whole page fails with 500 sync_integrity_failure; the broken candidate is kept for the record. */
export class CandidateIntegrityFailure extends SyncError {
  readonly broken: BrokenCandidate;
  readonly streamGeneration: string;
  constructor(broken: BrokenCandidate, streamGeneration: string) {
    super('sync_integrity_failure', 'sync operation failed');
    this.broken = broken;
    this.streamGeneration = streamGeneration;
  }
}

const isRowObject = (row: unknown): boolean => row !== null && typeof row === 'object' && !Array.isArray(row);

/** Buffer.compare takes any Uint8Array, so neither digest is wrapped. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(a, b) === 0;
}

/** The first selected candidate without a valid outcome, or undefined. */
export function firstBrokenCandidate(selected: Candidate[], tables: Map<string, TableDef>, schemaHash: string): BrokenCandidate | undefined {
  for (const candidate of selected) {
    if (candidate.row === null ? candidate.op === 'upsert' : !isRowObject(candidate.row)) return { candidate, failure: 'projection_missing' };
    const table = tables.get(candidate.tableId);
    const stored = candidate.stored;
    // A digest stored under another schema or shape is not the one this page serves; the builder computes that one.
    if (candidate.row === null || table === undefined || stored == null || stored.tag !== digestTag(table, schemaHash)) continue;
    if (fault('pull004-trusts-stored-digest')) continue; // fault: server:pull004-trusts-stored-digest
    let computed: Uint8Array;
    try {
      computed = rowDigest({ schemaHash, table: table.shape, row: candidate.row, serverVersion: candidate.serverVersion });
    } catch {
      // A stored row that no longer fits its shape cannot vouch for any digest: the page fails, as the builder would fail it.
      throw integrityFailure();
    }
    if (!sameBytes(computed, stored.digest)) return { candidate, failure: 'digest_mismatch' };
  }
  return undefined;
}

/**
 * Records the broken candidate a page failed on, in a transaction of its
 * own. A failure to record propagates instead of the integrity failure: the
 * page has failed either way, and an unrecorded failure must not pass quietly.
 */
export async function recordBrokenCandidate(pool: Pool, { broken, streamGeneration }: CandidateIntegrityFailure): Promise<void> {
  const { candidate, failure } = broken;
  const db = await pool.connect();
  try {
    await db.query('BEGIN; SET LOCAL ROLE synchro_owner');
    await db.query('SELECT synchro.capture_store_record_failure($1, $2, $3::pg_lsn, $4, $5, $6, $7)', [
      candidate.scope,
      streamGeneration,
      formatLsn(candidate.lsn),
      candidate.event,
      candidate.effect,
      failure,
      failure === 'digest_mismatch' ? (candidate.stored?.digest ?? null) : null,
    ]);
    await db.query('COMMIT');
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    db.release();
  }
}
