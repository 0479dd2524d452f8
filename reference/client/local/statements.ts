/**
 * Prepared statements kept per connection and SQL text, for the statements
 * run once per row while applying pages: preparing compiles the SQL again
 * each time, which cost more than running it. A statement prepared on one
 * connection is never used on another; the SQL text names every table and
 * column, so a changed table gets a different text and a fresh statement.
 */
import type Database from 'better-sqlite3';

const byConnection = new WeakMap<Database.Database, Map<string, Database.Statement>>();

export function prepared(db: Database.Database, sql: string): Database.Statement {
  let statements = byConnection.get(db);
  if (statements === undefined) {
    statements = new Map();
    byConnection.set(db, statements);
  }
  let statement = statements.get(sql);
  if (statement === undefined) {
    statement = db.prepare(sql);
    statements.set(sql, statement);
  }
  return statement;
}
