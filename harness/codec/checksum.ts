/**
 * The wire checksum object: exactly
 * {"algorithm":"sha256","version":1,"encoding":"hex","digest":"<64 lowercase hex>"}.
 */
import { toHex } from './bytes.ts';
import { CodecError, pointer } from './errors.ts';
import { RawNumber } from './strict-json.ts';

export interface ChecksumObject {
  algorithm: 'sha256';
  version: 1;
  encoding: 'hex';
  digest: string;
}

const MEMBERS = ['algorithm', 'version', 'encoding', 'digest'] as const;

export function checksumObject(digest: Uint8Array): ChecksumObject {
  if (digest.length !== 32) throw new CodecError('invalid_digest', '', 'a SHA-256 digest is 32 octets');
  return { algorithm: 'sha256', version: 1, encoding: 'hex', digest: toHex(digest) };
}

function bad(where: string, why: string): never {
  throw new CodecError('invalid_checksum_object', where, why);
}

/** Every check of a checksum object except the digest text's form; returns the object. */
function checkMembers(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof RawNumber) bad(path, 'checksum must be an object');
  const o = value as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!(MEMBERS as readonly string[]).includes(k)) bad(pointer(path, k), `unexpected member ${k}`);
  }
  for (const k of MEMBERS) if (!Object.hasOwn(o, k)) bad(pointer(path, k), `missing member ${k}`);
  if (o.algorithm !== 'sha256') bad(pointer(path, 'algorithm'), 'algorithm must be "sha256"');
  const versionIsOne = o.version === 1 || (o.version instanceof RawNumber && o.version.raw === '1');
  if (!versionIsOne) bad(pointer(path, 'version'), 'version must be the integer 1');
  if (o.encoding !== 'hex') bad(pointer(path, 'encoding'), 'encoding must be "hex"');
  return o;
}

const DIGEST_TEXT = /^[0-9a-f]{64}$/;

/** Validates a received checksum object and returns the 32 digest octets. */
export function readChecksumObject(value: unknown, path = ''): Uint8Array {
  const o = checkMembers(value, path);
  if (typeof o.digest !== 'string' || !DIGEST_TEXT.test(o.digest)) bad(pointer(path, 'digest'), 'digest must be 64 lowercase hex characters');
  return new Uint8Array(Buffer.from(o.digest as string, 'hex'));
}

/**
 * Validates a received checksum object, as readChecksumObject does, and says
 * whether it names `digest`. A digest text equal to the lowercase hex of
 * `digest` is well formed by that equality, so only a text that differs is
 * checked for its form (and refused when malformed): the same refusals and the
 * same answer as comparing readChecksumObject's octets, without decoding them.
 */
export function checksumNames(value: unknown, digest: Uint8Array, path = ''): boolean {
  if (digest.length !== 32) throw new CodecError('invalid_digest', '', 'a SHA-256 digest is 32 octets');
  const o = checkMembers(value, path);
  if (o.digest === toHex(digest)) return true;
  if (typeof o.digest !== 'string' || !DIGEST_TEXT.test(o.digest)) bad(pointer(path, 'digest'), 'digest must be 64 lowercase hex characters');
  return false;
}
