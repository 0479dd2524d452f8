/**
 * Complete authoritative rows: validation against the table shape and the
 * canonical row body u32be(field_count) || repeated(text(field_id) || typed_value).
 */
import { ByteWriter } from './byte-writer.ts';
import { concat, text, u32be } from './bytes.ts';
import { CodecError, pointer } from './errors.ts';
import type { RowPlan } from './row-plan.ts';
import { parseJson, RawNumber } from './strict-json.ts';
import type { TableShape } from './table-shape.ts';
import { encodeTypedValue, type WireValueWriter, writeWireValue } from './typed-value.ts';
import { type ColumnSpec, checkColumnSpec, type PortableValue, readPortable } from './wire-values.ts';

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
  const r = rowObject(shape, row, path);
  const values = new Map<string, PortableValue>();
  for (const fieldId of shape.bodyOrder) {
    const spec = shape.fields.get(fieldId);
    if (spec === undefined) continue;
    if (!Object.hasOwn(r, fieldId)) throw new CodecError('missing_field', pointer(path, fieldId), `row lacks field ${fieldId}`);
    values.set(fieldId, readPortable(spec, r[fieldId], pointer(path, fieldId)));
  }
  const inRow = values.get(shape.pkFieldId);
  if (inRow === undefined) throw new CodecError('missing_field', pointer(path, shape.pkFieldId), 'row lacks its key');
  if (pkWire !== undefined) checkSeparateKey(shape, encodeTypedValue(inRow), pkWire, path);
  return { values, pk: inRow };
}

/** The row as an object whose members are all synced fields of the shape. */
function rowObject(shape: TableShape, row: unknown, path: string): Record<string, unknown> {
  checkRowMembers(shape, row, path);
  return row as Record<string, unknown>;
}

/**
 * Refuses a row that is not an object or has a member that is no synced field
 * of the shape; otherwise returns how many members it has. Those members are
 * distinct field IDs of the shape, so a count equal to the shape's field count
 * means every field is present.
 */
function checkRowMembers(shape: TableShape, row: unknown, path: string): number {
  if (typeof row !== 'object' || row === null || Array.isArray(row) || row instanceof RawNumber) {
    throw new CodecError('wrong_json_type', path, 'a row is a JSON object keyed by field ID');
  }
  const r = row as Record<string, unknown>;
  let members = 0;
  if (Object.getPrototypeOf(r) === null) {
    // A row from the strict reader has no prototype, so for-in visits exactly its own keys, without building a key array.
    for (const key in r) {
      if (!shape.fields.has(key)) throw new CodecError('unknown_field', pointer(path, key), `${shape.tableId} has no synced field ${key}`);
      members++;
    }
    return members;
  }
  for (const key of Object.keys(r)) {
    if (!shape.fields.has(key)) throw new CodecError('unknown_field', pointer(path, key), `${shape.tableId} has no synced field ${key}`);
    members++;
  }
  return members;
}

function checkSeparateKey(shape: TableShape, inRowOctets: Uint8Array, pkWire: unknown, path: string): void {
  const pk = readPortable({ type: shape.pkType, nullable: false }, pkWire, `${path}#pk`);
  if (Buffer.compare(encodeTypedValue(pk), inRowOctets) !== 0) {
    throw new CodecError('pk_mismatch', pointer(path, shape.pkFieldId), 'the key inside the row differs from the separate key');
  }
}

const separateKeyScratch = new ByteWriter(64);

/**
 * checkSeparateKey for the one-pass path: the separate key is validated and
 * written by writeWireValue (the same octets and refusals as readPortable then
 * encodeTypedValue) into a scratch writer, and compared in place.
 */
function checkSeparateKeyInPlace(shape: TableShape, plan: RowPlan, body: ByteWriter, key: KeySpan, pkWire: unknown): void {
  const w = separateKeyScratch;
  w.reset();
  writeWireValue(w, plan.pkSpec, pkWire, '#pk', true);
  if (!w.equalsRange(body, key.start, key.end)) {
    throw new CodecError('pk_mismatch', pointer('', shape.pkFieldId), 'the key inside the row differs from the separate key');
  }
}

/** Where the key's typed value lies in the octets writeRowBody wrote. */
export interface KeySpan {
  start: number;
  end: number;
}

/**
 * readRow then encodeRowBody in one pass, for a shape with a plan: the same
 * checks in the same order (unknown members, then each field in body order,
 * then the separate key), each value validated and written straight into
 * `out`, and no per-field path built unless a field is refused. Returns where
 * the key's typed value was written, for the row identity (in `key`, when the
 * caller passes a span to reuse).
 */
export function writeRowBody(shape: TableShape, plan: RowPlan, row: unknown, pkWire: unknown | undefined, out: ByteWriter, key: KeySpan = { start: 0, end: 0 }): KeySpan {
  const members = checkRowMembers(shape, row, '');
  const r = row as Record<string, unknown>;
  const order = shape.bodyOrder;
  // Every member is a distinct field of the shape, so as many members as fields means none is missing.
  const complete = members === order.length;
  key.start = 0;
  key.end = 0;
  out.u32(order.length);
  for (let k = 0; k < order.length; k++) {
    const fieldId = order[k] as string;
    const where = plan.rootPaths[k] as string;
    if (!complete && !Object.hasOwn(r, fieldId)) throw new CodecError('missing_field', where, `row lacks field ${fieldId}`);
    const spec = plan.specs[k] as ColumnSpec;
    if (plan.specChecked[k] !== true) checkColumnSpec(spec, where);
    if (k === plan.pkIndex) key.start = out.length + (plan.fieldHeaders[k] as Uint8Array).length - 1;
    // The field's name and its value's type tag are fixed per table: one copy of octets made once (row-plan.ts).
    out.bytes(plan.fieldHeaders[k] as Uint8Array);
    (plan.writers[k] as WireValueWriter)(out, spec, r[fieldId], where);
    if (k === plan.pkIndex) key.end = out.length;
  }
  if (pkWire !== undefined) checkSeparateKeyInPlace(shape, plan, out, key, pkWire);
  return key;
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
