/**
 * One page of a portable scope in the running export: the records at
 * ordinals [n, n + limit) in row-identity order, read from the same snapshot
 * as the manifest, each with its table ID, typed key, complete row, version
 * and row digest, and the token of the next page (null on the last one).
 */
import type { ClientBase } from 'pg';
import { scopeRows } from '../core/checksums.ts';
import { integrityFailure } from '../core/errors.ts';
import { scopeRowsOnOwnConnection } from '../core/fault-behaviour.ts';
import { fault } from '../core/faults.ts';
import { seedKey } from '../core/seed-keys.ts';
import { wireChange } from '../core/wire-change.ts';
import { badToken, SeedRequestError } from './errors.ts';
import { loadState, requireExportTransaction } from './export-session.ts';
import { digestSchemaHash, MAX_PAGE_LIMIT, schemaAtSnapshot } from './manifest.ts';
import { pagePayload, signPageToken, verifyPageToken } from './page-token.ts';

export interface SeedRecord {
  table: string;
  pk: Record<string, unknown>;
  row_checksum: unknown;
  server_version: string;
  row: Record<string, unknown>;
}

export interface SeedPage {
  scope: string;
  records: SeedRecord[];
  page_token: string | null;
  has_more: boolean;
}

export async function seedPage(
  db: ClientBase,
  scopeId: string,
  pageToken: string,
  continuationReceipt: string | null,
  expectedOrdinal: number,
  limit: number = MAX_PAGE_LIMIT,
): Promise<SeedPage> {
  await requireExportTransaction(db);
  const state = await loadState(db);
  if (state === undefined) throw new SeedRequestError('no seed export was started in this transaction');
  if (limit !== state.pageLimit) throw new SeedRequestError('the page limit is fixed for the whole export');
  const entry = state.manifest.portable_scopes.find((s) => s.id === scopeId);
  if (entry === undefined) throw badToken();
  // A receipt, when the caller presents one, must be the one this export issued for this scope.
  if (continuationReceipt !== null && continuationReceipt !== entry.continuation) throw badToken();
  if (!Number.isSafeInteger(expectedOrdinal) || expectedOrdinal < 0) throw badToken();
  await verifyPageToken(db, pageToken, pagePayload(state, entry, expectedOrdinal));

  const { tables } = await schemaAtSnapshot(db);
  // pk_bytes is the complete row identity (length prefixes included); ordering by it alone is the canonical order,
  // which differs from table-ID text order when table IDs differ in length (t9 before t10).
  const rows = (await scopeRows(db, scopeId)).sort((a, b) => Buffer.compare(a.pkBytes, b.pkBytes));
  if (fault('seed004-page-reads-own-connection')) rows.splice(0, rows.length, ...(await scopeRowsOnOwnConnection(db, scopeId))); // fault: server:seed004-page-reads-own-connection
  // Same snapshot as the manifest, so the count cannot differ unless the state is broken.
  if (rows.length !== entry.cardinality) throw integrityFailure();
  const digestHash = digestSchemaHash(state.manifest.schema_hash);
  const records = rows.slice(expectedOrdinal, expectedOrdinal + limit).map((r) => {
    const change = wireChange({ scope: scopeId, tableId: r.tableId, pkText: r.pkText, op: 'upsert', serverVersion: r.serverVersion, row: r.row }, tables, digestHash);
    return { table: String(change.table), pk: change.pk as Record<string, unknown>, row_checksum: change.row_checksum, server_version: r.serverVersion, row: r.row };
  });
  const next = expectedOrdinal + limit;
  const hasMore = next < entry.cardinality;
  let token: string | null = null;
  if (hasMore) {
    const key = await seedKey(db, state.keyId);
    if (key === undefined) throw badToken();
    token = signPageToken(key, pagePayload(state, entry, next));
  }
  return { scope: scopeId, records, page_token: token, has_more: hasMore };
}
