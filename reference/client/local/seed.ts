/**
 * Portable seed files on the client side. A seed is a client database built
 * by the exporter from one snapshot: application rows with their server
 * versions, provenance per seeded scope and one continuation receipt per
 * scope, but no client identity, no queue and no cursor. The same check
 * serves the exporter (before publishing) and the client (before adopting a
 * copy), so both accept exactly the same files.
 */
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { canonicalJson, digestRow, fromHex, ScopeDigestBuilder, toHex } from '../../../harness/codec/index.ts';
import type { ConnectResponse } from '../../../harness/wire/generated.ts';
import { deleteRow } from '../apply/rows.ts';
import { clearScopeRows, localScopeDigest } from '../apply/scopes.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { fault } from '../faults.ts';
import { readLocalRow } from '../apply/rows.ts';
import { type LocalSchema, localSchema, quoteIdent as q, verifyManifest } from './manifest.ts';

/** The marker the exporter writes together with the seeded content; a file without it was never completed. */
export const SNAPSHOT_COMPLETE = 'seed_snapshot_complete';

export interface SeedReceipt {
  scopeId: string;
  receipt: string;
  schemaVersion: number;
  schemaHash: string;
  cardinality: number;
  checksum: string;
}

export interface SeedSummary {
  exportId: string;
  schema: LocalSchema;
  receipts: SeedReceipt[];
  /** Scope → the scope digest recomputed from the file's rows. */
  digests: Record<string, string>;
}

function refuse(check: string, message: string): ClientError {
  return new ClientError('opening', 'seed_invalid', `seed artifact refused (${check}): ${message}`, false, 'none', { check });
}

function count(db: Database.Database, sql: string, ...params: unknown[]): number {
  return (db.prepare(sql).get(...params) as { n: number }).n;
}

export function readSeedReceipts(db: Database.Database): SeedReceipt[] {
  const rows = db.prepare('SELECT * FROM _synchro_seed_receipts ORDER BY scope_id').all() as Record<string, unknown>[];
  return rows.map((r) => ({
    scopeId: String(r.scope_id),
    receipt: String(r.receipt),
    schemaVersion: Number(r.schema_version),
    schemaHash: String(r.schema_hash),
    cardinality: Number(r.cardinality),
    checksum: String(r.checksum),
  }));
}

/**
 * Checks a seed database (normally opened read-only): SQLite integrity, the
 * completion marker, the schema metadata, that it binds no client and holds
 * no queue, cursor, rebuild or migration state, that every application row is
 * justified by provenance and a version, and that each seeded scope's rows
 * recompute to the digests and counts its receipt metadata states.
 */
export function verifySeedDatabase(db: Database.Database): SeedSummary {
  let integrity: unknown[];
  try {
    integrity = db.pragma('integrity_check') as unknown[];
  } catch (e) {
    throw refuse('sqlite integrity', (e as Error).message);
  }
  if (canonicalJson(integrity) !== canonicalJson([{ integrity_check: 'ok' }])) throw refuse('sqlite integrity', JSON.stringify(integrity));
  const meta = (key: string) => (db.prepare('SELECT value FROM _synchro_meta WHERE key = ?').get(key) as { value: string | null } | undefined)?.value ?? undefined;
  const exportId = meta(SNAPSHOT_COMPLETE);
  if (exportId === undefined || exportId === '') throw refuse('snapshot complete', 'the file does not carry the snapshot-complete marker');
  const version = Number(meta('schema_version') ?? 0);
  const hash = meta('schema_hash') ?? '';
  const archived = db.prepare('SELECT manifest_json FROM _synchro_schema_archives WHERE schema_version = ? AND schema_hash = ?').get(version, hash) as { manifest_json: string } | undefined;
  if (archived === undefined) throw refuse('schema metadata', `schema ${version}/${hash} has no archived manifest`);
  let schema: LocalSchema;
  try {
    schema = localSchema(verifyManifest(JSON.parse(archived.manifest_json)));
  } catch (e) {
    throw refuse('schema metadata', (e as Error).message);
  }
  if (schema.version !== version || schema.hash !== hash) throw refuse('schema metadata', 'the archived manifest is not the one the metadata names');
  for (const key of ['client_id', 'client_generation', 'atomic_group_id', 'needs_connect']) {
    if (meta(key) !== undefined) throw refuse('queue and provenance', `a seed binds no client, but it stores ${key}`);
  }
  if (meta('sync_lock') !== '0') throw refuse('queue and provenance', 'capture is left suppressed');
  const empty: [string, string][] = [
    ['_synchro_pending_changes', 'a pending mutation'],
    ['_synchro_mutation_values', 'a mutation value'],
    ['_synchro_push_batches', 'a sealed batch'],
    ['_synchro_rejected_mutations', 'a rejected mutation'],
    ['_synchro_scopes', 'a scope cursor'],
    ['_synchro_rebuild_attempts', 'a rebuild attempt'],
    ['_synchro_rebuild_page_receipts', 'a rebuild page'],
    ['_synchro_backoff', 'a backoff record'],
  ];
  for (const [table, what] of empty) if (count(db, `SELECT count(*) AS n FROM ${table}`) !== 0) throw refuse('queue and provenance', `the file holds ${what}`);
  // The journal of the schema install that wrote the file stays, completed; an unfinished one would be migration state of its own.
  if (count(db, "SELECT count(*) AS n FROM _synchro_migration_journal WHERE phase IS NOT 'completed'") !== 0) throw refuse('queue and provenance', 'the file holds an unfinished migration journal');

  const receipts = readSeedReceipts(db);
  // A seed of no portable scope (the server declared none) carries the schema only: no receipt, and no row to justify.
  if (receipts.length === 0 && count(db, 'SELECT count(*) AS n FROM _synchro_scope_rows') !== 0) throw refuse('receipt', 'the file stores no continuation receipt');
  const seeded = new Set(receipts.map((r) => r.scopeId));
  if (count(db, 'SELECT count(*) AS n FROM _synchro_scope_rows WHERE scope_id NOT IN (SELECT scope_id FROM _synchro_seed_receipts)') !== 0) {
    throw refuse('queue and provenance', 'provenance names a scope without a receipt');
  }
  // Every version belongs to a row some seeded scope justifies, and every application row has its version.
  if (count(db, 'SELECT count(*) AS n FROM _synchro_row_versions v WHERE NOT EXISTS (SELECT 1 FROM _synchro_scope_rows s WHERE s.table_id = v.table_id AND s.record_id = v.record_id)') !== 0) {
    throw refuse('queue and provenance', 'a row version has no provenance');
  }
  const ctx = { db, schema } as Ctx;
  for (const table of schema.tables) {
    const ids = (db.prepare(`SELECT CAST(${q(table.pk.name)} AS TEXT) AS id FROM ${q(table.name)}`).all() as { id: string }[]).map((r) => r.id);
    const versioned = db.prepare('SELECT 1 FROM _synchro_row_versions WHERE table_id = ? AND record_id = ?');
    for (const id of ids) if (versioned.get(table.tableId, id) === undefined) throw refuse('queue and provenance', `row ${table.tableId} ${id} has no server version`);
  }
  const digests: Record<string, string> = {};
  for (const receipt of receipts) {
    if (receipt.schemaVersion !== schema.version || receipt.schemaHash !== schema.hash) throw refuse('receipt', `the receipt metadata of ${receipt.scopeId} names another schema`);
    const rows = db
      .prepare(
        'SELECT s.table_id, s.record_id, v.server_version, v.row_identity, v.row_digest FROM _synchro_scope_rows s LEFT JOIN _synchro_row_versions v ON v.table_id = s.table_id AND v.record_id = s.record_id WHERE s.scope_id = ?',
      )
      .all(receipt.scopeId) as { table_id: string; record_id: string; server_version: string | null; row_identity: Buffer | null; row_digest: Buffer | null }[];
    const builder = new ScopeDigestBuilder(fromHex(schema.hash), receipt.scopeId);
    for (const r of rows) {
      const table = schema.byId.get(r.table_id);
      if (table === undefined) throw refuse('queue and provenance', `provenance names unknown table ${r.table_id}`);
      const row = readLocalRow(ctx, table, r.record_id);
      if (row === undefined || r.server_version === null || r.row_identity === null || r.row_digest === null) {
        throw refuse('queue and provenance', `row ${r.table_id} ${r.record_id} of ${receipt.scopeId} is missing or has no version`);
      }
      let computed: { identity: Uint8Array; digest: Uint8Array };
      try {
        computed = digestRow({ schemaHash: schema.hash, table: table.shape, row, serverVersion: r.server_version });
      } catch (e) {
        throw refuse('row digest', `row ${r.table_id} ${r.record_id}: ${(e as Error).message}`);
      }
      if (!Buffer.from(computed.identity).equals(r.row_identity) || !Buffer.from(computed.digest).equals(r.row_digest)) {
        throw refuse('row digest', `row ${r.table_id} ${r.record_id} does not hash to its stored digest`);
      }
      builder.add(computed.identity, computed.digest);
    }
    const digest = toHex(builder.finish());
    if (rows.length !== receipt.cardinality || digest !== receipt.checksum) throw refuse('scope digest', `scope ${receipt.scopeId} holds ${rows.length} rows with digest ${digest}, not what its receipt states`);
    digests[receipt.scopeId] = digest;
  }
  if (seeded.size !== receipts.length) throw refuse('receipt', 'a scope has two receipts');
  return { exportId, schema, receipts, digests };
}

/** Opens `path` read-only, verifies it as a seed and closes it again. */
export function verifySeedFile(path: string): SeedSummary {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (e) {
    throw refuse('sqlite integrity', (e as Error).message);
  }
  try {
    return verifySeedDatabase(db);
  } catch (e) {
    if (e instanceof ClientError) throw e;
    // A damaged file fails inside SQLite ("malformed"), not in one of the checks above.
    throw refuse('sqlite integrity', (e as Error).message);
  } finally {
    db.close();
  }
}

/**
 * Makes `path` a verified copy of the seed at `artifact`. The copy is checked
 * under a temporary name and renamed into place only when it passes, so a
 * bad seed leaves no client database behind.
 */
export function installSeedCopy(artifact: string, path: string): void {
  const partial = `${path}.seed-partial`;
  rmSync(partial, { force: true });
  try {
    copyFileSync(artifact, partial);
    verifySeedFile(partial);
    for (const side of ['-wal', '-shm', '-journal']) if (existsSync(`${partial}${side}`)) throw refuse('sidecar', `the copy needs ${side}`);
    renameSync(partial, path);
  } catch (e) {
    rmSync(partial, { force: true });
    if (e instanceof ClientError) throw e;
    throw refuse('copy', (e as Error).message);
  }
}

/** `seed_receipts` for the first connect: every stored receipt, by scope. */
export function seedReceiptsMember(ctx: Ctx): Record<string, string> | undefined {
  const receipts = readSeedReceipts(ctx.db);
  if (receipts.length === 0) return undefined;
  return Object.fromEntries(receipts.map((r) => [r.scopeId, r.receipt]));
}

/**
 * Settles the seeded scopes once a connect answer is applied (called inside
 * the same transaction). A scope the server answered with a cursor starts
 * from it, keeping the seeded rows and the receipt's verified digest; one
 * answered with a null cursor is already marked for rebuild by the add; one
 * the client is not assigned loses its provenance and every seeded row
 * nothing else justifies (rows with pending intent stay). The receipts are
 * then gone: a seed converts once.
 */
export function settleSeed(ctx: Ctx, response: ConnectResponse): void {
  const receipts = readSeedReceipts(ctx.db);
  if (receipts.length === 0) return;
  const cursors = new Map<string, string | null>();
  for (const a of response.scopes.add) cursors.set(a.id, a.cursor);
  for (const [s, c] of Object.entries(response.scope_cursor_updates)) cursors.set(s, c ?? null);
  for (const r of receipts) {
    const held = ctx.db.prepare('SELECT cursor FROM _synchro_scopes WHERE scope_id = ?').get(r.scopeId) as { cursor: string | null } | undefined;
    if (held === undefined) {
      if (fault('seed007-seed-cleanup-drops-edited-rows')) for (const x of ctx.db.prepare('SELECT table_id, record_id FROM _synchro_scope_rows WHERE scope_id = ?').all(r.scopeId) as { table_id: string; record_id: string }[]) { const t = ctx.schema?.byId.get(x.table_id); if (t !== undefined) deleteRow(ctx, t, x.record_id); } // fault: client:seed007-seed-cleanup-drops-edited-rows
      if (!fault('seed-keeps-unassigned-scope')) clearScopeRows(ctx, r.scopeId); // fault: client:seed-keeps-unassigned-scope
    } else if (held.cursor !== null && cursors.get(r.scopeId) === held.cursor) {
      ctx.db.prepare('UPDATE _synchro_scopes SET checksum = ?, local_checksum = ? WHERE scope_id = ?').run(r.checksum, localScopeDigest(ctx, r.scopeId), r.scopeId);
    }
  }
  if (fault('seed007-receipt-kept-as-cursor')) for (const r of receipts) ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ?, rebuild_required = 0 WHERE scope_id = ?').run(r.receipt, r.scopeId); // fault: client:seed007-receipt-kept-as-cursor
  ctx.db.prepare('DELETE FROM _synchro_seed_receipts').run();
}
