/**
 * Row digest = SHA-256(ROW_DIGEST_DOMAIN || schema_hash_raw ||
 *   blob(row_identity) || blob(row_body) || text(server_version)).
 */
import { hash as sha256Once } from 'node:crypto';
import { ByteWriter } from './byte-writer.ts';
import { blob, domain, text } from './bytes.ts';
import { CodecError } from './errors.ts';
import { checkServerVersion, schemaHashRaw } from './identifiers.ts';
import { encodeRowBody, readRow, writeRowBody } from './row.ts';
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

// The last schema hash read: rows of one manifest arrive in long runs.
let lastHashText = '';
let lastHashRaw: Uint8Array = new Uint8Array(0);

function readSchemaHash(hashText: string): Uint8Array {
  if (hashText !== lastHashText || lastHashText === '') {
    lastHashRaw = schemaHashRaw(hashText, '#schema_hash');
    lastHashText = hashText;
  }
  return lastHashRaw;
}

const bodyScratch = new ByteWriter(1024);
const preimage = new ByteWriter(1024);

/**
 * Validates and encodes the row body in one pass, then lays out the whole
 * preimage in one buffer and hashes it once; identity and body are copied out.
 */
function digestWithPlan(input: RowDigestInput, plan: RowPlan, hash: Uint8Array): RowDigestResult {
  const body = bodyScratch;
  body.reset();
  const key = writeRowBody(input.table, plan, input.row, input.pk, body);
  const w = preimage;
  w.reset();
  w.bytes(ROW_DIGEST_DOMAIN);
  w.bytes(hash);
  const identityLengthAt = w.length;
  w.u64(0);
  const identityStart = w.length;
  w.bytes(plan.identityPrefix);
  w.append(body, key.start, key.end);
  const identityEnd = w.length;
  w.patchU64(identityLengthAt, identityEnd - identityStart);
  w.u64(body.length);
  w.append(body);
  w.utf8Blob(input.serverVersion);
  // One-shot SHA-256 of the whole preimage: the same octets as an incremental hash, without a hash object per row.
  // The digest's own buffer is handed out as a plain Uint8Array view (no copy); it belongs to this result alone.
  const hashed = sha256Once('sha256', w.view(), 'buffer');
  const digest = new Uint8Array(hashed.buffer, hashed.byteOffset, hashed.byteLength);
  // Identity and body share one allocation: two views that do not overlap.
  const identityLength = identityEnd - identityStart;
  const parts = Buffer.allocUnsafe(identityLength + body.length);
  w.copyTo(parts, 0, identityStart, identityEnd);
  body.copyTo(parts, identityLength);
  return { identity: parts.subarray(0, identityLength), body: parts.subarray(identityLength), digest };
}

/** Validates the row, then returns its identity, body and digest. */
export function digestRow(input: RowDigestInput): RowDigestResult {
  const hash = readSchemaHash(input.schemaHash);
  checkServerVersion(input.serverVersion, '#server_version');
  const plan = rowPlan(input.table);
  if (plan !== undefined) return digestWithPlan(input, plan, hash);
  const { values, pk } = readRow(input.table, input.row, input.pk);
  const identity = encodeRowIdentity(input.table.tableId, input.table.pkFieldId, pk);
  const body = encodeRowBody(input.table, values);
  return { identity, body, digest: rowDigestFromParts(hash, identity, body, input.serverVersion) };
}
