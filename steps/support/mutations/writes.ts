/**
 * Application writes to a client under test, as an application makes them:
 * plain SQL through the client's SQL surface, one statement per call or a
 * script as one local transaction. Each write is recorded with when it ran,
 * the mutation IDs the client showed before it and the ones it captured, the
 * proxy log length after it, and its result or error, so later steps can ask
 * what that write captured ("that mutation", "the update setting price").
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
const VERDICT_STEP = /^the statement (?:succeeds|fails|is refused)/;

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
  const statement: Statement = { sql, at: Date.now(), before, captured: [] };
  state.writes.set(name, [...(state.writes.get(name) ?? []), statement]);
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
  statement.captured = (await queueOf(world, name)).map((r) => r.id).filter((id) => !before.has(id));
  return statement;
}

/** Every application write of client `name` in this scenario, oldest first. */
export function writesOf(world: SyncWorld, name: string): Statement[] {
  return queueState(world).writes.get(name) ?? [];
}

/** The last application write of client `name`. */
export function lastWriteOf(world: SyncWorld, name: string): Statement {
  const last = writesOf(world, name).at(-1);
  if (last === undefined) throw new Error(`client "${name}" ran no application SQL in this scenario`);
  return last;
}

/** The scenario's latest application write, of whichever client, with that client's name. */
export function lastWrite(world: SyncWorld): { name: string; write: Statement } {
  let latest: { name: string; write: Statement } | undefined;
  for (const [name, writes] of queueState(world).writes) for (const write of writes) if (latest === undefined || write.at >= latest.write.at) latest = { name, write };
  if (latest === undefined) throw new Error('no application SQL ran in this scenario');
  return latest;
}

/** "That mutation": the one mutation the last write of client `name` captured. */
export function thatMutationOf(world: SyncWorld, name: string): string {
  const last = lastWriteOf(world, name);
  if (last.captured.length !== 1) throw new Error(`the last write of client "${name}" captured ${last.captured.length} mutations, not one: ${last.sql}`);
  return last.captured[0] as string;
}

/**
 * The one mutation captured by the write of client `name` whose SQL matches
 * `pattern`: the only such write, or the `nth` (0-based) of several.
 */
export function capturedBy(world: SyncWorld, name: string, pattern: RegExp, nth?: number): string {
  const matching = writesOf(world, name).filter((w) => pattern.test(w.sql));
  if (nth === undefined && matching.length !== 1) throw new Error(`client "${name}" ran ${matching.length} statements matching ${pattern}, not one`);
  const write = matching[nth ?? 0];
  if (write === undefined || write.captured.length !== 1) throw new Error(`client "${name}" ran no statement matching ${pattern} that captured one mutation`);
  return write.captured[0] as string;
}
