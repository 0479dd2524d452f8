/**
 * What a manifest step means for rows already captured. When a table's field
 * set changes, the stored wire rows (projections, scope contents, scope
 * effects) are rewritten to the new shape in the publishing transaction, so
 * every later pull, rebuild and checksum reads rows of the current manifest
 * only: removed fields go, added fields come in as null, or (Class 3) with
 * the values the source rows hold. A Class 3 step names the scopes whose rows
 * gained values: exactly those must rebuild.
 */
import type { PoolClient } from 'pg';
import { wireRow } from './rows.ts';
import type { TableDef } from './tables.ts';

type FieldLite = { field_id: string };
export type TableLite = { table_id: string; fields: FieldLite[] };

export interface FieldChange {
  table: TableDef;
  added: string[];
  removed: string[];
}

/** Tables present before and after whose field IDs differ. */
export function fieldChanges(before: TableLite[], after: Map<string, TableDef>): FieldChange[] {
  const out: FieldChange[] = [];
  for (const old of before) {
    const table = after.get(old.table_id);
    if (table === undefined) continue;
    const was = new Set(old.fields.map((f) => f.field_id));
    const now = new Set(table.fields.map((f) => f.fieldId));
    const added = [...now].filter((id) => !was.has(id));
    const removed = [...was].filter((id) => !now.has(id));
    if (added.length > 0 || removed.length > 0) out.push({ table, added, removed });
  }
  return out;
}

const STORES = ['synchro.projections', 'synchro.scope_rows', 'synchro.scope_effects'];

/** Wire values of the added fields, per key text, for rows where any of them is non-null. */
export type AddedValues = (db: PoolClient, change: FieldChange) => Promise<Map<string, Record<string, unknown>>>;

/** Current wire values of the added fields, per key text, for source rows where any of them is non-null. */
export async function addedValues(db: PoolClient, change: FieldChange): Promise<Map<string, Record<string, unknown>>> {
  const { table } = change;
  const pk = table.fields.find((f) => f.fieldId === table.pkFieldId);
  if (pk === undefined || change.added.length === 0) return new Map();
  const { rows } = await db.query<Record<string, unknown>>(`SELECT (to_jsonb(src) ->> $1) AS "$pk", ${table.selectList} FROM ${table.qualified} AS src`, [pk.column]);
  const out = new Map<string, Record<string, unknown>>();
  for (const r of rows) {
    const wire = wireRow(table, r);
    const values = Object.fromEntries(change.added.map((id) => [id, wire[id] ?? null]));
    if (Object.values(values).some((v) => v !== null)) out.set(String(r.$pk), values);
  }
  return out;
}

/**
 * Rewrites stored rows of each changed table; returns the scopes holding a row
 * whose added fields carry values (empty when the step needs no history). The
 * values come from the live source rows, or (a bootstrapped Class 3 step) from
 * the values the bootstrap staged.
 */
export async function reshapeStoredRows(db: PoolClient, changes: FieldChange[], valuesOf: AddedValues = addedValues): Promise<string[]> {
  const affected = new Set<string>();
  for (const change of changes) {
    const nulls = JSON.stringify(Object.fromEntries(change.added.map((id) => [id, null])));
    for (const store of STORES) {
      await db.query(`UPDATE ${store} SET row_wire = (row_wire - $2::text[]) || $3::jsonb WHERE table_id = $1 AND row_wire IS NOT NULL`, [change.table.tableId, change.removed, nulls]);
    }
    for (const [pkText, values] of await valuesOf(db, change)) {
      const patch = JSON.stringify(values);
      for (const store of STORES) {
        await db.query(`UPDATE ${store} SET row_wire = row_wire || $3::jsonb WHERE table_id = $1 AND pk_text = $2 AND row_wire IS NOT NULL`, [change.table.tableId, pkText, patch]);
      }
      const { rows } = await db.query<{ scope_id: string }>('SELECT scope_id FROM synchro.scope_rows WHERE table_id = $1 AND pk_text = $2', [change.table.tableId, pkText]);
      for (const r of rows) affected.add(r.scope_id);
    }
  }
  return [...affected];
}
