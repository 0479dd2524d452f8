/**
 * Canonical typed value octets: tag || presence || payload.
 */
import { blob, i32be, i64be, text } from './bytes.ts';
import { TYPE_TAGS } from './portable-types.ts';
import { type ColumnSpec, type PortableValue, readPortable } from './wire-values.ts';

export const PRESENCE_NULL = 0x00;
export const PRESENCE_VALUE = 0x01;

function floatBits(n: number): Uint8Array {
  const b = Buffer.alloc(8);
  // -0 and +0 are one value on the wire; only the +0 bit pattern is canonical.
  b.writeDoubleBE(n === 0 ? 0 : n);
  return b;
}

function payload(v: PortableValue): Uint8Array {
  switch (v.type) {
    case 'string':
      return text(v.value ?? '');
    case 'int':
      return i32be(v.value ?? 0);
    case 'int64':
      return i64be(v.value ?? 0n);
    case 'float':
      return floatBits(v.value ?? 0);
    case 'boolean':
      return Uint8Array.of(v.value ? 1 : 0);
    case 'decimal':
    case 'datetime':
    case 'date':
    case 'time':
      return blob(Buffer.from(v.value ?? '', 'ascii'));
    case 'json':
      return text(v.value ?? '');
    case 'bytes':
      return blob(v.value ?? new Uint8Array());
  }
}

/** Encodes an already validated value. */
export function encodeTypedValue(v: PortableValue): Uint8Array {
  const tag = TYPE_TAGS[v.type];
  if (v.value === null) return Uint8Array.of(tag, PRESENCE_NULL);
  return Buffer.concat([Uint8Array.of(tag, PRESENCE_VALUE), payload(v)]);
}

/** Validates a wire value against its column and returns its canonical typed octets. */
export function typedValueFromWire(spec: ColumnSpec, wire: unknown, path = ''): Uint8Array {
  return encodeTypedValue(readPortable(spec, wire, path));
}
