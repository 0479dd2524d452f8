/**
 * The portable scopes of the server: the shared scopes the operator declared
 * portable, in scope ID order. The seed manifest exports exactly these and the
 * artifact exporter checks the manifest against them; portability is never
 * inferred from rows, and user scopes are never shared scopes.
 */
import type { ClientBase } from 'pg';
import { fault } from '../core/faults.ts';

type ScopeIds = { scope_id: string };

export async function declaredPortableScopes(db: ClientBase): Promise<string[]> {
  if (fault('seed002-every-shared-scope-portable')) return (await db.query<ScopeIds>('SELECT scope_id FROM synchro.shared_scopes ORDER BY scope_id COLLATE "C"')).rows.map((r) => r.scope_id); // fault: server:seed002-every-shared-scope-portable
  if (fault('seed002-scopes-with-rows-exported')) return (await db.query<ScopeIds>('SELECT scope_id FROM synchro.scope_rows GROUP BY scope_id ORDER BY scope_id COLLATE "C"')).rows.map((r) => r.scope_id); // fault: server:seed002-scopes-with-rows-exported
  const { rows } = await db.query<ScopeIds>('SELECT scope_id FROM synchro.shared_scopes WHERE portable ORDER BY scope_id COLLATE "C"');
  return rows.map((r) => r.scope_id);
}
