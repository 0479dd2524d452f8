/**
 * Stream points as server inspection shows them, for the commit-order
 * checks of SYNC-CAP-003: the durable pull boundary, the transaction and
 * event records of the current stream generation, and the positions inside
 * the cursors the server issued.
 *
 * Cursors are opaque on the wire. Reading the position inside one is an
 * implementation-internal observation, made through the `inspect`
 * capability: the reference signs tokens as `<prefix>.<base64url payload>.
 * <base64url HMAC-SHA-256>` with keys kept in `synchro.token_keys`, so a
 * token is decoded only when its MAC verifies under one of the server's own
 * keys of that purpose (a token the server did not sign decodes to nothing).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { inspectRows } from '../capture/inspection.ts';
import type { Reply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';

export type StreamPoint =
  | { kind: 'generation_start' }
  | { kind: 'effect'; commit: string; event: number; effect: number }
  | { kind: 'transaction_end'; commit: string };

/** The reference's token forms: prefix, key purpose and MAC domain. */
const TOKEN_FORMS: Record<string, { purpose: string; domain: string }> = {
  ic1: { purpose: 'incremental_cursor', domain: 'synchro-ref:v3:incremental-cursor:v1' },
  rb1: { purpose: 'rebuild_cursor', domain: 'synchro-ref:v3:rebuild-cursor:v1' },
};

export interface DecodedToken {
  token: string;
  where: string;
  streamGeneration: unknown;
  /** The position the token carries (`position` of a cursor, `snapshot_boundary` of a rebuild continuation). */
  position: unknown;
}

/** The token's payload when its MAC verifies under a key the server holds for its purpose; undefined otherwise. */
export async function decodeToken(world: SyncWorld, token: string): Promise<Record<string, unknown> | undefined> {
  const [prefix, body, mac] = token.split('.');
  const form = prefix === undefined ? undefined : TOKEN_FORMS[prefix];
  if (form === undefined || body === undefined || mac === undefined) return undefined;
  const payload = Buffer.from(body, 'base64url');
  const given = Buffer.from(mac, 'base64url');
  const keys = await inspectRows<{ secret: Buffer }>(world, "SELECT secret FROM synchro.token_keys WHERE purpose = $1 AND state <> 'retired'", [form.purpose]);
  const signed = keys.some((key) => {
    const expected = createHmac('sha256', key.secret).update(Buffer.from(form.domain, 'ascii')).update(Buffer.from([0])).update(payload).digest();
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
  return signed ? (JSON.parse(payload.toString('utf8')) as Record<string, unknown>) : undefined;
}

/** Every cursor and rebuild continuation the server gave the harness client `clientId`, with where it was found. */
export function issuedTokens(replies: readonly Reply[], clientId: string): Array<{ token: string; where: string }> {
  const found: Array<{ token: string; where: string }> = [];
  replies.forEach((reply, index) => {
    if (reply.status !== 200 || reply.json === undefined) return;
    let sender: unknown;
    try {
      sender = (JSON.parse(reply.requestText) as { client_id?: unknown }).client_id;
    } catch {
      return;
    }
    if (sender !== clientId) return;
    const at = (member: string) => `${reply.endpoint} answer #${index + 1} ${member}`;
    const add = (token: unknown, member: string) => {
      if (typeof token === 'string') found.push({ token, where: at(member) });
    };
    const body = reply.json as Record<string, unknown>;
    if (reply.endpoint === 'connect') {
      for (const added of ((body.scopes as { add?: Array<{ id: string; cursor: unknown }> } | undefined)?.add ?? [])) add(added.cursor, `scopes.add ${added.id}`);
      for (const [scope, cursor] of Object.entries((body.scope_cursor_updates ?? {}) as Record<string, unknown>)) add(cursor, `scope_cursor_updates ${scope}`);
    }
    if (reply.endpoint === 'pull') for (const [scope, cursor] of Object.entries((body.scope_cursors ?? {}) as Record<string, unknown>)) add(cursor, `scope_cursors ${scope}`);
    if (reply.endpoint === 'rebuild') {
      add(body.cursor, 'cursor');
      add(body.final_scope_cursor, 'final_scope_cursor');
    }
  });
  return found;
}

/** The stream point a decoded position names, or undefined when it is none of the three shapes. */
export function streamPoint(position: unknown): StreamPoint | undefined {
  if (typeof position !== 'object' || position === null) return undefined;
  const p = position as Record<string, unknown>;
  if (p.position_kind === 'generation_start') return { kind: 'generation_start' };
  if (typeof p.commit_lsn !== 'string') return undefined;
  if (p.position_kind === 'transaction_end') return { kind: 'transaction_end', commit: p.commit_lsn };
  if (p.position_kind === 'effect' && typeof p.event_ordinal === 'number' && typeof p.effect_ordinal === 'number') {
    return { kind: 'effect', commit: p.commit_lsn, event: p.event_ordinal, effect: p.effect_ordinal };
  }
  return undefined;
}

/** Decodes every token the harness client `name` was issued; a token that does not verify is kept with no position. */
export async function decodedTokensOf(world: SyncWorld, name: string): Promise<DecodedToken[]> {
  const decoded: DecodedToken[] = [];
  for (const { token, where } of issuedTokens(world.replies, world.wire(name).clientId)) {
    const payload = await decodeToken(world, token);
    decoded.push({ token, where, streamGeneration: payload?.stream_generation, position: payload === undefined ? undefined : (payload.position ?? payload.snapshot_boundary) });
  }
  return decoded;
}

export interface CurrentStream {
  generation: string;
  /** NULL in the progress row: nothing materialized yet, the boundary is generation_start. */
  materializedCommit: string | null;
}

export async function currentStream(world: SyncWorld): Promise<CurrentStream> {
  const [row] = await inspectRows<{ g: string; m: string | null }>(world, 'SELECT stream_generation AS g, materialized_commit_lsn::text AS m FROM synchro.wal_progress');
  if (row === undefined) throw new Error('server inspection shows no capture progress: capture has not started');
  return { generation: row.g, materializedCommit: row.m };
}

/** Whether the current generation holds a completed transaction record committed at `commit`. */
export async function transactionRecorded(world: SyncWorld, generation: string, commit: string): Promise<boolean> {
  const rows = await inspectRows(world, 'SELECT 1 FROM synchro.wal_transactions WHERE stream_generation = $1 AND commit_lsn = $2::pg_lsn', [generation, commit]);
  return rows.length > 0;
}

/** Whether the current generation holds a pull effect at exactly this position. */
export async function effectHeld(world: SyncWorld, generation: string, point: { commit: string; event: number; effect: number }): Promise<boolean> {
  const rows = await inspectRows(
    world,
    'SELECT 1 FROM synchro.scope_effects WHERE stream_generation = $1 AND commit_lsn = $2::pg_lsn AND event_ordinal = $3::int8 AND effect_ordinal = $4::int4',
    [generation, point.commit, point.event, point.effect],
  );
  return rows.length > 0;
}
