/**
 * Row digest = SHA-256(ROW_DIGEST_DOMAIN || schema_hash_raw ||
 *   blob(row_identity) || blob(row_body) || text(server_version)).
 */
import { hash as sha256Once } from 'node:crypto';
import { ByteWriter } from './byte-writer.ts';
import { blob, domain, text } from './bytes.ts';
import { CodecError } from './errors.ts';
import { checkServerVersion, schemaHashRaw } from './identifiers.ts';
import { encodeRowBody, type KeySpan, readRow, writeRowBody } from './row.ts';
import { decodeRowIdentity, encodeRowIdentity } from './row-identity.ts';
import { type RowPlan, rowPlan } from './row-plan.ts';
import type { TableShape } from './table-shape.ts';

export const ROW_DIGEST_DOMAIN = domain('synchro:v3:row-digest:v1');

/** The digest over already encoded parts; the identity must still be a well-formed row identity. */
export function rowDigestFromParts(schemaHash: Uint8Array, identity: Uint8Array, body: Uint8Array, serverVersion: string): Uint8Array {
  if (schemaHash.length !== 32) throw new CodecError('invalid_schema_hash', '', 'schema hash must be 32 octets');
  decodeRowIdentity(identity, '#row_identity');
  const preimage = Buffer.concat([ROW_DIGEST_DOMAIN, schemaHash, blob(identity), blob(body), text(checkServerVersion(serverVersion))]);
  return new Uint8Array(sha256Once('sha256', preimage, 'buffer'));
}

export interface RowDigestInput {
  /** 64 lowercase hex of the manifest the row belongs to. */
  schemaHash: string;
  table: TableShape;
  /** The complete row in wire JSON form. */
  row: unknown;
  /** The separate wire key value, when the message carries one; it must equal the row's key. */
  pk?: unknown;
  serverVersion: string;
}

export interface RowDigestResult {
  identity: Uint8Array;
  body: Uint8Array;
  digest: Uint8Array;
}

// The last schema hash read, and the preimage's first octets for it (ROW_DIGEST_DOMAIN || schema hash): rows of one manifest arrive in long runs.
let lastHashText = '';
let lastHashRaw: Uint8Array = new Uint8Array(0);
let lastPreimageHead: Uint8Array = new Uint8Array(0);

function readSchemaHash(hashText: string): Uint8Array {
  if (hashText !== lastHashText || lastHashText === '') {
    lastHashRaw = schemaHashRaw(hashText, '#schema_hash');
    lastPreimageHead = Buffer.concat([ROW_DIGEST_DOMAIN, lastHashRaw]);
    lastHashText = hashText;
  }
  return lastHashRaw;
}

const preimage = new ByteWriter(1024);
const keySpan: KeySpan = { start: 0, end: 0 };
/** The key length of the last row digested: the gap left for the identity before the body is written. */
let keyLengthGuess = 0;

/** Where the last plan-path preimage holds the identity and the body (see hashWithPlan). */
const lastParts = { identityStart: 0, identityLength: 0, bodyStart: 0, bodyEnd: 0 };

/**
 * Validates and encodes the row body in one pass straight into the preimage,
 * then hashes the preimage once and returns the digest; the identity and body
 * stay in the preimage writer (at lastParts) until the next call.
 *
 * The preimage is ROW_DIGEST_DOMAIN || schema hash || u64(identity length) ||
 * identity || u64(body length) || body || text(server version), and the
 * identity ends with the key's typed value, which is known only once the body
 * is written. So the body is written after a gap sized for the previous row's
 * key (the same for every row of an int or int64 key, and for most string
 * keys of one table); a key of another length moves the body once. Then the
 * identity and both lengths are filled in, and the octets are those of the
 * layout above exactly.
 */
function hashWithPlan(input: RowDigestInput, plan: RowPlan, preimageHead: Uint8Array): Buffer {
  const w = preimage;
  w.reset();
  w.bytes(preimageHead);
  const identityLengthAt = w.length;
  const identityStart = identityLengthAt + 8;
  const keyAt = identityStart + plan.identityPrefix.length;
  w.skip(8 + plan.identityPrefix.length + keyLengthGuess + 8);
  let bodyStart = w.length;
  const key = writeRowBody(input.table, plan, input.row, input.pk, w, keySpan);
  let keyStart = key.start;
  const keyLength = key.end - key.start;
  if (keyLength !== keyLengthGuess) {
    const delta = keyLength - keyLengthGuess;
    w.shiftTail(bodyStart, delta);
    bodyStart += delta;
    keyStart += delta;
    keyLengthGuess = keyLength;
  }
  const bodyEnd = w.length;
  const identityLength = plan.identityPrefix.length + keyLength;
  w.patchU64(identityLengthAt, identityLength);
  w.putBytesAt(identityStart, plan.identityPrefix);
  w.copyWithin(keyAt, keyStart, keyStart + keyLength);
  w.patchU64(bodyStart - 8, bodyEnd - bodyStart);
  w.utf8Blob(input.serverVersion);
  lastParts.identityStart = identityStart;
  lastParts.identityLength = identityLength;
  lastParts.bodyStart = bodyStart;
  lastParts.bodyEnd = bodyEnd;
  // One-shot SHA-256 of the whole preimage: the same octets as an incremental hash, without a hash object per row.
  // The digest's own buffer belongs to the caller alone.
  return sha256Once('sha256', w.octets(), 'buffer');
}

/** hashWithPlan, then the identity and body copied out of the preimage. */
function digestWithPlan(input: RowDigestInput, plan: RowPlan, preimageHead: Uint8Array): RowDigestResult {
  const hashed = hashWithPlan(input, plan, preimageHead);
  // A plain Uint8Array view of the digest's buffer (no copy), as the identity and body are.
  const digest = new Uint8Array(hashed.buffer, hashed.byteOffset, hashed.byteLength);
  const { identityStart, identityLength, bodyStart, bodyEnd } = lastParts;
  // Identity and body share one allocation, copied at once with the body length between them: two views that do not overlap.
  const parts = Buffer.allocUnsafe(bodyEnd - identityStart);
  preimage.copyTo(parts, 0, identityStart, bodyEnd);
  // Plain Uint8Array views, like the digest: cheaper to make than Buffer views.
  const identity = new Uint8Array(parts.buffer, parts.byteOffset, identityLength);
  const body = new Uint8Array(parts.buffer, parts.byteOffset + identityLength + 8, bodyEnd - bodyStart);
  return { identity, body, digest };
}

// The last server version accepted: a page's rows often share one, and a string equal to it needs no second check.
let lastServerVersion = '';

/** The checks both entry points make first: the schema hash and the server version, each read once per run of equal values. */
function readHashAndVersion(input: RowDigestInput): Uint8Array {
  const hash = readSchemaHash(input.schemaHash);
  if (input.serverVersion !== lastServerVersion || lastServerVersion === '') {
    checkServerVersion(input.serverVersion, '#server_version');
    lastServerVersion = input.serverVersion;
  }
  return hash;
}

/** Validates the row, then returns its identity, body and digest. */
export function digestRow(input: RowDigestInput): RowDigestResult {
  const hash = readHashAndVersion(input);
  const plan = rowPlan(input.table);
  if (plan !== undefined) return digestWithPlan(input, plan, lastPreimageHead);
  const { values, pk } = readRow(input.table, input.row, input.pk);
  const identity = encodeRowIdentity(input.table.tableId, input.table.pkFieldId, pk);
  const body = encodeRowBody(input.table, values);
  return { identity, body, digest: rowDigestFromParts(hash, identity, body, input.serverVersion) };
}

/**
 * Validates the row, then returns its digest alone: the same checks, refusals
 * and digest as digestRow, for a caller that compares or serves a digest and
 * has no use for the identity and body octets (they are not copied out).
 * The octets returned are the hash's own buffer, not wrapped or copied.
 */
export function rowDigest(input: RowDigestInput): Uint8Array {
  readHashAndVersion(input);
  const plan = rowPlan(input.table);
  if (plan !== undefined) return hashWithPlan(input, plan, lastPreimageHead);
  return digestRow(input).digest;
}
