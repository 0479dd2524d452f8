/**
 * Schema cursor continuity on connect. When a compatible schema step changes
 * the hash, each presented cursor of a kept, unaffected scope is verified
 * under the schema it was issued for and, when every binding is still
 * current, replaced by a token of the current schema at the same position.
 * An affected, stale, forged or absent cursor is answered null: that scope
 * rebuilds. Nothing is acknowledged here and no row is reinterpreted.
 */
import type { PoolClient } from 'pg';
import { type Bindings, checkCursor, issueCursor, readLineage } from '../core/cursor.ts';
import { fault } from '../core/faults.ts';
import { readBoundary } from '../core/snapshot.ts';

export interface BridgeInput {
  userId: string;
  clientId: string;
  clientGeneration: number;
  fromHash: string;
  toHash: string;
  kept: readonly string[];
  affected: ReadonlySet<string>;
  presented: Readonly<Record<string, { cursor: string | null } | undefined>>;
}

async function boundaryOf(db: PoolClient) {
  // Before capture has started there is no position to carry over.
  try {
    return await readBoundary(db);
  } catch {
    return undefined;
  }
}

export async function bridgeCursors(db: PoolClient, input: BridgeInput): Promise<Record<string, string | null>> {
  const out: Record<string, string | null> = {};
  for (const s of input.kept) out[s] = null;
  const candidates = input.kept.filter((s) => !input.affected.has(s) && typeof input.presented[s]?.cursor === 'string');
  if (candidates.length === 0) return out;
  const stream = await boundaryOf(db);
  if (stream === undefined) return out;
  const lineage = await readLineage(db, candidates);
  const base = { userId: input.userId, clientId: input.clientId, clientGeneration: input.clientGeneration, streamGeneration: stream.streamGeneration };
  const before: Bindings = { ...base, schemaHash: input.fromHash };
  const after: Bindings = { ...base, schemaHash: input.toHash };
  for (const s of candidates) {
    const l = lineage.get(s);
    if (l === undefined) continue;
    const check = await checkCursor(db, before, s, input.presented[s]?.cursor as string, l, stream.boundary);
    if (check.status === 'valid' && fault('schema003-bridge-at-boundary')) { out[s] = await issueCursor(db, after, s, l, stream.boundary); continue; } // fault: server:schema003-bridge-at-boundary
    if (check.status === 'valid') out[s] = await issueCursor(db, after, s, l, check.position);
  }
  return out;
}
