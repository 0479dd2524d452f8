/**
 * A row as push sees it while deciding a mutation: the source row (locked
 * when asked) and its fence, and a row in wire form with its checksum
 * (computed by the codec under the outcome schema).
 */
import type { PoolClient, QueryResult } from 'pg';
import { checksumObject, rowDigest } from '../../../harness/codec/index.ts';
import { wireRow } from '../core/rows.ts';
import { quoteIdent, type TableDef } from '../core/tables.ts';

export interface RowState {
  /** Fence state of the identity; undefined when it was never written. */
  fence?: { state: 'live' | 'deleted' | 'reserved'; version: string };
  row?: Record<string, unknown>;
}

/** Key predicate on the source relation; the parameter is cast by the key's SQL type. */
export function keyPredicate(table: TableDef, param: number): string {
  const pk = table.byId.get(table.pkFieldId);
  return `${quoteIdent(table.pkColumn)} = $${param}::${pk?.sqlType ?? 'text'}`;
}

/** Reads the source row (locked in `mode`, if given) and then its fence (FOR UPDATE when locking). */
export async function readState(db: PoolClient, table: TableDef, pk: unknown, mode?: 'UPDATE' | 'NO KEY UPDATE'): Promise<RowState> {
  const lock = mode === undefined ? '' : ` FOR ${mode}`;
  const src = await db.query({
    text: `SELECT ${table.selectList} FROM ${table.qualified} WHERE ${keyPredicate(table, 1)}${lock}`,
    values: [String(pk)],
  });
  const pkSql = table.byId.get(table.pkFieldId)?.sqlType ?? 'text';
  const fence = await db.query<FenceRow>(
    `SELECT state, server_version FROM synchro.row_versions WHERE table_id = $1 AND pk_text = to_jsonb($2::${pkSql}) #>> '{}'${mode === undefined ? '' : ' FOR UPDATE'}`,
    [table.tableId, String(pk)],
  );
  return stateOf(table, src.rows[0], fence.rows[0]);
}

type FenceRow = { state: 'live' | 'deleted' | 'reserved'; server_version: string };

function stateOf(table: TableDef, r: Record<string, unknown> | undefined, f: FenceRow | undefined): RowState {
  const out: RowState = {};
  if (f !== undefined) out.fence = { state: f.state, version: f.server_version };
  if (r !== undefined) out.row = wireRow(table, r);
  return out;
}

/**
 * The unlocked reads of readState (the source row and its fence) as one
 * statement, for a simple-protocol query or a prepared form: the key goes in
 * as `key` (a parameter or an escaped literal; text results are parsed exactly
 * as parameterized ones). It answers always one row: the fence's state and
 * version under names no field ID takes (field IDs are the table ID, `f` and
 * a number), NULL without a fence, then the row's fields, with "$row" true
 * only when the row exists.
 */
export function joinedStateRead(db: PoolClient, table: TableDef, key: string): string {
  const pkSql = table.byId.get(table.pkFieldId)?.sqlType ?? 'text';
  return `SELECT f.state AS "$fence_state", f.server_version AS "$fence_version", r.* FROM (SELECT 1) one
    LEFT JOIN (SELECT state, server_version FROM synchro.row_versions WHERE table_id = ${db.escapeLiteral(table.tableId)} AND pk_text = to_jsonb(${key}::${pkSql}) #>> '{}') f ON true
    LEFT JOIN (SELECT true AS "$row", ${table.selectList} FROM ${table.qualified} WHERE ${quoteIdent(table.pkColumn)} = ${key}::${pkSql}) r ON true`;
}

export function stateFromJoinedRead(table: TableDef, result: QueryResult): RowState {
  const r = result.rows[0] as ({ $fence_state: FenceRow['state'] | null; $fence_version: string | null; $row: boolean | null } & Record<string, unknown>) | undefined;
  if (r === undefined) throw new Error('the joined state read returned no row');
  const fence = r.$fence_state === null ? undefined : { state: r.$fence_state, server_version: r.$fence_version as string };
  return stateOf(table, r.$row === true ? r : undefined, fence);
}

/** Runs `before` (SQL without parameters), then the unlocked reads of joinedStateRead, in one round trip. */
export async function readStateAfter(db: PoolClient, table: TableDef, pk: unknown, before: string): Promise<RowState> {
  const results = (await db.query(`${before}; ${joinedStateRead(db, table, db.escapeLiteral(String(pk)))}`)) as unknown as QueryResult[];
  return stateFromJoinedRead(table, results.at(-1) as QueryResult);
}

/** `server_row` + `row_checksum` for a row under the given schema hash. */
export function rowWithChecksum(table: TableDef, schemaHash: string, row: Record<string, unknown>, serverVersion: string) {
  const digest = rowDigest({ schemaHash, table: table.shape, row, serverVersion });
  return { server_row: row, row_checksum: checksumObject(digest) };
}
