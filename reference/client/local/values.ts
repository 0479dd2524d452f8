/**
 * Conversion between SQLite storage and the wire form of portable values.
 * Text-like types (including int64, decimal and json) are stored as their wire
 * text, so nothing is lost to binary64; booleans are 0/1 and bytes are BLOBs.
 */
import type { PortableType } from './manifest.ts';

export type SqlValue = string | number | bigint | Buffer | Uint8Array | null;
export type WireValue = string | number | boolean | null;

export function toWire(type: PortableType, value: unknown): WireValue {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'int':
    case 'float':
      return typeof value === 'bigint' ? Number(value) : Number(value);
    case 'boolean':
      return Number(value) !== 0;
    case 'bytes':
      return Buffer.from(value as Uint8Array).toString('base64url');
    default:
      return String(value);
  }
}

export function toSql(type: PortableType, value: unknown): SqlValue {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'boolean':
      return value === true ? 1 : 0;
    case 'int':
    case 'float':
      return Number(value);
    case 'bytes':
      return Buffer.from(String(value), 'base64url');
    default:
      return String(value);
  }
}

/** The key's text form used as `record_id` (the same text the capture triggers write with CAST AS TEXT). */
export function recordIdOf(_type: PortableType, wirePk: unknown): string {
  return String(wirePk);
}

/** The wire key value from a stored record_id. */
export function pkFromRecordId(type: PortableType, recordId: string): string | number {
  return type === 'int' ? Number(recordId) : recordId;
}
