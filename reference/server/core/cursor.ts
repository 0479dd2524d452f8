/**
 * Incremental cursors: one scope position plus every binding the 003 sheet
 * lists. Authentication or binding failures are forged (400); an authentic
 * cursor whose lineage is no longer current is stale (that scope rebuilds).
 */
import type { ClientBase } from 'pg';
import { serverTime } from './clock.ts';
import { signToken, verifyToken } from './cursor-tokens.ts';
import { fault } from './faults.ts';
import { formatLsn, parseLsn } from './lsn.ts';
import { named } from './named-statements.ts';
import { comparePositions, type Position, positionJson, readPosition } from './position.ts';

export interface Lineage {
  membershipGeneration: number;
  retentionGeneration: number;
  /** Resume floor: positions below it are no longer retained. */
  floor: Position;
}

export interface Bindings {
  userId: string;
  clientId: string;
  clientGeneration: number;
  schemaHash: string;
  streamGeneration: string;
}

const MEMBERS = [
  'client_binding',
  'client_generation',
  'issued_at',
  'key_id',
  'kind',
  'membership_generation',
  'position',
  'retention_generation',
  'schema_hash',
  'scope_id',
  'stream_generation',
  'token_version',
  'user_binding',
].join(',');

export async function issueCursor(db: ClientBase, b: Bindings, scopeId: string, lineage: Lineage, position: Position): Promise<string> {
  return await signToken(db, 'incremental_cursor', {
    kind: 'incremental_cursor',
    token_version: 1,
    stream_generation: b.streamGeneration,
    position: positionJson(position),
    user_binding: b.userId,
    client_binding: b.clientId,
    client_generation: b.clientGeneration,
    scope_id: scopeId,
    schema_hash: b.schemaHash,
    membership_generation: lineage.membershipGeneration,
    retention_generation: lineage.retentionGeneration,
    issued_at: serverTime(),
  });
}

export type CursorCheck = { status: 'valid'; position: Position } | { status: 'stale' } | { status: 'forged' };

export async function checkCursor(db: ClientBase, b: Bindings, scopeId: string, token: string, lineage: Lineage, boundary: Position): Promise<CursorCheck> {
  const p = await verifyToken(db, 'incremental_cursor', token);
  if (p === undefined || Object.keys(p).sort().join(',') !== MEMBERS) return { status: 'forged' };
  if (p.kind !== 'incremental_cursor' || p.token_version !== 1) return { status: 'forged' };
  const position = readPosition(p.position);
  if (position === undefined) return { status: 'forged' };
  // Bound to someone or something else: never usable here.
  if (fault('seed005-cursor-binding-unchecked') && p.scope_id === scopeId) return { status: 'valid', position }; // fault: server:seed005-cursor-binding-unchecked
  if (p.user_binding !== b.userId || p.client_binding !== b.clientId || p.scope_id !== scopeId) return { status: 'forged' };
  if (fault('schema004-cursor-below-floor-resumes')) lineage = { ...lineage, floor: { kind: 'generation_start' } }; // fault: server:schema004-cursor-below-floor-resumes
  if (fault('schema003-cursor-schema-unchecked')) b = { ...b, schemaHash: String(p.schema_hash) }; // fault: server:schema003-cursor-schema-unchecked
  if (fault('cursor-ignores-membership-generation') && typeof p.membership_generation === 'number') lineage = { ...lineage, membershipGeneration: p.membership_generation }; // fault: server:cursor-ignores-membership-generation
  if (
    p.stream_generation !== b.streamGeneration ||
    p.client_generation !== b.clientGeneration ||
    p.schema_hash !== b.schemaHash ||
    p.membership_generation !== lineage.membershipGeneration ||
    p.retention_generation !== lineage.retentionGeneration ||
    comparePositions(position, lineage.floor) < 0 ||
    comparePositions(position, boundary) > 0
  ) {
    return { status: 'stale' };
  }
  return { status: 'valid', position };
}

/** Lineage of each scope; scopes without a state row are at generation 1 with the floor at generation_start. */
export async function readLineage(db: ClientBase, scopes: string[]): Promise<Map<string, Lineage>> {
  const { rows } = await db.query<{ scope_id: string; membership_generation: string; retention_generation: string; floor_commit_lsn: string | null; floor_event_ordinal: string | null; floor_effect_ordinal: number | null }>(
    named('SELECT scope_id, membership_generation, retention_generation, floor_commit_lsn::text, floor_event_ordinal, floor_effect_ordinal FROM synchro.scope_state WHERE scope_id = ANY ($1::text[])', [scopes]),
  );
  const out = new Map<string, Lineage>();
  for (const s of scopes) out.set(s, { membershipGeneration: 1, retentionGeneration: 1, floor: { kind: 'generation_start' } });
  for (const r of rows) {
    const lsn = r.floor_commit_lsn === null ? null : formatLsn(parseLsn(r.floor_commit_lsn));
    const floor: Position =
      lsn === null
        ? { kind: 'generation_start' }
        : (readPosition(
            r.floor_event_ordinal === null
              ? { position_kind: 'transaction_end', commit_lsn: lsn }
              : { position_kind: 'effect', commit_lsn: lsn, event_ordinal: Number(r.floor_event_ordinal), effect_ordinal: r.floor_effect_ordinal },
          ) ?? { kind: 'generation_start' });
    out.set(r.scope_id, { membershipGeneration: Number(r.membership_generation), retentionGeneration: Number(r.retention_generation), floor });
  }
  return out;
}
