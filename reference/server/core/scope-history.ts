/**
 * The scope-set history of a client (sql/023-scope-history.sql) and the
 * pull and connect delta computed from it. The server stores a new set and answers it in
 * one transaction, but the answer can be lost on the way; the client then
 * presents its older scope_set_version again. Answering the delta from the
 * set at the presented version (not from the stored set) sends the missed
 * add or remove again, without moving the version a second time.
 */
import type { PoolClient } from 'pg';
import { named } from './named-statements.ts';

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * Stores the set handed out at `version`, by the reconciliation that just
 * advanced to it. A row already there for that version can only come from a
 * version moved back by a test control; the newer set replaces it.
 */
export async function recordScopeSet(db: PoolClient, userId: string, clientId: string, version: number, assigned: readonly string[]): Promise<void> {
  await db.query(
    `INSERT INTO synchro.client_scope_sets (user_id, client_id, scope_set_version, client_generation, scope_ids)
     SELECT user_id, client_id, $3, client_generation, $4::text[] FROM synchro.clients WHERE user_id = $1 AND client_id = $2
     ON CONFLICT (user_id, client_id, scope_set_version) DO UPDATE SET scope_ids = excluded.scope_ids, client_generation = excluded.client_generation, recorded_at = now()`,
    [userId, clientId, version, [...assigned]],
  );
}

/** The set handed out at `version`, or undefined when it is not on record. */
export async function scopeSetAt(db: PoolClient, userId: string, clientId: string, version: number): Promise<string[] | undefined> {
  const { rows } = await db.query<{ scope_ids: string[] }>(
    'SELECT scope_ids FROM synchro.client_scope_sets WHERE user_id = $1 AND client_id = $2 AND scope_set_version = $3',
    [userId, clientId, version],
  );
  return rows[0]?.scope_ids;
}

/**
 * Sensitivity-run fault only: the lowest version on record for exactly this
 * set (byte-ordered scope IDs), as a server that names each distinct set by
 * one version would reuse it.
 */
export async function versionRecordedFor(db: PoolClient, userId: string, clientId: string, assigned: readonly string[]): Promise<number | undefined> {
  const { rows } = await db.query<{ scope_set_version: string }>(
    'SELECT scope_set_version FROM synchro.client_scope_sets WHERE user_id = $1 AND client_id = $2 AND scope_ids = $3::text[] ORDER BY scope_set_version LIMIT 1',
    [userId, clientId, [...assigned]],
  );
  return rows[0] === undefined ? undefined : Number(rows[0].scope_set_version);
}

/**
 * Drops the sets below `version`: the client presented `version` on a pull
 * that succeeded, so it holds that set and never asks from an older one.
 * The row of `version` itself stays, because the answer to this pull can be
 * lost too and the retry presents the same version.
 */
export async function pruneScopeSets(db: PoolClient, userId: string, clientId: string, version: number): Promise<void> {
  await db.query(named('DELETE FROM synchro.client_scope_sets WHERE user_id = $1 AND client_id = $2 AND scope_set_version < $3', [userId, clientId, version]));
}

export interface ScopeDelta {
  added: string[];
  removed: string[];
}

/** What turns `from` into `to`, each list in byte order. */
export function scopeDelta(from: Iterable<string>, to: Iterable<string>): ScopeDelta {
  const a = new Set(from);
  const b = new Set(to);
  return { added: [...b].filter((s) => !a.has(s)).sort(byBytes), removed: [...a].filter((s) => !b.has(s)).sort(byBytes) };
}

/**
 * The scope delta for a client presenting `versions.presented`. At the
 * stored version it is exactly what this request's reconciliation changed;
 * so it is ahead of it too (pull refuses that earlier, connect answers it as
 * before). Behind it the client missed an answer (lost on the way, or never
 * applied), so it gets the difference between the set recorded for its
 * version and the current set, and the version does not move again for
 * that. A version with no record (pruned, or set by a test control) falls
 * back to the scopes the client says it holds: assigned but not held → add,
 * held but not assigned → remove.
 */
export async function deltaForPresented(
  db: PoolClient,
  ids: { userId: string; clientId: string },
  versions: { presented: number; stored: number },
  reconciled: { assigned: string[]; added: string[]; removed: string[] },
  held: readonly string[],
): Promise<ScopeDelta> {
  if (versions.presented >= versions.stored) return { added: reconciled.added, removed: reconciled.removed };
  const recorded = await scopeSetAt(db, ids.userId, ids.clientId, versions.presented);
  return scopeDelta(recorded ?? held, reconciled.assigned);
}
