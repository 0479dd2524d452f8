/**
 * Seed continuation receipts (`sc1.`): the token form and its check. A
 * portable seed hands one per scope to whoever installs it (issued by
 * seed/receipt.ts); the receipt names the export, the schema, the scope's
 * generations, the snapshot boundary and what the scope held there
 * (cardinality and scope digest). It binds no user or client: only an
 * authenticated connect may turn it into that client's cursor at the seed
 * boundary, after checking every member against the server as it is then.
 * Its key is its own (purpose `seed_continuation`), never a page-token or
 * cursor key.
 */
import type { ClientBase } from 'pg';
import type { ChecksumObject } from '../../../harness/codec/index.ts';
import { type SeedKey, seedKey } from './seed-keys.ts';
import { macMatches, open, seal } from './signed-token.ts';

const PREFIX = 'sc1';
const DOMAIN = 'synchro:v3:seed-continuation:v1';

export interface ReceiptPayload {
  kind: 'portable_seed_continuation';
  version: 1;
  key_id: string;
  export_id: string;
  export_manifest_hash: string;
  schema_hash: string;
  scope_id: string;
  registry_generation: string;
  membership_generation: string;
  retention_generation: string;
  stream_generation: string;
  snapshot_boundary: Record<string, unknown>;
  cardinality: string;
  checksum: ChecksumObject;
  issued_at: string;
}

const MEMBERS = [
  'cardinality',
  'checksum',
  'export_id',
  'export_manifest_hash',
  'issued_at',
  'key_id',
  'kind',
  'membership_generation',
  'registry_generation',
  'retention_generation',
  'schema_hash',
  'scope_id',
  'snapshot_boundary',
  'stream_generation',
  'version',
].join(',');

/** The receipt text of `payload`, under the continuation key it names. */
export function sealReceipt(key: SeedKey, payload: ReceiptPayload): string {
  return seal(PREFIX, DOMAIN, key, payload as unknown as Record<string, unknown>);
}

/**
 * The payload of an authentic receipt with exactly the receipt members, or
 * undefined: a wrong form, an unknown key, a MAC that does not verify and a
 * member set that differs all look the same to the caller.
 */
export async function openReceipt(db: ClientBase, receipt: unknown): Promise<ReceiptPayload | undefined> {
  const opened = open(PREFIX, receipt);
  if (opened === undefined || Object.keys(opened.value).sort().join(',') !== MEMBERS) return undefined;
  const v = opened.value;
  if (v.kind !== 'portable_seed_continuation' || v.version !== 1 || typeof v.key_id !== 'string' || v.key_id === '') return undefined;
  const key = await seedKey(db, v.key_id, 'seed_continuation');
  if (key === undefined || !macMatches(DOMAIN, key, opened)) return undefined;
  return v as unknown as ReceiptPayload;
}
