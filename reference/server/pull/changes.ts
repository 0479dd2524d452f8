/**
 * Per-scope candidate streams and their merge. Each stream holds the
 * scope's effects after its cursor and through the boundary, deduplicated by
 * (scope, table, typed key) to the greatest position; the merge orders all
 * streams by (position, scope bytes, table bytes, key bytes, operation rank)
 * and only then applies the global limit.
 */
import type { ClientBase } from 'pg';
import { compareBytes } from '../../../harness/codec/index.ts';
import { fault } from '../core/faults.ts';
import { parseLsn } from '../core/lsn.ts';
import { type Position, triple } from '../core/position.ts';
import type { ChangeSource } from '../core/wire-change.ts';

/** One scope effect: a change (core/wire-change.ts) at its stream position. */
export interface Candidate extends ChangeSource {
  lsn: bigint;
  event: number;
  effect: number;
  pkBytes: Buffer;
  opRank: number;
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
        ORDER BY table_id, pk_bytes, ${fault('dedupe-keeps-oldest') ? 'commit_lsn, event_ordinal, effect_ordinal' : 'commit_lsn DESC, event_ordinal DESC, effect_ordinal DESC'} -- // fault: server:dedupe-keeps-oldest
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
