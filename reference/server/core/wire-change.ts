/**
 * One change in wire form, as pull sends it, rebuild pages list it and seed
 * pages export it: the scope, table, typed key and server version, and for an
 * upsert or tombstone the complete row with its checksum under the schema.
 */
import { createHash } from 'node:crypto';
import { checksumObject, rowDigest } from '../../../harness/codec/index.ts';
import { digestTag } from './checksums.ts';
import { integrityFailure } from './errors.ts';
import { fault } from './faults.ts';
import type { TableDef } from './tables.ts';

/** What a change is made from: one stored effect or scope row. */
export interface ChangeSource {
  scope: string;
  tableId: string;
  pkText: string;
  op: 'upsert' | 'delete';
  serverVersion: string;
  row: Record<string, unknown> | null;
  /** The row digest the capture worker stored with its tag (core/checksums.ts), if any. */
  stored?: { digest: Buffer; tag: string } | null;
}

/** Key value in wire form (int as a JSON number, int64 and string as text). */
export function pkWire(table: TableDef, pkText: string): unknown {
  return table.pkType === 'int' ? Number(pkText) : pkText;
}

/** One wire change: an upsert or tombstone with its row and checksum, or a rowless delete. */
export function wireChange(c: ChangeSource, tables: Map<string, TableDef>, schemaHash: string): Record<string, unknown> {
  const table = tables.get(c.tableId);
  if (table === undefined) throw integrityFailure();
  const change: Record<string, unknown> = {
    scope: c.scope,
    table: c.tableId,
    op: c.op,
    pk: { [table.pkFieldId]: pkWire(table, c.pkText) },
    server_version: c.serverVersion,
  };
  if (c.row !== null) {
    // A projection that no longer fits the current table shape is an integrity failure, never a partial page.
    // A stored digest counts only under the tag this schema and shape give; it was computed from this very row.
    let digest: Uint8Array;
    if (c.stored != null && c.stored.digest.length === 32 && c.stored.tag === digestTag(table, schemaHash)) digest = c.stored.digest;
    else {
      try {
        digest = rowDigest({ schemaHash, table: table.shape, row: c.row, serverVersion: c.serverVersion });
      } catch {
        throw integrityFailure();
      }
    }
    change.row = c.row;
    change.row_checksum = checksumObject(digest);
  } else if (c.op === 'upsert') {
    throw integrityFailure();
  }
  if (c.row === null && fault('checksum-on-rowless-delete')) change.row_checksum = checksumObject(createHash('sha256').update(`${c.tableId}\u0000${c.pkText}\u0000${c.serverVersion}`).digest()); // fault: server:checksum-on-rowless-delete
  return change;
}
