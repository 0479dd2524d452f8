/**
 * Values between the wire and PostgreSQL, and reading a row back in wire form
 * with its checksum (computed by the codec under the outcome schema).
 */
import type { PoolClient } from 'pg';
import { canonicalJson, checksumObject, digestRow, parseJson, readPortable } from '../../../harness/codec/index.ts';
import { fault } from './faults.ts';
import { integrityFailure } from './errors.ts';
import { type FieldDef, quoteIdent, type TableDef } from './tables.ts';

/** A wire value as a query parameter (text PostgreSQL parses with the column's input function). */
export function toParameter(f: FieldDef, value: unknown): unknown {
  if (value === null) return null;
  const v = readPortable({ type: f.type, nullable: f.nullable, ...(f.precision === undefined ? {} : { precision: f.precision, scale: f.scale }) }, value);
  switch (v.type) {
    case 'bytes':
      return v.value === null ? null : Buffer.from(v.value);
    case 'int64':
      return v.value === null ? null : v.value.toString();
    default:
      return v.value === null ? null : String(v.value);
  }
}

/** Canonical decimal text: no trailing fraction zeros, no trailing point, no negative zero. */
function canonicalDecimal(text: string): string {
  let t = text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
  if (/^-0(\.0*)?$/.test(t)) t = '0';
  return t;
}

/** Turns one selected row (aliased by field ID) into a complete wire row. */
export function wireRow(table: TableDef, raw: Record<string, unknown>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const f of table.fields) {
    const v = raw[f.fieldId];
    if (v === null || v === undefined) {
      row[f.fieldId] = null;
      continue;
    }
    switch (f.type) {
      case 'decimal':
        row[f.fieldId] = fault('decimal-trailing-zeros') ? String(v) : canonicalDecimal(String(v)); // fault: server:decimal-trailing-zeros
        break;
      case 'float': {
        const n = Number(v);
        if (!Number.isFinite(n)) throw integrityFailure();
        row[f.fieldId] = n === 0 ? 0 : n;
        break;
      }
      case 'bytes':
        row[f.fieldId] = (v as Buffer).toString('base64url');
        break;
      case 'json':
        row[f.fieldId] = canonicalJson(parseJson(String(v)));
        break;
      default:
        row[f.fieldId] = v;
    }
  }
  return row;
}

export interface RowState {
  /** Fence state of the identity; undefined when it was never written. */
  fence?: { state: 'live' | 'deleted' | 'reserved'; version: string };
  row?: Record<string, unknown>;
}

/** Key predicate on the source relation; the parameter is cast by the key's SQL type. */
export function keyPredicate(table: TableDef, param: number): string {
  const pk = table.byId.get(table.pkFieldId);
  return `${quoteIdent(table.pkColumn)} = $${param}::${pk?.sqlType ?? 'text'}`;
}

/** Reads the source row (locked in `mode`, if given) and then its fence (FOR UPDATE when locking). */
export async function readState(db: PoolClient, table: TableDef, pk: unknown, mode?: 'UPDATE' | 'NO KEY UPDATE'): Promise<RowState> {
  const lock = mode === undefined ? '' : ` FOR ${mode}`;
  const src = await db.query({
    text: `SELECT ${table.selectList} FROM ${table.qualified} WHERE ${keyPredicate(table, 1)}${lock}`,
    values: [String(pk)],
  });
  const pkSql = table.byId.get(table.pkFieldId)?.sqlType ?? 'text';
  const fence = await db.query<{ state: 'live' | 'deleted' | 'reserved'; server_version: string }>(
    `SELECT state, server_version FROM synchro.row_versions WHERE table_id = $1 AND pk_text = to_jsonb($2::${pkSql}) #>> '{}'${mode === undefined ? '' : ' FOR UPDATE'}`,
    [table.tableId, String(pk)],
  );
  const out: RowState = {};
  const f = fence.rows[0];
  if (f !== undefined) out.fence = { state: f.state, version: f.server_version };
  const r = src.rows[0] as Record<string, unknown> | undefined;
  if (r !== undefined) out.row = wireRow(table, r);
  return out;
}

/** `server_row` + `row_checksum` for a row under the given schema hash. */
export function rowWithChecksum(table: TableDef, schemaHash: string, row: Record<string, unknown>, serverVersion: string) {
  const { digest } = digestRow({ schemaHash, table: table.shape, row, serverVersion });
  return { server_row: row, row_checksum: checksumObject(digest) };
}
