/**
 * Row digest = SHA-256(ROW_DIGEST_DOMAIN || schema_hash_raw ||
 *   blob(row_identity) || blob(row_body) || text(server_version)).
 */
import { createHash } from 'node:crypto';
import { blob, domain, text } from './bytes.ts';
import { CodecError } from './errors.ts';
import { checkServerVersion, schemaHashRaw } from './identifiers.ts';
import { encodeRowBody, readRow } from './row.ts';
import { decodeRowIdentity, encodeRowIdentity } from './row-identity.ts';
import type { TableShape } from './table-shape.ts';

export const ROW_DIGEST_DOMAIN = domain('synchro:v3:row-digest:v1');

/** The digest over already encoded parts; the identity must still be a well-formed row identity. */
export function rowDigestFromParts(schemaHash: Uint8Array, identity: Uint8Array, body: Uint8Array, serverVersion: string): Uint8Array {
  if (schemaHash.length !== 32) throw new CodecError('invalid_schema_hash', '', 'schema hash must be 32 octets');
  decodeRowIdentity(identity, '#row_identity');
  const h = createHash('sha256');
  h.update(ROW_DIGEST_DOMAIN);
  h.update(schemaHash);
  h.update(blob(identity));
  h.update(blob(body));
  h.update(text(checkServerVersion(serverVersion)));
  return new Uint8Array(h.digest());
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

/** Validates the row, then returns its identity, body and digest. */
export function digestRow(input: RowDigestInput): RowDigestResult {
  const hash = schemaHashRaw(input.schemaHash, '#schema_hash');
  checkServerVersion(input.serverVersion, '#server_version');
  const { values, pk } = readRow(input.table, input.row, input.pk);
  const identity = encodeRowIdentity(input.table.tableId, input.table.pkFieldId, pk);
  const body = encodeRowBody(input.table, values);
  return { identity, body, digest: rowDigestFromParts(hash, identity, body, input.serverVersion) };
}
