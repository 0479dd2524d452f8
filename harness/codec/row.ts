/**
 * Complete authoritative rows: validation against the table shape and the
 * canonical row body u32be(field_count) || repeated(text(field_id) || typed_value).
 */
import { concat, text, u32be } from './bytes.ts';
import { CodecError, pointer } from './errors.ts';
import { parseJson, RawNumber } from './strict-json.ts';
import type { TableShape } from './table-shape.ts';
import { encodeTypedValue } from './typed-value.ts';
import { type PortableValue, readPortable } from './wire-values.ts';

export interface ReadRow {
  values: ReadonlyMap<string, PortableValue>;
  pk: PortableValue;
}

/**
 * Checks that the row has every synced field exactly once, each value in its
 * canonical form, and (when a separate key is given) that the key inside the
 * row equals it.
 */
export function readRow(shape: TableShape, row: unknown, pkWire: unknown | undefined, path = ''): ReadRow {
  if (typeof row !== 'object' || row === null || Array.isArray(row) || row instanceof RawNumber) {
    throw new CodecError('wrong_json_type', path, 'a row is a JSON object keyed by field ID');
  }
  const r = row as Record<string, unknown>;
  for (const key of Object.keys(r)) {
    if (!shape.fields.has(key)) throw new CodecError('unknown_field', pointer(path, key), `${shape.tableId} has no synced field ${key}`);
  }
  const values = new Map<string, PortableValue>();
  for (const fieldId of shape.bodyOrder) {
    const spec = shape.fields.get(fieldId);
    if (spec === undefined) continue;
    if (!Object.hasOwn(r, fieldId)) throw new CodecError('missing_field', pointer(path, fieldId), `row lacks field ${fieldId}`);
    values.set(fieldId, readPortable(spec, r[fieldId], pointer(path, fieldId)));
  }
  const inRow = values.get(shape.pkFieldId);
  if (inRow === undefined) throw new CodecError('missing_field', pointer(path, shape.pkFieldId), 'row lacks its key');
  if (pkWire !== undefined) {
    const pk = readPortable({ type: shape.pkType, nullable: false }, pkWire, `${path}#pk`);
    if (Buffer.compare(encodeTypedValue(pk), encodeTypedValue(inRow)) !== 0) {
      throw new CodecError('pk_mismatch', pointer(path, shape.pkFieldId), 'the key inside the row differs from the separate key');
    }
  }
  return { values, pk: inRow };
}

/** Parses a row from JSON text, reporting a member given twice as a duplicate field. */
export function parseRowText(rowText: string, path = ''): unknown {
  try {
    return parseJson(rowText);
  } catch (e) {
    if (e instanceof CodecError && e.code === 'json_duplicate_member') {
      throw new CodecError('duplicate_field', path + e.path, 'a field appears twice in the row');
    }
    throw e;
  }
}

export function encodeRowBody(shape: TableShape, values: ReadonlyMap<string, PortableValue>): Uint8Array {
  const parts: Uint8Array[] = [u32be(shape.bodyOrder.length)];
  for (const fieldId of shape.bodyOrder) {
    const v = values.get(fieldId);
    if (v === undefined) throw new CodecError('missing_field', pointer('', fieldId), `no value for ${fieldId}`);
    parts.push(text(fieldId), encodeTypedValue(v));
  }
  return concat(parts);
}
