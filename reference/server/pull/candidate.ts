/**
 * The merge candidate of a pull, the effect row it is read from, and what a
 * merge returns; shared by the pull path and its fault-only variants.
 */
import { parseLsn } from '../core/lsn.ts';
import type { ChangeSource } from '../core/wire-change.ts';

/** One effect of one scope, with its delivery position, as the merge orders it. */
export interface Candidate extends ChangeSource {
  lsn: bigint;
  event: number;
  effect: number;
  pkBytes: Buffer;
  opRank: number;
}

export interface Merged {
  selected: Candidate[];
  hasMore: boolean;
  /** Scopes all of whose candidates through the boundary are among `selected`. */
  exhausted: Set<string>;
}

/** One stored effect as the pull queries read it. */
export type EffectRow = {
  lsn: string;
  event_ordinal: string;
  effect_ordinal: number;
  table_id: string;
  pk_text: string;
  pk_bytes: Buffer;
  op_rank: number;
  op: 'upsert' | 'delete';
  server_version: string;
  row_wire: Record<string, unknown> | null;
  row_digest?: Buffer | null;
  digest_tag?: string | null;
};

/** The candidate an effect row of `scope` stands for. */
export function candidateOf(scope: string, r: EffectRow): Candidate {
  return {
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
    stored: r.row_digest == null || r.digest_tag == null ? null : { digest: r.row_digest, tag: r.digest_tag },
  };
}
