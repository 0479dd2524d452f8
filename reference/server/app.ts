/**
 * Wires a database and a secret into a listening server. Used by main.ts and
 * by the tests, which start it in-process on a fresh database.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { secretKey } from './auth.ts';
import { ProjectionBootstrapCoordinator } from './capture/projection-bootstrap.ts';
import { CaptureWorker } from './capture/worker.ts';
import { LogBuffer } from './controls/log-buffer.ts';
import { createControls, isProductionEnvironment } from './controls/routes.ts';
import { SeedSessions } from './controls/seed-sessions.ts';
import { DEFAULT_STALE_CLIENT_INTERVAL, parseStaleInterval } from './controls/stale-interval.ts';
import { Admission } from './core/admission.ts';
import { checksumPrecomputer } from './core/checksums.ts';
import { newClock, resetClock } from './core/clock.ts';
import { type Catalog, ManifestStore } from './core/manifests.ts';
import { RequestMetrics } from './core/metrics.ts';
import { installSchema, schemaInstalled } from './db/install.ts';
import { wipeDatabase } from './db/reset.ts';
import type { ConnectionLimits } from './http-limits.ts';
import { pushInCallerTransaction } from './push/handler.ts';
import { createListeningServer, createSyncHandler } from './router.ts';
import { SeedRequestError } from './seed/errors.ts';
import { exportSeed } from './seed/export.ts';
import { seedManifest } from './seed/manifest.ts';
import { seedPage } from './seed/pages.ts';
import { applySqlFaults } from './sql-faults.ts';

// int8 stays text: int64 values are strings on the wire and must not pass through binary64.
pg.types.setTypeParser(20, (v: string) => v);

export interface RunningServer {
  url: string;
  /** The pool of the current database state (a control-protocol reset replaces it). */
  readonly pool: pg.Pool;
  /** The WAL capture worker, when started with `capture: true` (a reset replaces it too). */
  readonly capture?: CaptureWorker;
  close(): Promise<void>;
}

export interface StartOptions {
  databaseUrl: string;
  jwtSecret: string;
  host?: string;
  port?: number;
  log?: (line: string) => void;
  /** Serve the control protocol under `/__control/` (loopback peers only). */
  testControls?: boolean;
  /** Milliseconds; the 30-day default when absent. */
  staleClientIntervalMs?: number;
  /** Per-endpoint in-flight limits; no admission control when absent. */
  admissionLimits?: ReadonlyMap<string, number>;
  /** Run the WAL capture worker in this process. */
  capture?: boolean;
  /**
   * The capture worker's own login (LOGIN REPLICATION NOINHERIT, member of
   * synchro_worker only), as a URL to the same database: every capture session
   * then connects as it (decision 350). Absent: capture uses `databaseUrl`.
   */
  workerDatabaseUrl?: string;
  /**
   * Give this instance a clock of its own, so its test controls move only its
   * time (several instances share one process in the harness's server host);
   * otherwise it reads the process clock.
   */
  ownClock?: boolean;
  /** Header and body timeouts and the connection cap; each absent member keeps its default (http-limits.ts). */
  connectionLimits?: Partial<ConnectionLimits>;
  /**
   * Offer the control protocol's `reset` (with `testControls`): the server
   * wipes its database in place and starts over on a fresh install. For a
   * server started by hand and certified through a config file; the harness's
   * own servers get a fresh database clone per scenario instead.
   */
  resettable?: boolean;
}

/** What one database state serves: its pool, its capture worker and the request listener over them. */
interface Instance {
  closed?: boolean;
  pool: pg.Pool;
  manifests: ManifestStore;
  capture?: CaptureWorker;
  /** The Class 3 projection bootstrap, beside the capture worker whose barrier it reaches. */
  bootstrap?: ProjectionBootstrapCoordinator;
  listener: (req: IncomingMessage, res: ServerResponse) => void;
}

export async function startServer(options: StartOptions): Promise<RunningServer> {
  if (options.testControls === true && isProductionEnvironment(process.env)) throw new Error('the control protocol is never served in a production environment (NODE_ENV or SYNCHRO_ENV is "production")');
  const logs = new LogBuffer(options.log ?? ((line: string) => process.stderr.write(`${line}\n`)));
  const log = logs.write;
  const metrics = new RequestMetrics();
  const staleClientIntervalMs = options.staleClientIntervalMs ?? parseStaleInterval(DEFAULT_STALE_CLIENT_INTERVAL);
  const admission = options.admissionLimits !== undefined ? new Admission(options.admissionLimits) : undefined;
  const clock = options.ownClock === true ? newClock() : undefined;
  let current: Instance | undefined;
  // Seed calls on a connection the harness keeps across calls (controls only).
  const seedSessions = new SeedSessions({
    manifest: (db, pageLimit) => seedManifest(db, pageLimit),
    page: (db, call) => seedPage(db, call.scope, call.pageToken, call.continuationReceipt, call.expectedRowOrdinal, call.limit),
    refusal: (e) => (e instanceof SeedRequestError ? { code: e.code, message: e.message } : undefined),
  });
  const controls =
    options.testControls === true
      ? createControls({
          target: () => current as Instance,
          staleClientIntervalMs,
          logs,
          metrics,
          // The push entry point of the current state, for a caller's own transaction.
          callerPush: (db, userId, request) => pushInCallerTransaction(db, (current as Instance).manifests, userId, request),
          seedExport: async (db, request) => {
            try {
              const result = await exportSeed(db, request);
              return { manifest: result.manifest, pages: result.pages };
            } catch (e) {
              if (e instanceof SeedRequestError) return { refused: `${e.code}: ${e.message}` };
              throw e;
            }
          },
          seedSessions,
          ...(options.resettable === true ? { reset: () => resetInstance() } : {}),
        })
      : undefined;

  const open = async (): Promise<Instance> => {
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 20 });
    pool.on('error', () => undefined);
    try {
      // Asked on the pool first: every start but a database's first finds the schema, and needs no installer session.
      if (!(await schemaInstalled(pool))) await installSchema(options.databaseUrl);
      await applySqlFaults(options.databaseUrl);
    } catch (e) {
      await pool.end().catch(() => undefined);
      throw e;
    }
    let capture: CaptureWorker | undefined;
    // Once capture catches up, the scope checksums clients asked for lately are computed ahead of their
    // terminal pulls, under the catalog the manifest store (made below, after capture) last took into force.
    let knownCatalog: () => Catalog | undefined = () => undefined;
    const precomputeChecksums = checksumPrecomputer(pool, () => knownCatalog());
    if (options.capture === true) {
      capture = new CaptureWorker({
        databaseUrl: options.databaseUrl,
        serverPool: pool,
        ...(options.workerDatabaseUrl === undefined ? {} : { workerUrl: options.workerDatabaseUrl }),
        log,
        caughtUp: precomputeChecksums,
      });
      try {
        await capture.start();
      } catch (e) {
        // Nothing is served: the sessions the start opened, and the pool, end here rather than outlive the refusal.
        await capture.closeAfterFailedStart();
        await pool.end().catch(() => undefined);
        throw e;
      }
    }
    const bootstrap = capture === undefined ? undefined : new ProjectionBootstrapCoordinator(options.databaseUrl, capture, log);
    const manifests = new ManifestStore(pool, bootstrap);
    knownCatalog = () => manifests.known;
    bootstrap?.attach(() => manifests.catalog());
    const listener = createSyncHandler({
      pool,
      manifests,
      jwtKey: secretKey(options.jwtSecret),
      log,
      metrics,
      ...(capture === undefined ? {} : { capture }),
      ...(admission === undefined ? {} : { admission }),
      ...(controls === undefined ? {} : { controls }),
      ...(clock === undefined ? {} : { clock }),
      ...(options.connectionLimits !== undefined ? { connectionLimits: options.connectionLimits } : {}),
    });
    return { pool, manifests, ...(capture === undefined ? {} : { capture }), ...(bootstrap === undefined ? {} : { bootstrap }), listener };
  };
  const closeInstance = async (instance: Instance) => {
    if (instance.closed) return;
    instance.closed = true;
    // A seed session holds a connection of this pool: ending the pool would wait for it.
    seedSessions.closeAll();
    await instance.capture?.stop();
    await instance.bootstrap?.close();
    await instance.pool.end();
  };
  // Runs inside the reset request, so resetClock moves this instance's clock (or the process clock it reads).
  // A reset that failed half-way leaves the old instance closed; the next reset starts over from the wipe.
  // Resets run one at a time: a second one (a harness that gave up waiting and asked again) would end the first one's sessions.
  let resetting: Promise<void> = Promise.resolve();
  const resetInstance = () => {
    const next = resetting.catch(() => undefined).then(resetOnce);
    resetting = next;
    return next;
  };
  const resetOnce = async () => {
    const old = current as Instance;
    await closeInstance(old).catch((e: unknown) => log(`reset: closing the old state failed (${(e as Error).message}); wiping anyway`));
    await wipeDatabase(options.databaseUrl);
    current = await open();
    resetClock();
    log('reset: the database was wiped and the synchro schema installed again');
  };

  current = await open();
  const server = createListeningServer((req, res) => (current as Instance).listener(req, res), options.connectionLimits);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    get pool() {
      return (current as Instance).pool;
    },
    get capture() {
      return current?.capture;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeInstance(current as Instance);
    },
  };
}
