/**
 * Application writes to a client under test, as an application makes them:
 * plain SQL through the client's SQL surface, one statement per call or a
 * script as one local transaction. Each write is recorded with the mutation
 * IDs the client showed before it, the proxy log length after it, and its
 * result or error, so later steps can ask what that write captured.
 */
import { ClientGoneError, ClientRpcError } from '../../../harness/adapters/client-process.ts';
import type { SyncWorld } from '../world.ts';
import { queueOf } from './queue.ts';
import { queueState, type Statement } from './state.ts';

/** `<a string of 70000 'x' characters>` in a feature's SQL: a quoted SQL string of that many characters. */
const LONG_STRING = /<a string of (\d+) '(.)' characters>/g;

export function expandPlaceholders(sql: string): string {
  return sql.replace(LONG_STRING, (_all, count: string, char: string) => `'${char.repeat(Number(count))}'`);
}

const STATEMENT_START = /^(?:INSERT|UPDATE|DELETE|SELECT|WITH|VALUES|CREATE|DROP|ALTER|REPLACE)\b/i;

/**
 * Splits a script into statements: at a semicolon that ends a line, and at a
 * line that starts a new statement (the features write one statement per
 * line, with or without semicolons).
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  for (const chunk of sql.split(/;\s*(?:\n|$)/)) {
    let current: string[] = [];
    for (const line of chunk.split('\n')) {
      if (STATEMENT_START.test(line.trim()) && current.some((l) => l.trim() !== '')) {
        out.push(current.join('\n'));
        current = [];
      }
      current.push(line);
    }
    out.push(current.join('\n'));
  }
  return out.map((statement) => statement.trim()).filter((statement) => statement !== '');
}

/** A scenario that judges its statement itself ("the statement succeeds") gets the failure recorded instead of raised. */
const VERDICT_STEP = /^the statement (?:succeeds|fails)/;

/**
 * Runs application SQL on client `name`. A single statement goes through
 * `execute` (which reports the rows it changed), a script through
 * `transaction`. When a crash point is armed, the process may die inside the
 * call: that is the scenario's point, not a failure of the step.
 */
export async function runApplicationSql(world: SyncWorld, name: string, sql: string): Promise<Statement> {
  const client = await world.process(name);
  const state = queueState(world);
  const statements = splitStatements(expandPlaceholders(sql));
  const before = new Set((await queueOf(world, name)).map((r) => r.id));
  const statement: Statement = { sql, before };
  state.statements.set(name, statement);
  try {
    if (statements.length === 1) statement.changes = (await client.call<{ changes: number }>('execute', { sql: statements[0] })).changes;
    else await client.call('transaction', { statements: statements.map((s) => ({ sql: s })) });
  } catch (error) {
    statement.error = error as Error;
    if (error instanceof ClientGoneError && state.crashArmed.has(name)) return statement;
    if (error instanceof ClientRpcError && world.stepTexts.some((text) => VERDICT_STEP.test(text))) return statement;
    throw error;
  }
  state.writeMarks.set(name, (await world.proxy()).exchanges.length);
  await queueOf(world, name);
  return statement;
}
