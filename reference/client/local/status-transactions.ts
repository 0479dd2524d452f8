/**
 * Which local transaction last changed each mutation record's status, so an
 * inspector can tell that several records changed together (an atomic group
 * blocked as a whole must be blocked in one commit, never member by member).
 *
 * SQLite has no transaction identity of its own. The client's connection
 * therefore wraps `db.transaction`: the outermost transaction gets a fresh
 * identity, visible to SQL through the connection-local function
 * `synchro_local_txn()`, and connection-local (TEMP) triggers store it beside
 * the record whenever its status is set. A status written outside any
 * `db.transaction` (a single autocommit statement) gets an identity of its own
 * per row: never claimed to share a transaction it may not share.
 * The stamps live in their own table, outside the snapshot digest: they are
 * evidence for inspection, not sync state.
 */
import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';

const DDL = `
CREATE TABLE IF NOT EXISTS _synchro_status_changes (mutation_id TEXT PRIMARY KEY, local_txn TEXT NOT NULL) WITHOUT ROWID;
CREATE TEMP TRIGGER IF NOT EXISTS _synchro_status_stamp_insert AFTER INSERT ON _synchro_pending_changes BEGIN
  INSERT OR REPLACE INTO _synchro_status_changes(mutation_id, local_txn) VALUES (NEW.mutation_id, COALESCE(synchro_local_txn(), lower(hex(randomblob(16)))));
END;
CREATE TEMP TRIGGER IF NOT EXISTS _synchro_status_stamp_update AFTER UPDATE OF lifecycle_state ON _synchro_pending_changes WHEN OLD.lifecycle_state IS NOT NEW.lifecycle_state BEGIN
  INSERT OR REPLACE INTO _synchro_status_changes(mutation_id, local_txn) VALUES (NEW.mutation_id, COALESCE(synchro_local_txn(), lower(hex(randomblob(16)))));
END;
CREATE TEMP TRIGGER IF NOT EXISTS _synchro_status_stamp_delete AFTER DELETE ON _synchro_pending_changes BEGIN
  DELETE FROM _synchro_status_changes WHERE mutation_id = OLD.mutation_id;
END;
`;

/** Installs the stamping on a freshly opened connection (after the metadata tables exist). */
export function stampStatusTransactions(db: Database.Database): void {
  let current: string | undefined;
  const begin = db.transaction.bind(db);
  // Every transaction the client runs goes through here; nested ones (savepoints) keep the outer identity.
  db.transaction = ((fn: (...args: unknown[]) => unknown) =>
    begin(function (this: unknown, ...args: unknown[]) {
      if (current !== undefined) return fn.apply(this, args);
      current = randomUUID();
      try {
        return fn.apply(this, args);
      } finally {
        current = undefined;
      }
    })) as typeof db.transaction;
  db.function('synchro_local_txn', { deterministic: false }, () => current ?? null);
  db.exec(DDL);
}

/** The identity of the local transaction that last set each record's status. */
export function statusTransactions(db: Database.Database): Map<string, string> {
  const rows = db.prepare('SELECT mutation_id, local_txn FROM _synchro_status_changes').all() as { mutation_id: string; local_txn: string }[];
  return new Map(rows.map((r) => [r.mutation_id, r.local_txn]));
}
