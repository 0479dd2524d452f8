/**
 * Wire forms of the non-value inputs the digests and fingerprints bind: schema
 * hashes, opaque server versions, SHA-256 digests, UUIDs and logical IDs.
 */
import { CodecError } from './errors.ts';
import { isWellFormedText } from './unicode.ts';

const HASH_HEX = /^[0-9a-f]{64}$/;
/** Printable ASCII except `"` and `\`, 1..64 octets. */
const SERVER_VERSION = /^[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}$/;
/** Canonical lowercase hyphenated UUID; version and variant nibbles are not checked. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

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

/** `batch_id`, `mutation_id`: canonical lowercase hyphenated, never the nil UUID. */
export function checkUuid(v: unknown, path = ''): string {
  if (typeof v !== 'string' || !UUID.test(v)) {
    throw new CodecError('invalid_uuid', path, 'expected a canonical lowercase hyphenated UUID (8-4-4-4-12 hex digits)');
  }
  if (v === NIL_UUID) throw new CodecError('invalid_uuid', path, 'the nil UUID is not a valid identity');
  return v;
}

/** Logical IDs (table, field, scope, client, user): nonempty strings with a UTF-8 form. */
export function checkIdentifier(v: unknown, path = '', what = 'an identifier'): string {
  if (typeof v !== 'string' || v.length === 0) throw new CodecError('invalid_identifier', path, `${what} is a nonempty string`);
  if (!isWellFormedText(v)) throw new CodecError('invalid_string', path, `${what} contains a lone surrogate`);
  return v;
}
