/**
 * Seed page tokens (`sp1.`): which page of which scope of which export, in
 * which transaction. The payload has exactly the members below; numbers that
 * may exceed the JSON-safe range travel as unsigned decimal strings. A token
 * is accepted only when its MAC verifies under a seed-page key and every
 * member equals what the running export would issue for that page.
 */
import type { ClientBase } from 'pg';
import { canonicalJson } from '../../../harness/codec/index.ts';
import { fault } from '../core/faults.ts';
import { type SeedKey, seedKey } from '../core/seed-keys.ts';
import { macMatches, open, seal } from '../core/signed-token.ts';
import { badToken } from './errors.ts';
import type { ExportState } from './export-session.ts';
import { type ScopeEntry, scopeBinding } from './manifest-shape.ts';

const PREFIX = 'sp1';
const DOMAIN = 'synchro:v3:seed-page:v1';

const MEMBERS = [
  'export_id',
  'export_manifest_hash',
  'key_id',
  'kind',
  'membership_generation',
  'next_row_ordinal',
  'page_limit',
  'registry_generation',
  'retention_generation',
  'schema_hash',
  'scope_id',
  'snapshot_boundary',
  'stream_generation',
  'transaction_nonce',
  'version',
].join(',');

/** The payload the running export issues for the page of `entry` starting at `ordinal`. */
export function pagePayload(state: ExportState, entry: ScopeEntry, ordinal: number): Record<string, unknown> {
  const m = state.manifest;
  return {
    kind: 'portable_seed_page',
    version: 1,
    key_id: state.keyId,
    transaction_nonce: state.nonce,
    ...scopeBinding(m, entry),
    next_row_ordinal: String(ordinal),
    page_limit: String(m.page_limit),
  };
}

export function signPageToken(key: SeedKey, payload: Record<string, unknown>): string {
  return seal(PREFIX, DOMAIN, key, payload);
}

/**
 * Checks `token` against the page the export would issue for `expected`;
 * throws the one token error on any difference, so no answer tells which
 * member was wrong.
 */
export async function verifyPageToken(db: ClientBase, token: unknown, expected: Record<string, unknown>): Promise<void> {
  const opened = open(PREFIX, token);
  if (opened === undefined || Object.keys(opened.value).sort().join(',') !== MEMBERS) throw badToken();
  const keyId = opened.value.key_id;
  const key = typeof keyId === 'string' && keyId !== '' ? await seedKey(db, keyId) : undefined;
  if (key === undefined || !macMatches(DOMAIN, key, opened)) throw badToken();
  if (fault('seed005-token-bindings-unchecked')) return; // fault: server:seed005-token-bindings-unchecked
  if (canonicalJson(opened.value) !== canonicalJson(expected)) throw badToken();
}
