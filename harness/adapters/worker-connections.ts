/**
 * `workerConnections` of the reference adapter (SYNC-OPS-002): external
 * connections under a scenario database's worker login, through the HBA rules
 * the reference's cluster module writes for that login (SCRAM over TCP to the
 * configured database only, nothing over the local socket). The rules are
 * written on the first attempt, so only scenarios that try a connection pay
 * for the configuration reload.
 */
import pg from 'pg';
import type { WorkerConnectionAttempt, WorkerConnectionControl, WorkerConnectionOutcome } from './server.ts';

/** What the control needs of the reference cluster module. */
export interface HbaCluster {
  restrictWorkerLogin(database: string, login: string, password: string, faults?: readonly string[]): Promise<{ socketDirectory: string }>;
}

export function workerConnectionControl(cluster: HbaCluster, workerUrl: string, faults: readonly string[]): WorkerConnectionControl {
  const url = new URL(workerUrl);
  const login = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  const database = url.pathname.slice(1);
  let restricted: Promise<{ socketDirectory: string }> | undefined;
  return {
    async attempt(attempt: WorkerConnectionAttempt): Promise<WorkerConnectionOutcome> {
      restricted ??= cluster.restrictWorkerLogin(database, login, password, faults);
      const { socketDirectory } = await restricted;
      const secret = attempt.secret === 'managed' ? { password } : attempt.secret === 'wrong' ? { password: `${password}-wrong` } : {};
      const config: pg.ClientConfig & { replication?: string } = {
        host: attempt.transport === 'tcp' ? url.hostname : socketDirectory,
        port: Number(url.port === '' ? 5432 : url.port),
        user: login,
        database: attempt.database === 'configured' ? database : attempt.database.name,
        ...secret,
        ...(attempt.kind === 'replication' ? { replication: 'database' } : {}),
      };
      const client = new pg.Client(config);
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query(attempt.kind === 'replication' ? 'IDENTIFY_SYSTEM' : 'SELECT 1');
        return { connected: true };
      } catch (error) {
        return { connected: false, sqlstate: (error as { code?: string }).code, message: (error as Error).message };
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  };
}
