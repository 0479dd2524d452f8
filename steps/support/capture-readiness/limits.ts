/**
 * The readiness maxima as the server is configured with them, and the server
 * handle a lag step acts on. The reference keeps the maxima in
 * `synchro.capture_limits` as configured text (like the extension's
 * settings), so an unparseable value reaches the server as written.
 */
import type { ServerAdapter, SourceSqlControl } from '../../../harness/adapters/server.ts';
import type { SyncWorld } from '../world.ts';

/** The column of each maximum, by the feature's name for it. */
export const LIMIT_COLUMNS: Record<string, string> = {
  'heartbeat age': 'max_heartbeat_age_seconds',
  'WAL lag': 'max_wal_lag_bytes',
  'commit age': 'max_wal_lag_seconds',
};

export async function serverWithSql(world: SyncWorld): Promise<{ server: ServerAdapter; sql: SourceSqlControl }> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to configure or load its database`);
  return { server, sql: server.sourceSql };
}

/** Sets the maxima named in `values` (a value of null unsets it). */
export async function configureLimits(world: SyncWorld, values: Record<string, string | null>): Promise<void> {
  const { sql } = await serverWithSql(world);
  for (const [limit, value] of Object.entries(values)) {
    const column = LIMIT_COLUMNS[limit];
    if (column === undefined) throw new Error(`no readiness maximum is called "${limit}"`);
    await sql.query(`UPDATE synchro.capture_limits SET ${column} = $1`, [value]);
  }
}
