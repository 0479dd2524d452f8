/**
 * The authoritative scope set of a client: the default user scope (unless
 * revoked), every shared scope, the user's grants and the registered
 * assignment function's result, evaluated once per request as the function's
 * owner. A changed set advances scope_set_version by exactly one.
 */
import type { PoolClient } from 'pg';
import { integrityFailure } from './errors.ts';
import { fault } from './faults.ts';
import { named } from './named-statements.ts';
import { recordScopeSet, versionRecordedFor } from './scope-history.ts';
import { quoteIdent } from './tables.ts';

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

async function assignedByFunction(db: PoolClient, userId: string): Promise<string[]> {
  const reg = await db.query<{ fn_oid: number; fn_schema: string; fn_name: string; max_scopes: number | null; def_sha256: Buffer; owner: string | null; now_sha: Buffer | null }>(
    named(`SELECT a.fn_oid, a.fn_schema, a.fn_name, a.max_scopes, a.def_sha256,
                  (SELECT r.rolname FROM pg_proc p JOIN pg_roles r ON r.oid = p.proowner WHERE p.oid = a.fn_oid) AS owner,
                  CASE WHEN EXISTS (SELECT 1 FROM pg_proc WHERE oid = a.fn_oid) THEN synchro.function_definition_sha256(a.fn_oid) END AS now_sha
             FROM synchro.assignment_function a`),
  );
  const fn = reg.rows[0];
  if (fn === undefined) return [];
  // A dropped or edited function fails closed until it is registered again.
  if (fault('definition-hash-unchecked')) fn.def_sha256 = fn.now_sha ?? fn.def_sha256; // fault: server:definition-hash-unchecked
  if (fn.owner === null || fn.now_sha === null || !fn.now_sha.equals(fn.def_sha256)) throw integrityFailure();
  const limit = fn.max_scopes === null ? (fault('unbounded-assignment-capped') ? ' LIMIT 1000' : '') : ` LIMIT ${fn.max_scopes + 1}`; // fault: server:unbounded-assignment-capped
  let rows: Array<{ s: string | null }>;
  try {
    await db.query(`SET LOCAL ROLE ${quoteIdent(fn.owner)}`);
    rows = (await db.query<{ s: string | null }>(`SELECT DISTINCT s FROM ${quoteIdent(fn.fn_schema)}.${quoteIdent(fn.fn_name)}($1) AS s${limit}`, [userId])).rows;
    await db.query('SET LOCAL ROLE synchro_owner');
  } catch {
    throw integrityFailure();
  }
  if (fault('bounded-assignment-truncated') && fn.max_scopes !== null) rows = rows.slice(0, fn.max_scopes); // fault: server:bounded-assignment-truncated
  if (fn.max_scopes !== null && rows.length > fn.max_scopes && !fault('assignment-over-bound-accepted')) throw integrityFailure(); // fault: server:assignment-over-bound-accepted
  const out: string[] = [];
  for (const { s } of rows) {
    if (s === null || s.trim() === '' || (s.startsWith('user:') && !fault('function-user-scopes-accepted'))) throw integrityFailure(); // fault: server:function-user-scopes-accepted
    out.push(s);
  }
  return out;
}

export async function computeAssignment(db: PoolClient, userId: string): Promise<string[]> {
  const shared = fault('ignore-shared-scopes') ? '' : 'UNION SELECT scope_id FROM synchro.shared_scopes'; // fault: server:ignore-shared-scopes
  const sources = await db.query<{ scope_id: string }>(
    named(
      `SELECT 'user:' || $1::text AS scope_id WHERE NOT EXISTS (SELECT 1 FROM synchro.default_scope_revocations WHERE user_id = $1)
       ${shared}
       UNION SELECT scope_id FROM synchro.user_scope_grants WHERE user_id = $1`,
      [userId],
    ),
  );
  const all = new Set(sources.rows.map((r) => r.scope_id));
  const fromFunction = await assignedByFunction(db, userId).catch((e: unknown) => (fault('assignment-failure-as-empty') ? [] : Promise.reject(e))); // fault: server:assignment-failure-as-empty
  if (fault('function-scopes-kept-as-grants')) for (const s of fromFunction) await db.query('INSERT INTO synchro.user_scope_grants (user_id, scope_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [userId, s]); // fault: server:function-scopes-kept-as-grants
  for (const s of fromFunction) all.add(s);
  return [...all].sort(byBytes);
}

export interface Reconciled {
  scopeSetVersion: number;
  assigned: string[];
  added: string[];
  removed: string[];
}

/** Writes nothing when the set is unchanged; otherwise one version step and the row changes. */
export async function reconcile(db: PoolClient, userId: string, clientId: string, storedVersion: number): Promise<Reconciled> {
  const assigned = await computeAssignment(db, fault('default-scope-from-client-id') ? clientId : userId); // fault: server:default-scope-from-client-id
  const prior = await db.query<{ scope_id: string }>(
    named('SELECT scope_id FROM synchro.client_scopes WHERE user_id = $1 AND client_id = $2 AND assigned', [userId, clientId]),
  );
  const before = new Set(prior.rows.map((r) => r.scope_id));
  const added = assigned.filter((s) => !before.has(s));
  const removed = [...before].filter((s) => !assigned.includes(s)).sort(byBytes);
  if (added.length === 0 && removed.length === 0 && fault('unchanged-set-rerecorded')) await recordScopeSet(db, userId, clientId, storedVersion, assigned); // fault: server:unchanged-set-rerecorded
  if (added.length === 0 && removed.length === 0 && !fault('scope-version-bump-unchanged')) return { scopeSetVersion: storedVersion, assigned, added, removed }; // fault: server:scope-version-bump-unchanged
  let version = storedVersion + (fault('scope-version-double-step') ? 2 : 1); // fault: server:scope-version-double-step
  if (fault('scope-version-reuses-recorded-set')) version = (await versionRecordedFor(db, userId, clientId, assigned)) ?? version; // fault: server:scope-version-reuses-recorded-set
  if (version > Number.MAX_SAFE_INTEGER) throw integrityFailure('scope_set_version cannot advance past the portable integer range');
  for (const s of added) {
    await db.query(
      `INSERT INTO synchro.client_scopes (user_id, client_id, scope_id, assigned, changed_at_version) VALUES ($1, $2, $3, true, $4)
       ON CONFLICT (user_id, client_id, scope_id) DO UPDATE SET assigned = true, changed_at_version = excluded.changed_at_version`,
      [userId, clientId, s, version],
    );
  }
  for (const s of removed) {
    await db.query(
      'UPDATE synchro.client_scopes SET assigned = false, changed_at_version = $4 WHERE user_id = $1 AND client_id = $2 AND scope_id = $3',
      [userId, clientId, s, version],
    );
  }
  await db.query('UPDATE synchro.clients SET scope_set_version = $3 WHERE user_id = $1 AND client_id = $2', [userId, clientId, version]);
  // Same transaction as the version step: a later pull can rebuild the delta for a client that missed this answer.
  await recordScopeSet(db, userId, clientId, version, assigned);
  return { scopeSetVersion: version, assigned, added, removed };
}

/** The set as last stored for the client, without evaluating the sources (what rebuild uses). */
export async function storedAssignment(db: PoolClient, userId: string, clientId: string, storedVersion: number): Promise<Reconciled> {
  const { rows } = await db.query<{ scope_id: string }>(
    named('SELECT scope_id FROM synchro.client_scopes WHERE user_id = $1 AND client_id = $2 AND assigned', [userId, clientId]),
  );
  return { scopeSetVersion: storedVersion, assigned: rows.map((r) => r.scope_id).sort(byBytes), added: [], removed: [] };
}

