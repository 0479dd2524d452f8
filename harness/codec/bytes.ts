/**
 * Octet primitives of the canonical typed grammar. Everything is big-endian;
 * lengths are unsigned 64-bit counts written before the octets they measure.
 */

import { CodecError } from './errors.ts';
import { isWellFormedText } from './unicode.ts';

export function u8(x: number): Uint8Array {
  return Uint8Array.of(x & 0xff);
}

export function u32be(x: number): Uint8Array {
  if (!Number.isInteger(x) || x < 0 || x > 0xffffffff) throw new RangeError(`u32 out of range: ${x}`);
  const b = Buffer.alloc(4);
  b.writeUInt32BE(x);
  return b;
}

export function u64be(x: number | bigint): Uint8Array {
  const v = BigInt(x);
  if (v < 0n || v > 0xffffffffffffffffn) throw new RangeError(`u64 out of range: ${x}`);
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(v);
  return b;
}

export function i32be(x: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeInt32BE(x);
  return b;
}

export function i64be(x: bigint): Uint8Array {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(x);
  return b;
}

/** Length-prefixed octets: u64be(length) || octets. */
export function blob(x: Uint8Array): Uint8Array {
  return Buffer.concat([u64be(x.length), x]);
}

/**
 * UTF-8 text as a blob. A string with a lone surrogate has no UTF-8 form, so it
 * is refused here instead of being silently replaced by U+FFFD.
 */
export function text(s: string, path = ''): Uint8Array {
  if (!isWellFormedText(s)) throw new CodecError('invalid_string', path, 'text contains a lone surrogate');
  return blob(Buffer.from(s, 'utf8'));
}

/** ASCII domain separator: the constant's octets followed by one 0x00. */
export function domain(name: string): Uint8Array {
  return Buffer.concat([Buffer.from(name, 'ascii'), Uint8Array.of(0)]);
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  return Buffer.concat(parts);
}

/** Unsigned bytewise order; a proper prefix sorts first. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

export function toHex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

const LOWER_HEX = /^(?:[0-9a-f]{2})*$/;

/** Strict lowercase hex to octets (used for digests, schema hashes and vector fixtures). */
export function fromHex(hex: string, path = '', code: 'invalid_digest' | 'invalid_schema_hash' | 'invalid_row_identity' = 'invalid_digest'): Uint8Array {
  if (!LOWER_HEX.test(hex)) throw new CodecError(code, path, 'expected lowercase hexadecimal octets');
  return Buffer.from(hex, 'hex');
}
