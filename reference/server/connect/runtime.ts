/**
 * The minimum client runtime gate of connect. It runs after the protocol
 * gate and before structural validation: a well-formed app_version below the
 * provisioned minimum is 426 with the runtime pair; a malformed app_version
 * is left to structural validation (400), since it cannot be ranked at all.
 */
import type { Pool } from 'pg';
import { compareSemVer, parseSemVer } from '../../../harness/codec/semver.ts';
import { integrityFailure, SyncError } from '../core/errors.ts';
import { fault } from '../core/faults.ts';

/** The provisioned minimum, or undefined when none is set. */
async function minimumClientVersion(pool: Pool): Promise<string | undefined> {
  const db = await pool.connect();
  try {
    await db.query('BEGIN; SET LOCAL ROLE synchro_owner');
    const { rows } = await db.query<{ minimum_client_version: string }>('SELECT minimum_client_version FROM synchro.client_runtime_policy');
    await db.query('COMMIT');
    return rows[0]?.minimum_client_version;
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    db.release();
  }
}

/** The runtime check of one version against the minimum (negative: below). */
function rank(received: NonNullable<ReturnType<typeof parseSemVer>>, minimum: NonNullable<ReturnType<typeof parseSemVer>>): number {
  if (fault('semver-ignore-prerelease')) return compareSemVer({ ...received, prerelease: [] }, { ...minimum, prerelease: [] }); // fault: server:semver-ignore-prerelease
  return compareSemVer(received, minimum);
}

export async function runtimeGate(pool: Pool, value: unknown): Promise<void> {
  const minimumText = await minimumClientVersion(pool);
  if (minimumText === undefined) return;
  const minimum = parseSemVer(minimumText);
  // The policy table refuses malformed values; finding one anyway is an impossible state: fail closed.
  if (minimum === undefined) throw integrityFailure();
  const received = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).app_version : undefined;
  const parsed = parseSemVer(received);
  if (parsed === undefined) return;
  if (rank(parsed, minimum) < 0) {
    throw new SyncError('upgrade_required', 'this application version is below the minimum client version', {
      minimum_client_version: minimumText,
      received_client_version: received,
    });
  }
}
