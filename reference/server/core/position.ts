/**
 * Stream positions: generation_start, effect(commit_lsn, event, effect) and
 * transaction_end(commit_lsn), their JSON form inside tokens, and the
 * comparable SQL triple (exact because ordinals are nonnegative).
 */
import { formatLsn, parseLsn } from './lsn.ts';

export type Position =
  | { kind: 'generation_start' }
  | { kind: 'effect'; lsn: bigint; event: number; effect: number }
  | { kind: 'transaction_end'; lsn: bigint };

const MAX_EVENT = '9223372036854775807';
const MAX_EFFECT = 2147483647;

/** `(commit_lsn, event_ordinal, effect_ordinal)` for SQL row comparison. */
export function triple(p: Position): [string, string, number] {
  switch (p.kind) {
    case 'generation_start':
      return ['0/0', '-1', -1];
    case 'effect':
      return [formatLsn(p.lsn), String(p.event), p.effect];
    case 'transaction_end':
      return [formatLsn(p.lsn), MAX_EVENT, MAX_EFFECT];
  }
}

export function comparePositions(a: Position, b: Position): number {
  const [al, ae, af] = triple(a);
  const [bl, be, bf] = triple(b);
  const la = a.kind === 'generation_start' ? -1n : parseLsn(al);
  const lb = b.kind === 'generation_start' ? -1n : parseLsn(bl);
  if (la !== lb) return la < lb ? -1 : 1;
  const ea = BigInt(ae);
  const eb = BigInt(be);
  if (ea !== eb) return ea < eb ? -1 : 1;
  return af - bf;
}

export function positionJson(p: Position): Record<string, unknown> {
  switch (p.kind) {
    case 'generation_start':
      return { position_kind: 'generation_start' };
    case 'effect':
      return { position_kind: 'effect', commit_lsn: formatLsn(p.lsn), event_ordinal: p.event, effect_ordinal: p.effect };
    case 'transaction_end':
      return { position_kind: 'transaction_end', commit_lsn: formatLsn(p.lsn) };
  }
}

const LSN_TEXT = /^[0-9A-F]{1,8}\/[0-9A-F]{8}$/;

/** Reads a position from a token payload; undefined when it is not exactly one of the three shapes. */
export function readPosition(v: unknown): Position | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).sort().join(',');
  if (o.position_kind === 'generation_start' && keys === 'position_kind') return { kind: 'generation_start' };
  if (typeof o.commit_lsn !== 'string' || !LSN_TEXT.test(o.commit_lsn)) return undefined;
  const lsn = parseLsn(o.commit_lsn);
  if (o.position_kind === 'transaction_end' && keys === 'commit_lsn,position_kind') return { kind: 'transaction_end', lsn };
  if (
    o.position_kind === 'effect' &&
    keys === 'commit_lsn,effect_ordinal,event_ordinal,position_kind' &&
    Number.isSafeInteger(o.event_ordinal) &&
    (o.event_ordinal as number) >= 0 &&
    Number.isInteger(o.effect_ordinal) &&
    (o.effect_ordinal as number) >= 0 &&
    (o.effect_ordinal as number) <= MAX_EFFECT
  ) {
    return { kind: 'effect', lsn, event: o.event_ordinal as number, effect: o.effect_ordinal as number };
  }
  return undefined;
}

/** The boundary B of a materialized state: transaction_end of the last materialized commit, or generation_start. */
export function boundaryOf(materializedCommitLsn: string | null): Position {
  return materializedCommitLsn === null ? { kind: 'generation_start' } : { kind: 'transaction_end', lsn: parseLsn(materializedCommitLsn) };
}
