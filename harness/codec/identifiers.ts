/**
 * Wire forms of the non-value inputs the digests bind: schema hashes, opaque
 * server versions and SHA-256 digests.
 */
import { CodecError } from './errors.ts';

const HASH_HEX = /^[0-9a-f]{64}$/;
/** Printable ASCII except `"` and `\`, 1..64 octets. */
const SERVER_VERSION = /^[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}$/;

/** 64 lowercase hex characters → the 32 raw octets the digests bind. */
export function schemaHashRaw(hash: unknown, path = ''): Uint8Array {
  if (typeof hash !== 'string' || !HASH_HEX.test(hash)) {
    throw new CodecError('invalid_schema_hash', path, 'schema hash must be 64 lowercase hex characters');
  }
  return new Uint8Array(Buffer.from(hash, 'hex'));
}

/** A row digest or scope digest as 64 lowercase hex → 32 octets. */
export function digestRaw(hex: unknown, path = ''): Uint8Array {
  if (typeof hex !== 'string' || !HASH_HEX.test(hex)) {
    throw new CodecError('invalid_digest', path, 'digest must be 64 lowercase hex characters');
  }
  return new Uint8Array(Buffer.from(hex, 'hex'));
}

export function checkServerVersion(v: unknown, path = ''): string {
  if (typeof v !== 'string' || !SERVER_VERSION.test(v)) {
    throw new CodecError('invalid_server_version', path, 'server_version must be 1..64 printable ASCII characters other than " and \\');
  }
  return v;
}
