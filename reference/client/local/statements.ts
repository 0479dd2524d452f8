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

/** Parameters bound by one multi-row statement at most, well under SQLite's limit of 32,766. */
const MAX_PARAMETERS = 4096;
/** Rows per multi-row statement at most; beyond this a larger statement saves nothing measurable. */
const MAX_ROWS = 64;

/**
 * Runs `head VALUES (…), (…), … tail` over `rows` (each of `width` values),
 * several rows per statement, in the order given: one statement per row
 * costs a call into SQLite and a reset each, which dominated applying a page.
 * Chunks are powers of two, so a table needs at most seven statement texts.
 * The statement is the same as the single-row one with more rows: a
 * constraint failure aborts the statement and the enclosing transaction
 * rolls back, as it would have for one row.
 */
export function runMultiRow(db: Database.Database, head: string, tail: string, width: number, rows: readonly (readonly unknown[])[]): void {
  let largest = 1;
  while (largest * 2 <= MAX_ROWS && largest * 2 * width <= MAX_PARAMETERS) largest *= 2;
  const tuple = `(${Array.from({ length: width }, () => '?').join(', ')})`;
  let at = 0;
  while (at < rows.length) {
    let n = largest;
    while (n > rows.length - at) n /= 2;
    const args = new Array<unknown>(n * width);
    for (let r = 0; r < n; r++) {
      const row = rows[at + r] as readonly unknown[];
      if (row.length !== width) throw new Error(`a row for "${head}" has ${row.length} values, expected ${width}`);
      for (let c = 0; c < width; c++) args[r * width + c] = row[c];
    }
    prepared(db, `${head} VALUES ${Array.from({ length: n }, () => tuple).join(', ')} ${tail}`).run(...args);
    at += n;
  }
}
