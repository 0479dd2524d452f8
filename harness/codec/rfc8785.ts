/**
 * RFC 8785 (JSON Canonicalization Scheme) serialization.
 *
 * The `canonicalize` package implements the scheme: member names sorted by
 * UTF-16 code units, ECMAScript number serialization, minimal string escaping.
 * This wrapper turns its plain `Error`s into CodecErrors and works directly on
 * strict-json trees (a RawNumber serializes as its binary64 value).
 */
import canonicalize from 'canonicalize';
import { CodecError } from './errors.ts';

export function canonicalJson(value: unknown, path = ''): string {
  let out: string | undefined;
  try {
    out = canonicalize(value);
  } catch (e) {
    throw new CodecError('invalid_json', path, `not representable in canonical JSON: ${(e as Error).message}`);
  }
  if (out === undefined) throw new CodecError('invalid_json', path, 'value has no JSON representation');
  return out;
}

export function canonicalJsonBytes(value: unknown, path = ''): Uint8Array {
  return Buffer.from(canonicalJson(value, path), 'utf8');
}
