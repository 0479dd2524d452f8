/**
 * Pull effects are written in stream order, and pull reads only the latest
 * effect of each key in a scope (pull/changes.ts): a writer marks the earlier
 * ones superseded in the transaction that writes the later one.
 */
import type { ClientBase } from 'pg';

/**
 * Marks the effects that `effects` (about to be written, later in the stream than anything
 * stored) supersede: the earlier effects of the same key in the same scope.
 */
export async function supersede(db: ClientBase, generation: string, effects: Array<{ scope_id: string; table_id: string; pk_bytes: string }>): Promise<void> {
  if (effects.length === 0) return;
  // Each key has at most one unmarked effect per scope (a unique partial index holds that), so
  // this is one unique-index probe per key, whatever the statistics say about the table.
  await db.query(
    `UPDATE synchro.scope_effects e SET superseded = true
       FROM jsonb_to_recordset($1::jsonb) AS x(scope_id text, table_id text, pk_bytes text)
      WHERE e.scope_id = x.scope_id AND e.stream_generation = $2 AND e.table_id = x.table_id AND e.pk_bytes = decode(x.pk_bytes, 'hex')
        AND NOT e.superseded`,
    [JSON.stringify(effects.map((e) => ({ scope_id: e.scope_id, table_id: e.table_id, pk_bytes: e.pk_bytes }))), generation],
  );
}
