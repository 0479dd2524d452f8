/**
 * The shape of a seed export manifest and of its portable scope entries, and
 * the members by which every token of an export names one of its scopes.
 * Kept apart from manifest.ts, which builds the manifest, so that the export
 * state, page tokens and receipts it issues can name these shapes without
 * importing it.
 */
import type { ChecksumObject } from '../../../harness/codec/index.ts';

export interface ScopeEntry {
  id: string;
  registry_generation: string;
  membership_generation: string;
  retention_generation: string;
  cardinality: number;
  checksum: ChecksumObject;
  /** The scope's continuation receipt (`receipt.ts`): what an installed seed presents at its first connect. */
  continuation: string;
  page_token: string;
}

export interface SeedManifest {
  export_id: string;
  export_manifest_hash: string;
  schema_version: number;
  schema_hash: string;
  stream_generation: string;
  snapshot_boundary: Record<string, unknown>;
  page_limit: number;
  portable_scopes: ScopeEntry[];
}

/**
 * The members by which every token of an export names one of its scopes:
 * page tokens and continuation receipts both carry exactly these, and a
 * verifier compares them with the manifest.
 */
export function scopeBinding(m: Pick<SeedManifest, 'export_id' | 'export_manifest_hash' | 'schema_hash' | 'stream_generation' | 'snapshot_boundary'>, entry: Pick<ScopeEntry, 'id' | 'registry_generation' | 'membership_generation' | 'retention_generation'>) {
  return {
    export_id: m.export_id,
    export_manifest_hash: m.export_manifest_hash,
    schema_hash: m.schema_hash,
    scope_id: entry.id,
    registry_generation: entry.registry_generation,
    membership_generation: entry.membership_generation,
    retention_generation: entry.retention_generation,
    stream_generation: m.stream_generation,
    snapshot_boundary: m.snapshot_boundary,
  };
}
