/**
 * Values between the wire and PostgreSQL: a wire value as a query parameter,
 * and a row selected through a table's select list as a complete wire row.
 * Push writes with the first; push, capture and manifest reshaping read with
 * the second.
 */
import { canonicalJson, parseJson, readPortable } from '../../../harness/codec/index.ts';
import { integrityFailure } from './errors.ts';
import { fault } from './faults.ts';
import type { FieldDef, TableDef } from './tables.ts';

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
