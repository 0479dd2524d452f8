import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { stampStatusTransactions, statusTransactions } from '../../reference/client/local/status-transactions.ts';

function queueDb(): Database.Database {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE _synchro_pending_changes (mutation_id TEXT PRIMARY KEY, lifecycle_state TEXT NOT NULL)');
  stampStatusTransactions(db);
  db.exec(`INSERT INTO _synchro_pending_changes VALUES ('a', 'pending'), ('b', 'pending'), ('c', 'pending')`);
  return db;
}

const block = (db: Database.Database, id: string) => db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'blocked_by_predecessor' WHERE mutation_id = ?`).run(id);

test('records whose status changed in one transaction, nested or not, share its identity', () => {
  const db = queueDb();
  db.transaction(() => {
    block(db, 'a');
    db.transaction(() => block(db, 'b'))();
  })();
  const txns = statusTransactions(db);
  assert.equal(txns.get('a'), txns.get('b'));
  assert.notEqual(txns.get('a'), txns.get('c'));
});

test('separate transactions and autocommit statements get identities of their own', () => {
  const db = queueDb();
  db.transaction(() => block(db, 'a'))();
  db.transaction(() => block(db, 'b'))();
  db.exec(`UPDATE _synchro_pending_changes SET lifecycle_state = 'sealed' WHERE mutation_id = 'c'`);
  const txns = statusTransactions(db);
  assert.equal(new Set([txns.get('a'), txns.get('b'), txns.get('c')]).size, 3);
});

test('a rolled-back transaction leaves the earlier stamps, and an unchanged status is not restamped', () => {
  const db = queueDb();
  const before = statusTransactions(db).get('a');
  assert.throws(() =>
    db.transaction(() => {
      block(db, 'a');
      throw new Error('roll back');
    })(),
  );
  assert.equal(statusTransactions(db).get('a'), before);
  db.exec(`UPDATE _synchro_pending_changes SET lifecycle_state = 'pending' WHERE mutation_id = 'a'`);
  assert.equal(statusTransactions(db).get('a'), before);
});

test('.immediate transactions are stamped too, and deleting a record removes its stamp', () => {
  const db = queueDb();
  db.transaction(() => {
    block(db, 'a');
    block(db, 'b');
  }).immediate();
  const txns = statusTransactions(db);
  assert.equal(txns.get('a'), txns.get('b'));
  db.exec(`DELETE FROM _synchro_pending_changes WHERE mutation_id = 'a'`);
  assert.equal(statusTransactions(db).has('a'), false);
});
