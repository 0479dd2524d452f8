/** Scope digests of the materialized scope contents at the current boundary, under one schema. */
import type { ClientBase } from 'pg';
import { type ChecksumObject, checksumObject, digestRow, fromHex, ScopeDigestBuilder } from '../../../harness/codec/index.ts';
import { integrityFailure } from './errors.ts';
import { fault } from './faults.ts';
import type { TableDef } from './tables.ts';

export interface ScopeRow {
  tableId: string;
  pkText: string;
  pkBytes: Buffer;
  row: Record<string, unknown>;
  serverVersion: string;
}

/** The scope's rows in unsigned canonical (table_id, typed key) order. */
export async function scopeRows(db: ClientBase, scope: string): Promise<ScopeRow[]> {
  const { rows } = await db.query<{ table_id: string; pk_text: string; pk_bytes: Buffer; row_wire: Record<string, unknown>; server_version: string }>(
    'SELECT table_id, pk_text, pk_bytes, row_wire, server_version FROM synchro.scope_rows WHERE scope_id = $1 ORDER BY table_id COLLATE "C", pk_bytes',
    [scope],
  );
  return rows.map((r) => ({ tableId: r.table_id, pkText: r.pk_text, pkBytes: r.pk_bytes, row: r.row_wire, serverVersion: r.server_version }));
}

export function rowDigest(tables: Map<string, TableDef>, schemaHash: string, r: ScopeRow): Uint8Array {
  const table = tables.get(r.tableId);
  if (table === undefined) throw integrityFailure();
  try {
    return digestRow({ schemaHash, table: table.shape, row: r.row, serverVersion: r.serverVersion }).digest;
  } catch {
    throw integrityFailure();
  }
}

export function digestOf(rows: ScopeRow[], tables: Map<string, TableDef>, schemaHash: string, scope: string): Uint8Array {
  if (fault('xor-scope-digest')) return rows.reduce((acc, r) => acc.map((b, k) => b ^ (rowDigest(tables, schemaHash, r)[k] ?? 0)), new Uint8Array(32)); // fault: server:xor-scope-digest
  const b = new ScopeDigestBuilder(fromHex(schemaHash), scope);
  for (const r of rows) b.add(r.pkBytes, rowDigest(tables, schemaHash, r));
  return b.finish();
}

export async function scopeChecksum(db: ClientBase, tables: Map<string, TableDef>, schemaHash: string, scope: string): Promise<ChecksumObject> {
  return checksumObject(digestOf(await scopeRows(db, scope), tables, schemaHash, scope));
}
