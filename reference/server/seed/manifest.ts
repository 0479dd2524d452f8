/**
 * The manifest of a portable seed export, read from the export transaction's
 * snapshot only: the materialization progress row first (boundary and stream
 * generation), then the published schema, the portable shared scopes, their
 * generations, and each scope's cardinality and scope digest over the
 * materialized rows. A repeated call in the same transaction returns the
 * stored manifest unchanged; another page limit is refused.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { ClientBase, PoolClient } from 'pg';
import { canonicalJson, checksumObject, utf8Order } from '../../../harness/codec/index.ts';
import { digestOf, scopeRows } from '../core/checksums.ts';
import { serverTime } from '../core/clock.ts';
import { readLineage } from '../core/cursor.ts';
import { fault } from '../core/faults.ts';
import { boundaryOf, positionJson } from '../core/position.ts';
import { seedKey } from '../core/seed-keys.ts';
import { loadTables, manifestTable, type TableDef } from '../core/tables.ts';
import { SeedRequestError } from './errors.ts';
import { type ExportState, loadState, requireExportTransaction, saveState } from './export-session.ts';
import type { ScopeEntry, SeedManifest } from './manifest-shape.ts';
import { pagePayload, signPageToken } from './page-token.ts';
import { declaredPortableScopes } from './portable-scopes.ts';
import { issueReceipt } from './receipt.ts';

// The shapes live apart so the modules this one uses can name them; the seed artifact and callers keep reading them here.
export { type ScopeEntry, type SeedManifest, scopeBinding } from './manifest-shape.ts';

export const MAX_PAGE_LIMIT = 1000;

/** The schema hash row and scope digests are computed under (the export's own). */
export function digestSchemaHash(schemaHash: string): string {
  if (fault('seed-digest-wrong-schema')) return createHash('sha256').update(schemaHash).digest('hex'); // fault: server:seed-digest-wrong-schema
  return schemaHash;
}

/** The published manifest and the registered tables; refused while the registry holds unpublished changes. */
export async function schemaAtSnapshot(db: ClientBase): Promise<{ version: number; hash: string; tables: Map<string, TableDef> }> {
  const { rows } = await db.query<{ schema_version: string; schema_hash: string; body_text: string }>(
    'SELECT schema_version, schema_hash, body_text FROM synchro.manifests ORDER BY schema_version DESC LIMIT 1',
  );
  const current = rows[0];
  const tables = await loadTables(db as PoolClient);
  const registered = [...tables.values()].map(manifestTable).sort((a, b) => utf8Order(String(a.table_id), String(b.table_id)));
  if (current === undefined || canonicalJson((JSON.parse(current.body_text) as { tables: unknown }).tables) !== canonicalJson(registered)) {
    throw new SeedRequestError('the registered tables are not yet published as a manifest', 'temporarily_unavailable', true);
  }
  return { version: Number(current.schema_version), hash: current.schema_hash, tables };
}

/** Hex SHA-256 over the manifest domain and the manifest without its hash and page tokens. */
export function exportManifestHash(m: Omit<SeedManifest, 'export_manifest_hash'>): string {
  const body = {
    export_id: m.export_id,
    schema_version: m.schema_version,
    schema_hash: m.schema_hash,
    stream_generation: m.stream_generation,
    snapshot_boundary: m.snapshot_boundary,
    page_limit: m.page_limit,
    portable_scopes: m.portable_scopes.map((s) => ({
      id: s.id,
      registry_generation: s.registry_generation,
      membership_generation: s.membership_generation,
      retention_generation: s.retention_generation,
      cardinality: s.cardinality,
      checksum: s.checksum,
    })),
  };
  return createHash('sha256').update('synchro:v3:seed-export-manifest:v1', 'ascii').update(Buffer.from([0])).update(canonicalJson(body), 'utf8').digest('hex');
}

export async function seedManifest(db: ClientBase, pageLimit: number = MAX_PAGE_LIMIT): Promise<SeedManifest> {
  await requireExportTransaction(db);
  if (!Number.isInteger(pageLimit) || pageLimit < 1 || pageLimit > MAX_PAGE_LIMIT) throw new SeedRequestError(`the page limit must be an integer from 1 to ${MAX_PAGE_LIMIT}`);
  const started = fault('seed004-manifest-recomputed') ? undefined : await loadState(db); // fault: server:seed004-manifest-recomputed
  if (started !== undefined) {
    if (started.pageLimit !== pageLimit) throw new SeedRequestError('the page limit is fixed for the whole export');
    return started.manifest;
  }
  // The first authoritative read: what the snapshot holds is materialized exactly through this boundary.
  const progress = await db.query<{ stream_generation: string; m: string | null }>('SELECT stream_generation, materialized_commit_lsn::text AS m FROM synchro.wal_progress');
  const p = progress.rows[0];
  if (p === undefined) throw new SeedRequestError('capture has not started', 'temporarily_unavailable', true);
  // The insert position: with synchronous_commit off, the write position can still lie before a commit that has returned.
  if (fault('seed004-boundary-at-wal-head')) p.m = (await db.query<{ m: string }>('SELECT pg_current_wal_insert_lsn()::text AS m')).rows[0]?.m ?? p.m; // fault: server:seed004-boundary-at-wal-head
  const key = await seedKey(db);
  if (key === undefined) throw new SeedRequestError('no seed page key is active', 'temporarily_unavailable', true);
  const receiptKey = await seedKey(db, undefined, 'seed_continuation');
  if (receiptKey === undefined) throw new SeedRequestError('no seed continuation key is active', 'temporarily_unavailable', true);
  const schema = await schemaAtSnapshot(db);
  const registry = await db.query<{ g: string }>('SELECT coalesce(max(generation), 0)::text AS g FROM synchro.registry_generations');
  const registryGeneration = registry.rows[0]?.g ?? '0';
  // Portability is what the operator declared, never inferred from rows; user scopes cannot be shared scopes.
  const scopes = await declaredPortableScopes(db);
  const lineage = await readLineage(db, scopes);
  const digestHash = digestSchemaHash(schema.hash);
  const entries: Omit<ScopeEntry, 'page_token'>[] = [];
  for (const id of scopes) {
    const rows = await scopeRows(db, id);
    const l = lineage.get(id);
    entries.push({
      id,
      registry_generation: registryGeneration,
      membership_generation: String(l?.membershipGeneration ?? 1),
      retention_generation: String(l?.retentionGeneration ?? 1),
      cardinality: rows.length,
      checksum: checksumObject(digestOf(rows, schema.tables, digestHash, id)),
      continuation: '',
    });
  }
  const unsigned = {
    export_id: randomUUID(),
    schema_version: schema.version,
    schema_hash: schema.hash,
    stream_generation: p.stream_generation,
    snapshot_boundary: positionJson(boundaryOf(p.m)),
    page_limit: pageLimit,
    portable_scopes: entries.map((e) => ({ ...e, page_token: '' })),
  };
  const manifest: SeedManifest = { ...unsigned, export_manifest_hash: exportManifestHash(unsigned) };
  const state: ExportState = { keyId: key.keyId, nonce: randomBytes(32).toString('base64url'), pageLimit, manifest };
  // Receipts bind the manifest hash, so they are issued once it is known; the hash itself covers neither receipts nor tokens.
  const issuedAt = serverTime();
  for (const entry of manifest.portable_scopes) {
    entry.page_token = signPageToken(key, pagePayload(state, entry, 0));
    entry.continuation = issueReceipt(receiptKey, manifest, entry, issuedAt);
  }
  await saveState(db, key, state);
  // The stored copy is what later calls return; hand out the same member order now, so every call gives identical bytes.
  return JSON.parse(canonicalJson(manifest)) as SeedManifest;
}
