/**
 * Per-scope candidate streams and their merge. Each stream holds the
 * scope's effects after its cursor and through the boundary, deduplicated by
 * (scope, table, typed key) to the greatest position; the merge orders all
 * streams by (position, scope bytes, table bytes, key bytes, operation rank)
 * and only then applies the global limit.
 */
import type { ClientBase } from 'pg';
import { compareBytes } from '../../../harness/codec/index.ts';
import { pickedInAnyScope, pickedUnderJoinedKey } from '../core/fault-behaviour.ts';
import { fault } from '../core/faults.ts';
import { type Position, triple } from '../core/position.ts';
import { type Candidate, candidateOf, type EffectRow, type Merged } from './candidate.ts';
import { limitBeforeDedupe, localeScopeOrder, moveToLookahead, windowFromSmallestCursor } from './eligibility-faults.ts';

export type { Candidate, Merged };

/**
 * The latest effect of each key in the window, walked in position order from
 * the cursor. The worker marks an effect superseded in the same transaction
 * that writes a later one of its key and scope, and everything this snapshot
 * sees is at or before the boundary, so the unmarked effects are exactly the
 * latest ones: a page is one range scan and costs its own size, not the
 * size of the window behind it.
 */
async function latestPerKey(db: ClientBase, params: unknown[]): Promise<EffectRow[]> {
  const { rows } = await db.query<EffectRow>(
    `SELECT e.commit_lsn::text AS lsn, e.event_ordinal, e.effect_ordinal, e.table_id, e.pk_text, e.pk_bytes, e.op_rank, e.op, e.server_version, e.row_wire,
            e.row_digest, e.digest_tag
       FROM synchro.scope_effects e
      WHERE e.scope_id = $1 AND e.stream_generation = $2
        AND (e.commit_lsn, e.event_ordinal, e.effect_ordinal) > ($3::pg_lsn, $4::int8, $5::int4)
        AND (e.commit_lsn, e.event_ordinal, e.effect_ordinal) <= ($6::pg_lsn, $7::int8, $8::int4)
        AND NOT e.superseded
      ORDER BY e.commit_lsn, e.event_ordinal, e.effect_ordinal
      LIMIT $9`,
    params,
  );
  return rows;
}

/**
 * The first chunk of several scopes' latest-per-key streams in one query:
 * the same rows as latestPerKey run once per scope, grouped by scope. A pull
 * with several scopes and nothing new then costs one round trip, not one
 * per scope.
 */
async function latestPerKeyOfScopes(db: ClientBase, scopes: Array<{ scope: string; after: Position }>, generation: string, boundary: Position, take: number): Promise<Candidate[][]> {
  const afters = scopes.map((s) => triple(s.after));
  const [bl, be, bf] = triple(boundary);
  const { rows } = await db.query<EffectRow & { stream: string }>(
    `SELECT s.stream::text AS stream, e.*
       FROM unnest($1::text[], $2::pg_lsn[], $3::int8[], $4::int4[]) WITH ORDINALITY AS s(scope_id, al, ae, af, stream)
      CROSS JOIN LATERAL (
        SELECT e.commit_lsn::text AS lsn, e.event_ordinal, e.effect_ordinal, e.table_id, e.pk_text, e.pk_bytes, e.op_rank, e.op, e.server_version, e.row_wire,
               e.row_digest, e.digest_tag
          FROM synchro.scope_effects e
         WHERE e.scope_id = s.scope_id AND e.stream_generation = $5
           AND (e.commit_lsn, e.event_ordinal, e.effect_ordinal) > (s.al, s.ae, s.af)
           AND (e.commit_lsn, e.event_ordinal, e.effect_ordinal) <= ($6::pg_lsn, $7::int8, $8::int4)
           AND NOT e.superseded
         ORDER BY e.commit_lsn, e.event_ordinal, e.effect_ordinal
         LIMIT $9) e
      ORDER BY s.stream, e.lsn::pg_lsn, e.event_ordinal, e.effect_ordinal`,
    [scopes.map((s) => s.scope), afters.map((a) => a[0]), afters.map((a) => a[1]), afters.map((a) => a[2]), generation, bl, be, bf, take],
  );
  const out: Candidate[][] = scopes.map(() => []);
  for (const r of rows) {
    const k = Number(r.stream) - 1;
    (out[k] as Candidate[]).push(candidateOf((scopes[k] as { scope: string }).scope, r));
  }
  return out;
}

/**
 * The same window deduplicated as a whole set first. It reads the whole
 * window on every page; it stays as the path of the fault switch that keeps
 * the oldest effect instead of the latest.
 */
async function wholeWindow(db: ClientBase, params: unknown[]): Promise<EffectRow[]> {
  const { rows } = await db.query<EffectRow>(
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
    params,
  );
  return rows;
}

/** At most `take` deduplicated candidates of one scope in position order. */
export async function scopeStream(db: ClientBase, scope: string, generation: string, after: Position, boundary: Position, take: number): Promise<Candidate[]> {
  const [al, ae, af] = triple(after);
  const [bl, be, bf] = triple(boundary);
  const params = [scope, generation, al, ae, af, bl, be, bf, take];
  const rows = fault('dedupe-keeps-oldest') ? await wholeWindow(db, params) : await latestPerKey(db, params);
  return rows.map((r) => candidateOf(scope, r));
}

const utf8 = (s: string) => Buffer.from(s, 'utf8');

export function mergeOrder(a: Candidate, b: Candidate): number {
  if (fault('merge-scope-by-scope') && a.scope !== b.scope) return compareBytes(utf8(a.scope), utf8(b.scope)); // fault: server:merge-scope-by-scope
  if (a.lsn !== b.lsn) return a.lsn < b.lsn ? -1 : 1;
  if (fault('scope-order-by-locale') && a.event === b.event && a.effect === b.effect && a.scope !== b.scope) return localeScopeOrder(a, b); // fault: server:scope-order-by-locale
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

/** The first `limit` candidates of all scopes in merge order, whether more exist, and the scopes with nothing left. */

/**
 * Merges the scopes' streams under the global limit, reading each stream in
 * chunks as the merge reaches its end instead of `limit + 1` rows of every
 * scope up front: what is selected, whether more exist and which scopes are
 * exhausted come out exactly as from the whole streams, for a fraction of the
 * reads when several scopes have changes. A chunk continues after the last
 * position read, which is exact because the latest-per-key rule does not
 * depend on where the window starts. The whole-window dedupe (the fault
 * path) does depend on it, so it reads `limit + 1` at once, as it always did.
 */
export async function mergeStreams(
  db: ClientBase,
  scopes: Array<{ scope: string; after: Position }>,
  generation: string,
  boundary: Position,
  limit: number,
): Promise<Merged> {
  if (fault('window-from-smallest-cursor')) return await windowFromSmallestCursor(db, scopes, generation, boundary, limit); // fault: server:window-from-smallest-cursor
  if (fault('limit-before-dedupe')) return await limitBeforeDedupe(db, scopes, generation, boundary, limit); // fault: server:limit-before-dedupe
  const whole = fault('dedupe-keeps-oldest');
  const chunk = whole ? limit + 1 : Math.min(limit + 1, Math.ceil((limit + 1) / Math.max(1, scopes.length)) + 1);
  const streams = scopes.map(({ scope, after }) => ({ scope, after, rows: [] as Candidate[], next: 0, done: false }));
  const refill = async (s: (typeof streams)[number], take: number) => {
    const rows = await scopeStream(db, s.scope, generation, s.after, boundary, take);
    s.rows.push(...rows);
    s.done = rows.length < take;
    const last = rows[rows.length - 1];
    if (last !== undefined) s.after = positionOf(last);
  };
  if (!whole && streams.length > 1) {
    // Every stream's first chunk in one query; later chunks are read per stream as the merge reaches them.
    const first = await latestPerKeyOfScopes(db, scopes, generation, boundary, chunk);
    streams.forEach((s, k) => {
      const rows = first[k] as Candidate[];
      s.rows.push(...rows);
      s.done = rows.length < chunk;
      const last = rows[rows.length - 1];
      if (last !== undefined) s.after = positionOf(last);
    });
  }
  const picked: Candidate[] = [];
  while (picked.length <= limit) {
    let best: (typeof streams)[number] | undefined;
    for (const s of streams) {
      if (s.next === s.rows.length && !s.done) await refill(s, chunk);
      const head = s.rows[s.next];
      if (head !== undefined && (best === undefined || mergeOrder(head, best.rows[best.next] as Candidate) < 0)) best = s;
    }
    if (best === undefined) break;
    if (fault('dedupe-ignores-scope') && pickedInAnyScope(picked, best.rows[best.next] as Candidate)) { best.next++; continue; } // fault: server:dedupe-ignores-scope
    if (fault('dedupe-key-joined-float') && pickedUnderJoinedKey(picked, best.rows[best.next] as Candidate)) { best.next++; continue; } // fault: server:dedupe-key-joined-float
    picked.push(best.rows[best.next] as Candidate);
    best.next++;
  }
  const selected = picked.slice(0, limit);
  if (fault('cursor-at-next-candidate')) moveToLookahead(selected, picked[limit]); // fault: server:cursor-at-next-candidate
  const exhausted = new Set<string>();
  for (const s of streams) {
    // Everything read was selected; whether the stream has more is known, or one more row tells.
    const unselected = s.rows.length - selected.filter((c) => c.scope === s.scope).length;
    if (unselected > 0) continue;
    if (!s.done) await refill(s, 1);
    if (s.done && s.rows.length === s.next) exhausted.add(s.scope);
  }
  if (fault('has-more-when-page-full')) return { selected, hasMore: selected.length === limit, exhausted }; // fault: server:has-more-when-page-full
  return { selected, hasMore: picked.length > limit, exhausted };
}
