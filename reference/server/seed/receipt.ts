/**
 * Issuing the continuation receipt of one portable scope of an export: its
 * binding members, cardinality and scope digest, under the continuation key.
 * The token form and how connect checks it are core/seed-receipt.ts.
 */

import type { SeedKey } from '../core/seed-keys.ts';
import { type ReceiptPayload, sealReceipt } from '../core/seed-receipt.ts';
import { type ScopeEntry, type SeedManifest, scopeBinding } from './manifest-shape.ts';

/** The receipt of one scope of a finished manifest (its hash is part of what the receipt binds). */
export function issueReceipt(key: SeedKey, manifest: Omit<SeedManifest, 'portable_scopes'>, entry: ScopeEntry, issuedAt: string): string {
  const payload: ReceiptPayload = {
    kind: 'portable_seed_continuation',
    version: 1,
    key_id: key.keyId,
    ...scopeBinding(manifest, entry),
    cardinality: String(entry.cardinality),
    checksum: entry.checksum,
    issued_at: issuedAt,
  };
  return sealReceipt(key, payload);
}
