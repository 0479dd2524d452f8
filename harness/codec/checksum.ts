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

/** Validates a received checksum object and returns the 32 digest octets. */
export function readChecksumObject(value: unknown, path = ''): Uint8Array {
  const bad = (where: string, why: string): never => {
    throw new CodecError('invalid_checksum_object', where, why);
  };
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
  if (typeof o.digest !== 'string' || !/^[0-9a-f]{64}$/.test(o.digest)) bad(pointer(path, 'digest'), 'digest must be 64 lowercase hex characters');
  return new Uint8Array(Buffer.from(o.digest as string, 'hex'));
}
