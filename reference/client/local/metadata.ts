/**
 * Synchro's own bookkeeping tables. They live beside the application tables
 * in the same SQLite file so that an application write, its capture record
 * and every protocol state change can commit in one local transaction.
 * Applications never write them (the statement guard refuses any statement
 * naming the `_synchro_` prefix).
 */
import type Database from 'better-sqlite3';
import { fault } from '../faults.ts';

const DDL = `
CREATE TABLE IF NOT EXISTS _synchro_meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
INSERT OR IGNORE INTO _synchro_meta(key, value) VALUES ('sync_lock', '0'), ('schema_version', '0'), ('schema_hash', ''), ('scope_set_version', '0');
CREATE TABLE IF NOT EXISTS _synchro_client_state (id INTEGER PRIMARY KEY CHECK (id = 1), lifecycle_state TEXT NOT NULL, error_json TEXT);
INSERT OR IGNORE INTO _synchro_client_state(id, lifecycle_state) VALUES (1, 'uninitialized');
CREATE TABLE IF NOT EXISTS _synchro_status_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, from_state TEXT NOT NULL, to_state TEXT NOT NULL, at_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS _synchro_schema_archives (schema_version INTEGER NOT NULL, schema_hash TEXT NOT NULL, manifest_json TEXT NOT NULL, PRIMARY KEY (schema_version, schema_hash)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _synchro_pending_changes (
  local_order INTEGER PRIMARY KEY AUTOINCREMENT,
  mutation_id TEXT NOT NULL UNIQUE,
  queue_order INTEGER,
  table_id TEXT NOT NULL,
  table_name TEXT NOT NULL,
  record_id TEXT NOT NULL,
  pk_field_id TEXT NOT NULL,
  pk_logical_type TEXT NOT NULL,
  operation TEXT NOT NULL CHECK (operation IN ('insert', 'update', 'delete')),
  authored_schema_version INTEGER NOT NULL,
  authored_schema_hash TEXT NOT NULL,
  base_version TEXT,
  client_version TEXT NOT NULL,
  lifecycle_state TEXT NOT NULL,
  source_kind TEXT NOT NULL,
  depends_on_mutation_id TEXT,
  normalized_mutation_id TEXT,
  sealed_batch_id TEXT,
  sealed_ordinal INTEGER,
  accepted_outcome_json TEXT,
  atomic_group_id TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS _synchro_pending_by_row ON _synchro_pending_changes(table_id, record_id, lifecycle_state);
CREATE TABLE IF NOT EXISTS _synchro_mutation_values (mutation_id TEXT NOT NULL, field_id TEXT NOT NULL, value, PRIMARY KEY (mutation_id, field_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _synchro_push_batches (seq INTEGER PRIMARY KEY AUTOINCREMENT, batch_id TEXT NOT NULL UNIQUE, request_bytes BLOB NOT NULL, atomic INTEGER NOT NULL, state TEXT NOT NULL, response_json TEXT, created_at_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS _synchro_rejected_mutations (mutation_id TEXT PRIMARY KEY, table_name TEXT NOT NULL, record_id TEXT NOT NULL, status TEXT NOT NULL, code TEXT NOT NULL, message TEXT NOT NULL, server_row_json TEXT, server_version TEXT, rejection_json TEXT NOT NULL, created_at_ms INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _synchro_row_versions (table_id TEXT NOT NULL, record_id TEXT NOT NULL, server_version TEXT NOT NULL, row_identity BLOB, row_digest BLOB, PRIMARY KEY (table_id, record_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _synchro_scopes (scope_id TEXT PRIMARY KEY, cursor TEXT, checksum TEXT, local_checksum TEXT, rebuild_required INTEGER NOT NULL DEFAULT 1, generation INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _synchro_scope_rows (scope_id TEXT NOT NULL, table_id TEXT NOT NULL, record_id TEXT NOT NULL, generation INTEGER NOT NULL, PRIMARY KEY (scope_id, table_id, record_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS _synchro_scope_rows_by_row ON _synchro_scope_rows(table_id, record_id);
CREATE TABLE IF NOT EXISTS _synchro_rebuild_attempts (scope_id TEXT PRIMARY KEY, rebuild_id TEXT NOT NULL, client_generation INTEGER NOT NULL, schema_version INTEGER NOT NULL, schema_hash TEXT NOT NULL, generation INTEGER NOT NULL, cursor TEXT, page_limit INTEGER NOT NULL, pages_applied INTEGER NOT NULL DEFAULT 0, final_cursor TEXT, final_checksum TEXT) WITHOUT ROWID;
-- A page receipt holds the request and response JSON as the exact octets exchanged (BLOB), not as parsed and re-serialized text.
CREATE TABLE IF NOT EXISTS _synchro_rebuild_page_receipts (rebuild_id TEXT NOT NULL, page INTEGER NOT NULL, request_json BLOB NOT NULL, response_json BLOB NOT NULL, is_final INTEGER NOT NULL, PRIMARY KEY (rebuild_id, page)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _synchro_backoff (id INTEGER PRIMARY KEY CHECK (id = 1), resume_state TEXT NOT NULL, work_identity TEXT NOT NULL, retry_classification TEXT NOT NULL, attempt_count INTEGER NOT NULL, next_retry_at_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS _synchro_seed_receipts (scope_id TEXT PRIMARY KEY, receipt TEXT NOT NULL, schema_version INTEGER NOT NULL, schema_hash TEXT NOT NULL, cardinality INTEGER NOT NULL, checksum TEXT NOT NULL) WITHOUT ROWID;
-- The journal's members carry no constraints: recovery checks each one and turns a defect into an explicit schema error.
CREATE TABLE IF NOT EXISTS _synchro_migration_journal (id INTEGER PRIMARY KEY CHECK (id = 1), source_version INTEGER, source_hash TEXT, target_version INTEGER, target_hash TEXT, target_manifest_json TEXT, action TEXT, affected_scopes_json TEXT, plan_format TEXT, plan_json TEXT, plan_hash TEXT, cursor_updates_json TEXT, phase TEXT, phase_history_json TEXT);
`;

export function installMetadata(db: Database.Database): void {
  db.exec(DDL);
}

export function getMeta(db: Database.Database, key: string): string | undefined {
  const row = db.prepare('SELECT value FROM _synchro_meta WHERE key = ?').get(key) as { value: string | null } | undefined;
  return row?.value ?? undefined;
}

export function setMeta(db: Database.Database, key: string, value: string | number | null): void {
  if (value === null) db.prepare('DELETE FROM _synchro_meta WHERE key = ?').run(key);
  else db.prepare('INSERT INTO _synchro_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, String(value));
}

/**
 * Runs `fn` in one IMMEDIATE transaction with capture suppressed, so rows the
 * server sent never come back as local mutations. The lock is set and reset
 * inside the transaction, so a rollback or crash restores '0' as well.
 */
export function serverApply<T>(db: Database.Database, fn: () => T): T {
  const run = db.transaction(() => {
    setMeta(db, 'sync_lock', fault('no-apply-suppression') ? '0' : '1'); // fault: client:no-apply-suppression
    try {
      return fn();
    } finally {
      setMeta(db, 'sync_lock', '0');
    }
  });
  return run.immediate();
}
