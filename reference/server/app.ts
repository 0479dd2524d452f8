/**
 * Wires a database and a secret into a listening server. Used by main.ts and
 * by the tests, which start it in-process on a fresh database.
 */
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { secretKey } from './auth.ts';
import { CaptureWorker } from './capture/worker.ts';
import { createControls } from './controls/routes.ts';
import { DEFAULT_STALE_CLIENT_INTERVAL, parseStaleInterval } from './controls/stale-interval.ts';
import { Admission } from './core/admission.ts';
import { newClock } from './core/clock.ts';
import { ManifestStore } from './core/manifests.ts';
import { installSchema } from './db/install.ts';
import type { ConnectionLimits } from './http-limits.ts';
import { pushInCallerTransaction } from './push/handler.ts';
import { createSyncServer } from './router.ts';
import { applySqlFaults } from './sql-faults.ts';

// int8 stays text: int64 values are strings on the wire and must not pass through binary64.
pg.types.setTypeParser(20, (v: string) => v);

export interface RunningServer {
  url: string;
  pool: pg.Pool;
  /** The WAL capture worker, when started with `capture: true`. */
  capture?: CaptureWorker;
  close(): Promise<void>;
}

export interface StartOptions {
  databaseUrl: string;
  jwtSecret: string;
  host?: string;
  port?: number;
  log?: (line: string) => void;
  /** Serve the `/__test/` endpoints (loopback peers only). */
  testControls?: boolean;
  /** Milliseconds; the 30-day default when absent. */
  staleClientIntervalMs?: number;
  /** Per-endpoint in-flight limits; no admission control when absent. */
  admissionLimits?: ReadonlyMap<string, number>;
  /** Run the WAL capture worker in this process. */
  capture?: boolean;
  /**
   * Give this instance a clock of its own, so its test controls move only its
   * time (several instances share one process in the harness's server host);
   * otherwise it reads the process clock.
   */
  ownClock?: boolean;
  /** Header and body timeouts and the connection cap; each absent member keeps its default (http-limits.ts). */
  connectionLimits?: Partial<ConnectionLimits>;
}

export async function startServer(options: StartOptions): Promise<RunningServer> {
  await installSchema(options.databaseUrl);
  await applySqlFaults(options.databaseUrl);
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 20 });
  pool.on('error', () => undefined);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  let capture: CaptureWorker | undefined;
  if (options.capture === true) {
    capture = new CaptureWorker({ databaseUrl: options.databaseUrl, log });
    await capture.start();
  }
  const staleClientIntervalMs = options.staleClientIntervalMs ?? parseStaleInterval(DEFAULT_STALE_CLIENT_INTERVAL);
  const manifests = new ManifestStore(pool);
  const server = createSyncServer({
    pool,
    manifests,
    jwtKey: secretKey(options.jwtSecret),
    log,
    ...(capture === undefined ? {} : { capture }),
    ...(options.admissionLimits !== undefined ? { admission: new Admission(options.admissionLimits) } : {}),
    ...(options.testControls === true ? { controls: createControls({ pool, staleClientIntervalMs, callerPush: (db, userId, request) => pushInCallerTransaction(db, manifests, userId, request), ...(capture === undefined ? {} : { capture }) }) } : {}),
    ...(options.ownClock === true ? { clock: newClock() } : {}),
    ...(options.connectionLimits !== undefined ? { connectionLimits: options.connectionLimits } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    pool,
    ...(capture === undefined ? {} : { capture }),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await capture?.stop();
      await pool.end();
    },
  };
}
