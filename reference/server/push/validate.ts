/**
 * Structural validation of a push request: everything that makes it a 400
 * before any ledger, fingerprint, policy or row work. The JSON Schema covers
 * shapes, types and ranges; this adds what a schema cannot say.
 */
import { canonicalJson, normalizedMutationOctets, readKeyValue } from '../../../harness/codec/index.ts';
import type { PushRequest } from '../../../harness/wire/index.ts';
import { validate } from '../../../harness/wire/index.ts';
import { invalidRequest, SyncError } from '../core/errors.ts';
import { fault } from '../core/faults.ts';
import type { TableDef } from '../core/tables.ts';

export type Mutation = PushRequest['mutations'][number];

const LIMIT = { canonical: 1_048_576, normalized: 65_536, columns: 256 } as const;

function limitError(field: string, maximum: number): SyncError {
  return new SyncError('invalid_request', `${field} exceeds its limit`, { field, minimum: 1, maximum });
}

export function validatePushShape(value: unknown): PushRequest {
  if (fault('repair-base-version')) for (const m of ((value as { mutations?: unknown }).mutations as Record<string, unknown>[] | undefined) ?? []) if (m?.base_version !== undefined) m.base_version = String(m.base_version).replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, '').slice(0, 64) || 'v'; // fault: server:repair-base-version
  if (fault('push-op-aliases')) for (const m of ((value as { mutations?: unknown }).mutations as Record<string, unknown>[] | undefined) ?? []) if (typeof m?.op === 'string') m.op = m.op.toLowerCase() === 'create' ? 'insert' : m.op.toLowerCase(); // fault: server:push-op-aliases
  if (fault('lenient-client-version')) for (const m of ((value as { mutations?: unknown }).mutations as Record<string, unknown>[] | undefined) ?? []) if (typeof m?.client_version === 'string' && !Number.isNaN(Date.parse(m.client_version))) m.client_version = new Date(m.client_version).toISOString().replace('Z', '000Z'); // fault: server:lenient-client-version
  const result = validate('push-request', value);
  if (!result.ok) throw invalidRequest();
  const request = result.value;
  const ids = new Set<string>();
  for (const m of request.mutations) {
    if (ids.has(m.mutation_id)) throw invalidRequest('mutation_id repeats within the request');
    ids.add(m.mutation_id);
    if ('columns' in m && Object.keys(m.columns).length > LIMIT.columns) throw limitError('columns', LIMIT.columns);
    if (normalizedMutationOctets(m) > LIMIT.normalized) throw limitError('mutation', LIMIT.normalized);
  }
  if (Buffer.byteLength(canonicalJson(request), 'utf8') > LIMIT.canonical) throw limitError('body', LIMIT.canonical);
  if (request.atomic === true) {
    const keys = new Set<string>();
    for (const m of request.mutations) {
      const key = canonicalJson([m.table, m.pk]);
      if (keys.has(key) && !fault('atomic-repeated-row-allowed')) throw invalidRequest('an atomic request addresses one row at most once'); // fault: server:atomic-repeated-row-allowed
      keys.add(key);
    }
  }
  return request;
}

/** The one key member must be the current table's key field with a value of its type. */
export function checkKeys(request: PushRequest, tables: Map<string, TableDef>): void {
  for (const m of request.mutations) {
    const table = tables.get(m.table);
    if (table === undefined) continue; // classified later (table_not_synced / schema_incompatible)
    const entry = Object.entries(m.pk)[0];
    if (entry === undefined || entry[0] !== table.pkFieldId) throw invalidRequest('pk does not name the key field');
    try {
      readKeyValue(table.pkType, entry[1]);
    } catch {
      throw invalidRequest('pk value does not match the key type');
    }
  }
}

/** The key as the fence stores it: PostgreSQL's text form of the key value. */
export function pkText(m: Mutation): string {
  const v = Object.values(m.pk)[0];
  return String(v);
}
