/**
 * Connect turns the continuation receipts of an installed portable seed into
 * this client's incremental cursors at the seed's snapshot boundary. The
 * receipts convert all together or not at all: every receipt must verify
 * under a continuation key, name the scope it is filed under, come from one
 * export (same export ID, manifest hash and boundary), cover exactly the
 * portable shared scopes the server declares now, and still describe the
 * server as it is (schema hash, stream, registry, membership and retention
 * generations), with the boundary already materialized and not below the
 * scope's resume floor. Anything else is not an error: every seeded scope
 * then gets a null cursor and rebuilds, keeping the seeded rows only as a
 * cache.
 */
import type { ClientBase } from 'pg';
import { canonicalJson } from '../../../harness/codec/index.ts';
import { type Bindings, issueCursor, readLineage } from '../core/cursor.ts';
import { fault } from '../core/faults.ts';
import { boundaryOf, comparePositions, type Position, readPosition } from '../core/position.ts';
import { openReceipt, type ReceiptPayload } from '../core/seed-receipt.ts';

/** Scope → cursor at the seed boundary, or null where the scope has to rebuild; only assigned scopes are answered. */
export type SeedCursorUpdates = Record<string, string | null>;

async function currentRegistryGeneration(db: ClientBase): Promise<string> {
  return (await db.query<{ g: string }>('SELECT coalesce(max(generation), 0)::text AS g FROM synchro.registry_generations')).rows[0]?.g ?? '0';
}

async function materializedBoundary(db: ClientBase): Promise<{ streamGeneration: string; boundary: Position } | undefined> {
  const r = (await db.query<{ g: string; m: string | null }>('SELECT stream_generation AS g, materialized_commit_lsn::text AS m FROM synchro.wal_progress')).rows[0];
  return r === undefined ? undefined : { streamGeneration: r.g, boundary: boundaryOf(r.m) };
}

/** The verified receipts when the whole set converts, else undefined. */
async function convertible(db: ClientBase, receipts: Readonly<Record<string, string | undefined>>, schemaHash: string): Promise<{ payloads: ReceiptPayload[]; at: Position; streamGeneration: string } | undefined> {
  const portable = (await db.query<{ scope_id: string }>('SELECT scope_id FROM synchro.shared_scopes WHERE portable ORDER BY scope_id COLLATE "C"')).rows.map((r) => r.scope_id);
  const presented = Object.keys(receipts).sort();
  if (canonicalJson(presented) !== canonicalJson([...portable].sort())) return undefined;
  const payloads: ReceiptPayload[] = [];
  for (const scope of presented) {
    const p = await openReceipt(db, receipts[scope]);
    if (p === undefined || p.scope_id !== scope) return undefined;
    payloads.push(p);
  }
  const first = payloads[0];
  if (first === undefined) return undefined;
  const oneExport = (p: ReceiptPayload) =>
    p.export_id === first.export_id && p.export_manifest_hash === first.export_manifest_hash && canonicalJson(p.snapshot_boundary) === canonicalJson(first.snapshot_boundary);
  if (!payloads.every(oneExport)) return undefined;
  const at = readPosition(first.snapshot_boundary);
  const now = await materializedBoundary(db);
  if (at === undefined || now === undefined) return undefined;
  const registry = await currentRegistryGeneration(db);
  const lineage = await readLineage(db, presented);
  for (const p of payloads) {
    const l = lineage.get(p.scope_id);
    if (l === undefined) return undefined;
    if (fault('seed-receipt-ignores-current-state')) continue; // fault: server:seed-receipt-ignores-current-state
    if (
      p.schema_hash !== schemaHash ||
      p.stream_generation !== now.streamGeneration ||
      p.registry_generation !== registry ||
      p.membership_generation !== String(l.membershipGeneration) ||
      p.retention_generation !== String(l.retentionGeneration) ||
      comparePositions(at, l.floor) < 0
    ) {
      return undefined;
    }
  }
  // A boundary the server has not materialized yet cannot be resumed from.
  if (comparePositions(at, now.boundary) > 0) return undefined;
  return { payloads, at, streamGeneration: now.streamGeneration };
}

export async function seedCursorUpdates(
  db: ClientBase,
  receipts: Readonly<Record<string, string | undefined>>,
  client: Omit<Bindings, 'streamGeneration'>,
  assigned: ReadonlySet<string>,
): Promise<SeedCursorUpdates> {
  const ok = await convertible(db, receipts, client.schemaHash);
  const out: SeedCursorUpdates = {};
  const lineage = ok === undefined ? undefined : await readLineage(db, ok.payloads.map((p) => p.scope_id));
  for (const scope of Object.keys(receipts).sort()) {
    // An unassigned scope gets nothing: the client learns of it from the assignment and drops the seeded cache.
    if (!assigned.has(scope)) continue;
    const l = lineage?.get(scope);
    out[scope] = ok === undefined || l === undefined ? null : await issueCursor(db, { ...client, streamGeneration: ok.streamGeneration }, scope, l, ok.at);
  }
  return out;
}
