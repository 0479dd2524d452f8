/**
 * Where the harness's last source commit lies in the server's WAL: the
 * insert position read just before and just after it. The commit record of
 * that transaction lies strictly after `before` and no later than `after`, so
 * a position at or before `before` certainly precedes the commit.
 */
import type { SourceSqlControl } from '../../../harness/adapters/server.ts';
import type { SyncWorld } from '../world.ts';

export interface CommitWindow {
  before: string;
  after: string;
}

const windows = new WeakMap<SyncWorld, CommitWindow>();

async function walInsertPosition(sql: SourceSqlControl): Promise<string> {
  const row = (await sql.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn'))[0];
  if (row === undefined) throw new Error('the source database reported no WAL insert position');
  return row.lsn;
}

/** Runs `script` as one source commit and keeps the WAL window it committed in. */
export async function commitAndRecord(world: SyncWorld, sql: SourceSqlControl, script: string): Promise<void> {
  const before = await walInsertPosition(sql);
  await sql.query(script);
  windows.set(world, { before, after: await walInsertPosition(sql) });
}

export function lastCommitWindow(world: SyncWorld): CommitWindow {
  const window = windows.get(world);
  if (window === undefined) throw new Error('the harness committed nothing on the source database in this scenario');
  return window;
}

/** A PostgreSQL LSN ("16/B374D848") as a number that orders like the position. */
export function lsnValue(lsn: string): bigint {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(lsn);
  if (match === null) throw new Error(`"${lsn}" is not an LSN`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}
