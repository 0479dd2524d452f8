/**
 * Behaviour only the sensitivity run reaches (SYNC-PULL-001, SYNC-PULL-002,
 * SYNC-PULL-003): pull pages as a server that gets per-scope eligibility,
 * the merge or cursor progress wrong would build them. The merge in changes.ts keeps the correct
 * behaviour and a one-line switch to these.
 */
import type { ClientBase } from 'pg';
import { parseLsn } from '../core/lsn.ts';
import { comparePositions, type Position, triple } from '../core/position.ts';
import { type Candidate, candidateOf, type EffectRow, type Merged } from './candidate.ts';

type Stream = { scope: string; after: Position };

type RawEffect = EffectRow & { scope_id: string };

const positionOf = (c: Candidate): Position => ({ kind: 'effect', lsn: c.lsn, event: c.event, effect: c.effect });

/** Raw effects of `scopes` after `after` through `boundary`, superseded ones included, in stream order. */
async function rawEffects(db: ClientBase, scopes: string[], generation: string, after: Position, boundary: Position, take: number, withSuperseded: boolean): Promise<Candidate[]> {
  const [al, ae, af] = triple(after);
  const [bl, be, bf] = triple(boundary);
  const { rows } = await db.query<RawEffect>(
    `SELECT scope_id, commit_lsn::text AS lsn, event_ordinal, effect_ordinal, table_id, pk_text, pk_bytes, op_rank, op, server_version, row_wire
       FROM synchro.scope_effects
      WHERE scope_id = ANY($1::text[]) AND stream_generation = $2
        AND (commit_lsn, event_ordinal, effect_ordinal) > ($3::pg_lsn, $4::int8, $5::int4)
        AND (commit_lsn, event_ordinal, effect_ordinal) <= ($6::pg_lsn, $7::int8, $8::int4)
        AND ($10 OR NOT superseded)
      ORDER BY commit_lsn, event_ordinal, effect_ordinal, scope_id COLLATE "C", table_id COLLATE "C", pk_bytes, op_rank
      LIMIT $9`,
    [scopes, generation, al, ae, af, bl, be, bf, take, withSuperseded],
  );
  return rows.map((r) => candidateOf(r.scope_id, r));
}

/**
 * One global window: the effects of every scope after the smallest cursor,
 * limited first and only then filtered by each scope's own cursor, so one
 * scope's already delivered backlog can fill the page; a scope with no
 * effect in the window is taken to be caught up.
 */
export async function windowFromSmallestCursor(db: ClientBase, streams: Stream[], generation: string, boundary: Position, limit: number): Promise<Merged> {
  const smallest = streams.map((s) => s.after).sort(comparePositions)[0] ?? boundary;
  const window = await rawEffects(db, streams.map((s) => s.scope), generation, smallest, boundary, limit + 1, false);
  const cursorOf = new Map(streams.map((s) => [s.scope, s.after]));
  const hasMore = window.length > limit;
  const selected = window.slice(0, limit).filter((c) => comparePositions(positionOf(c), cursorOf.get(c.scope) as Position) > 0);
  const inWindow = new Set(window.map((c) => c.scope));
  return { selected, hasMore, exhausted: new Set(streams.map((s) => s.scope).filter((scope) => !hasMore || !inWindow.has(scope))) };
}

/**
 * Each scope's raw effects, superseded versions included, counted against
 * the limit before they are collapsed to the latest version per key.
 */
export async function limitBeforeDedupe(db: ClientBase, streams: Stream[], generation: string, boundary: Position, limit: number): Promise<Merged> {
  const raw: Candidate[] = [];
  for (const s of streams) raw.push(...(await rawEffects(db, [s.scope], generation, s.after, boundary, limit + 1, true)));
  raw.sort((a, b) => comparePositions(positionOf(a), positionOf(b)) || (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0));
  const counted = raw.slice(0, limit);
  const latest = new Map<string, Candidate>();
  for (const c of counted) latest.set(`${c.scope}\u0000${c.tableId}\u0000${c.pkText}`, c);
  const selected = [...latest.values()].sort((a, b) => comparePositions(positionOf(a), positionOf(b)));
  const hasMore = raw.length > limit;
  const exhausted = new Set(streams.filter((s) => !raw.slice(limit).some((c) => c.scope === s.scope)).map((s) => s.scope));
  return { selected, hasMore, exhausted };
}

/**
 * The source database's current WAL position, as the end of a transaction
 * there. The insert position, not the write position: with synchronous_commit
 * off the write position can still lie before a commit that has returned.
 */
export async function sourceHead(db: ClientBase): Promise<Position> {
  const { rows } = await db.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
  return { kind: 'transaction_end', lsn: parseLsn(rows[0]?.lsn as string) };
}

/**
 * The cursor names the next candidate instead of the last delivered one:
 * the last selected candidate of the look-ahead's scope takes the
 * look-ahead's position, and since a pull resumes after its cursor, that
 * candidate is never delivered.
 */
export function moveToLookahead(selected: Candidate[], lookahead: Candidate | undefined): void {
  if (lookahead === undefined) return;
  const last = selected.filter((c) => c.scope === lookahead.scope).at(-1);
  if (last === undefined) return;
  last.lsn = lookahead.lsn;
  last.event = lookahead.event;
  last.effect = lookahead.effect;
}

/** What each client was sent, remembered by a server that tracks deliveries itself instead of trusting the cursors. */
const sentTo = new Map<string, Set<string>>();

/**
 * Drops from the page every change this client was sent before and
 * remembers the rest, so a page depends on the client's history and not only
 * on the presented cursors and the boundary.
 */
export function dropSentBefore(clientId: string, selected: Candidate[]): void {
  const sent = sentTo.get(clientId) ?? new Set<string>();
  sentTo.set(clientId, sent);
  const key = (c: Candidate) => `${c.scope}\u0000${c.tableId}\u0000${c.pkText}\u0000${c.serverVersion}`;
  const kept = selected.filter((c) => !sent.has(key(c)));
  selected.splice(0, selected.length, ...kept);
  for (const c of kept) sent.add(key(c));
}

/** Scope IDs compared under the host's locale collation instead of as unsigned UTF-8 bytes. */
export const localeScopeOrder = (a: Candidate, b: Candidate): number => a.scope.localeCompare(b.scope);
