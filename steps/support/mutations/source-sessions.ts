/**
 * Source transactions the harness holds open on connections of their own
 * while a push runs, and row lock probes from further connections. What a
 * backend waits for, and which backend blocks it, is read from PostgreSQL
 * (pg_stat_activity, pg_blocking_pids) on the scenario's main SQL session.
 */
import type { SourceSqlSession } from '../../../harness/adapters/server.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';
import { PASS_SETTING, sourceSql, waitFor } from './push-gates.ts';

export interface HeldTransaction {
  session: SourceSqlSession;
  pid: number;
  /** The statement run in the transaction; settles when PostgreSQL answers it. */
  statement: Promise<unknown>;
  settledAt?: number;
  error?: unknown;
}

const held = new WeakMap<SyncWorld, HeldTransaction>();

/** A further connection, or undefined (and the step skipped as undetermined) when the adapter offers none. */
export async function openSession(world: SyncWorld): Promise<SourceSqlSession | 'skipped'> {
  const sql = await sourceSql(world);
  if (!sql.session) return undeterminedWithout(world, 'the server adapter offers no sourceSql.session() for a second source connection');
  const session = await sql.session();
  // The harness's own writes are never held at its gates.
  await session.query(`SET ${PASS_SETTING} = 'on'`);
  return session;
}

/** Begins a transaction on a new connection and runs `statement` in it; waits for the statement only when `await` says so. */
export async function beginHeld(world: SyncWorld, statement: string, awaitStatement: boolean): Promise<HeldTransaction | 'skipped'> {
  const session = await openSession(world);
  if (session === 'skipped') return session;
  const [me] = await session.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  await session.query('BEGIN');
  const tx: HeldTransaction = { session, pid: Number(me?.pid), statement: Promise.resolve() };
  tx.statement = session.query(statement).then(
    (rows) => {
      tx.settledAt = Date.now();
      return rows;
    },
    (error: unknown) => {
      tx.settledAt = Date.now();
      tx.error = error;
    },
  );
  held.set(world, tx);
  if (awaitStatement) {
    await tx.statement;
    if (tx.error !== undefined) throw new Error(`the harness's source statement failed: ${(tx.error as Error).message}`);
  }
  return tx;
}

/** Whether the harness holds an open source transaction in this scenario. */
export function holdsTransaction(world: SyncWorld): boolean {
  return held.has(world);
}

export function heldTransaction(world: SyncWorld): HeldTransaction {
  const tx = held.get(world);
  if (tx === undefined) throw new Error('the harness holds no open source transaction in this scenario');
  return tx;
}

/** Ends the held transaction with COMMIT or ROLLBACK and closes its connection. */
export async function endHeld(world: SyncWorld, how: 'COMMIT' | 'ROLLBACK'): Promise<void> {
  const tx = heldTransaction(world);
  await tx.statement;
  await tx.session.query(how);
  await tx.session.close();
  held.delete(world);
}

/** Backends of the scenario's database blocked by backend `pid`. */
export async function blockedBy(world: SyncWorld, pid: number): Promise<number[]> {
  const sql = await sourceSql(world);
  const rows = await sql.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND $1::int = ANY (pg_blocking_pids(pid))',
    [pid],
  );
  return rows.map((r) => Number(r.pid));
}

/** What backend `pid` waits for now (`Lock/transactionid`...), or undefined when it waits for no lock. */
export async function lockWaitOf(world: SyncWorld, pid: number): Promise<string | undefined> {
  const sql = await sourceSql(world);
  const [row] = await sql.query<{ wait: string | null }>(
    "SELECT CASE WHEN wait_event_type = 'Lock' THEN wait_event_type || '/' || wait_event END AS wait FROM pg_stat_activity WHERE pid = $1",
    [pid],
  );
  return row?.wait ?? undefined;
}

/** Waits until some backend is blocked by `pid`; returns the blocked ones. */
export async function awaitBlockedBy(world: SyncWorld, pid: number, what: string): Promise<number[]> {
  return await waitFor(world, what, async () => {
    const blocked = await blockedBy(world, pid);
    return blocked.length > 0 ? blocked : undefined;
  });
}

/**
 * Takes `mode` on one row from a new connection with NOWAIT: true when
 * granted at once. The probe's transaction is rolled back.
 */
export async function probeRowLock(world: SyncWorld, table: string, keyColumn: string, row: string, mode: string): Promise<boolean | 'skipped'> {
  const session = await openSession(world);
  if (session === 'skipped') return session;
  try {
    await session.query('BEGIN');
    await session.query(`SELECT 1 FROM public."${table.replaceAll('"', '""')}" WHERE "${keyColumn.replaceAll('"', '""')}" = $1 FOR ${mode} NOWAIT`, [row]);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') return false;
    throw error;
  } finally {
    await session.query('ROLLBACK').catch(() => undefined);
    await session.close();
  }
}
