/**
 * Per-scope candidate streams and their merge. Each stream holds the
 * scope's effects after its cursor and through the boundary, deduplicated by
 * (scope, table, typed key) to the greatest position; the merge orders all
 * streams by (position, scope bytes, table bytes, key bytes, operation rank)
 * and only then applies the global limit.
 */
import type { ClientBase } from 'pg';
import { checksumObject, compareBytes, digestRow } from '../../../harness/codec/index.ts';
import { parseLsn } from '../core/lsn.ts';
import { integrityFailure } from '../core/errors.ts';
import type { TableDef } from '../core/tables.ts';
import { type Position, triple } from '../core/position.ts';

export interface Candidate {
  scope: string;
  lsn: bigint;
  event: number;
  effect: number;
  tableId: string;
  pkText: string;
  pkBytes: Buffer;
  opRank: number;
  op: 'upsert' | 'delete';
  serverVersion: string;
  row: Record<string, unknown> | null;
}

/** At most `take` deduplicated candidates of one scope in position order. */
export async function scopeStream(db: ClientBase, scope: string, generation: string, after: Position, boundary: Position, take: number): Promise<Candidate[]> {
  const [al, ae, af] = triple(after);
  const [bl, be, bf] = triple(boundary);
  const { rows } = await db.query<{ lsn: string; event_ordinal: string; effect_ordinal: number; table_id: string; pk_text: string; pk_bytes: Buffer; op_rank: number; op: 'upsert' | 'delete'; server_version: string; row_wire: Record<string, unknown> | null }>(
    `WITH eligible AS (
       SELECT * FROM synchro.scope_effects
        WHERE scope_id = $1 AND stream_generation = $2
          AND (commit_lsn, event_ordinal, effect_ordinal) > ($3::pg_lsn, $4::int8, $5::int4)
          AND (commit_lsn, event_ordinal, effect_ordinal) <= ($6::pg_lsn, $7::int8, $8::int4)
     ), retained AS (
       SELECT DISTINCT ON (table_id, pk_bytes) * FROM eligible
        ORDER BY table_id, pk_bytes, commit_lsn DESC, event_ordinal DESC, effect_ordinal DESC
     )
     SELECT commit_lsn::text AS lsn, event_ordinal, effect_ordinal, table_id, pk_text, pk_bytes, op_rank, op, server_version, row_wire
       FROM retained
      ORDER BY commit_lsn, event_ordinal, effect_ordinal, table_id COLLATE "C", pk_bytes, op_rank
      LIMIT $9`,
    [scope, generation, al, ae, af, bl, be, bf, take],
  );
  return rows.map((r) => ({
    scope,
    lsn: parseLsn(r.lsn),
    event: Number(r.event_ordinal),
    effect: r.effect_ordinal,
    tableId: r.table_id,
    pkText: r.pk_text,
    pkBytes: r.pk_bytes,
    opRank: r.op_rank,
    op: r.op,
    serverVersion: r.server_version,
    row: r.row_wire,
  }));
}

const utf8 = (s: string) => Buffer.from(s, 'utf8');

export function mergeOrder(a: Candidate, b: Candidate): number {
  if (a.lsn !== b.lsn) return a.lsn < b.lsn ? -1 : 1;
  return (
    a.event - b.event ||
    a.effect - b.effect ||
    compareBytes(utf8(a.scope), utf8(b.scope)) ||
    compareBytes(utf8(a.tableId), utf8(b.tableId)) ||
    compareBytes(a.pkBytes, b.pkBytes) ||
    a.opRank - b.opRank
  );
}

export function positionOf(c: Candidate): Position {
  return { kind: 'effect', lsn: c.lsn, event: c.event, effect: c.effect };
}

/** Key value in wire form (int as a JSON number, int64 and string as text). */
export function pkWire(table: TableDef, pkText: string): unknown {
  return table.pkType === 'int' ? Number(pkText) : pkText;
}

/** One wire change: an upsert or tombstone with its row and checksum, or a rowless delete. */
export function wireChange(c: Candidate, tables: Map<string, TableDef>, schemaHash: string): Record<string, unknown> {
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
    let digest: Uint8Array;
    try {
      digest = digestRow({ schemaHash, table: table.shape, row: c.row, serverVersion: c.serverVersion }).digest;
    } catch {
      throw integrityFailure();
    }
    change.row = c.row;
    change.row_checksum = checksumObject(digest);
  } else if (c.op === 'upsert') {
    throw integrityFailure();
  }
  return change;
}

