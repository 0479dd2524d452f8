/**
 * The part of a manifest table the digests need: logical IDs, the key field
 * and each synced field's portable type. Read from a wire TableSchema (extra
 * members such as `name`, `lifecycle` or `indexes` are ignored here; the wire
 * schemas check them).
 */

import { compareBytes } from './bytes.ts';
import { CodecError, pointer } from './errors.ts';
import { isKeyType, type KeyType, parsePortableType } from './portable-types.ts';
import { RawNumber } from './strict-json.ts';
import { isWellFormedText } from './unicode.ts';
import { type ColumnSpec, checkColumnSpec } from './wire-values.ts';

export interface TableShape {
  tableId: string;
  pkFieldId: string;
  pkType: KeyType;
  /** Field ID → column spec (nullable always set). */
  fields: ReadonlyMap<string, ColumnSpec & { nullable: boolean }>;
  /** Field IDs in row-body order: unsigned bytewise order of their UTF-8. */
  bodyOrder: readonly string[];
}

function nonEmptyId(v: unknown, path: string): string {
  if (typeof v !== 'string' || v.length === 0 || !isWellFormedText(v)) {
    throw new CodecError('invalid_identifier', path, 'logical IDs are nonempty well-formed strings');
  }
  return v;
}

function optionalInteger(v: unknown, path: string): number | undefined {
  if (v === undefined) return undefined;
  const n = v instanceof RawNumber ? Number(v.raw) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw new CodecError('invalid_manifest', path, 'expected an integer');
  return n;
}

export function utf8Order(a: string, b: string): number {
  return compareBytes(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * Builds a TableShape from `{table_id, primary_key_field_id, fields: [{field_id,
 * type, nullable?, writable?, precision?, scale?}]}`. `nullable` defaults to
 * false, the stricter reading. A key field declared writable is refused: a key
 * is never writable (002), so such a table has no valid manifest.
 */
export function readTableShape(table: unknown, path = ''): TableShape {
  if (typeof table !== 'object' || table === null || Array.isArray(table) || table instanceof RawNumber) {
    throw new CodecError('invalid_manifest', path, 'table must be an object');
  }
  const t = table as Record<string, unknown>;
  const tableId = nonEmptyId(t.table_id, pointer(path, 'table_id'));
  const pkFieldId = nonEmptyId(t.primary_key_field_id, pointer(path, 'primary_key_field_id'));
  if (!Array.isArray(t.fields) || t.fields.length === 0) {
    throw new CodecError('invalid_manifest', pointer(path, 'fields'), 'fields must be a nonempty array');
  }
  const fields = new Map<string, ColumnSpec & { nullable: boolean }>();
  const writable = new Set<string>();
  t.fields.forEach((f: unknown, k: number) => {
    const fp = pointer(pointer(path, 'fields'), k);
    if (typeof f !== 'object' || f === null || Array.isArray(f)) throw new CodecError('invalid_manifest', fp, 'field must be an object');
    const fr = f as Record<string, unknown>;
    const id = nonEmptyId(fr.field_id, pointer(fp, 'field_id'));
    if (fields.has(id)) throw new CodecError('duplicate_field', pointer(fp, 'field_id'), `field ${id} is declared twice`);
    const type = parsePortableType(fr.type, pointer(fp, 'type'));
    if (fr.nullable !== undefined && typeof fr.nullable !== 'boolean') {
      throw new CodecError('invalid_manifest', pointer(fp, 'nullable'), 'nullable must be a boolean');
    }
    if (fr.writable !== undefined && typeof fr.writable !== 'boolean') {
      throw new CodecError('invalid_manifest', pointer(fp, 'writable'), 'writable must be a boolean');
    }
    if (fr.writable === true) writable.add(id);
    const spec: ColumnSpec & { nullable: boolean } = { type, nullable: fr.nullable === true };
    const precision = optionalInteger(fr.precision, pointer(fp, 'precision'));
    const scale = optionalInteger(fr.scale, pointer(fp, 'scale'));
    if (precision !== undefined) spec.precision = precision;
    if (scale !== undefined) spec.scale = scale;
    checkColumnSpec(spec, fp);
    if (type === 'decimal' && precision === undefined) {
      throw new CodecError('invalid_manifest', fp, 'a decimal field must declare precision and scale');
    }
    fields.set(id, spec);
  });
  const pk = fields.get(pkFieldId);
  if (pk === undefined) throw new CodecError('invalid_manifest', pointer(path, 'primary_key_field_id'), `no field ${pkFieldId}`);
  if (!isKeyType(pk.type)) {
    throw new CodecError('invalid_pk_type', pointer(path, 'primary_key_field_id'), `a key must be string, int or int64, not ${pk.type}`);
  }
  if (pk.nullable) throw new CodecError('invalid_pk_type', pointer(path, 'primary_key_field_id'), 'a key field cannot be nullable');
  if (writable.has(pkFieldId)) {
    throw new CodecError('protected_field_writable', pointer(path, 'primary_key_field_id'), `key field ${pkFieldId} is declared writable; a key is never writable`);
  }
  const bodyOrder = [...fields.keys()].sort(utf8Order);
  return { tableId, pkFieldId, pkType: pk.type, fields, bodyOrder };
}
