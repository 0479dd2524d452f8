/**
 * The HTTP surface: the route table of the protocol endpoints (each served by
 * its handler folder), a fail-closed /ready, the control protocol
 * (`/__control/`) when present, and the error envelope for every failure,
 * including what Node's HTTP parser refuses (http-limits.ts, with the
 * timeouts and connection cap). Routes are thin: authenticate, read the body
 * strictly (in time, with no content coding), call the handler, send exact
 * bytes.
 * This is the one module that imports the request handlers; they import only
 * core/ (see core/README.md).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Pool } from 'pg';
import { authenticate } from './auth.ts';
import { handleConnect } from './connect/handler.ts';
import { CONTROL_PREFIX } from './controls/routes.ts';
import type { Admission, Admit } from './core/admission.ts';
import { BodyNotReceived, checkContentEncoding, checkContentType, parseBody, readBody } from './core/body.ts';
import type { CaptureHandle } from './core/capture-control.ts';
import { type ClockState, serverClock, withClock } from './core/clock.ts';
import { type CanonicalResult, refusalThroughEntryPoint, type SyncEndpoint } from './core/entry-points.ts';
import { integrityFailure, isTransientDatabaseError, RETRY_AFTER_SECONDS, SyncError, temporarilyUnavailable } from './core/errors.ts';
import { decisionFromSyncService, mirrorToSyncService } from './core/fault-behaviour.ts';
import { fault } from './core/faults.ts';
import type { ManifestStore } from './core/manifests.ts';
import type { RequestMetrics } from './core/metrics.ts';
import { answerClientError, applyConnectionLimits, type ConnectionLimits, DEFAULT_CONNECTION_LIMITS, framingBroken, TIMEOUT_CHECK_INTERVAL_MS } from './http-limits.ts';
import { handlePull } from './pull/handler.ts';
import { handlePush } from './push/handler.ts';
import { handleRebuild } from './rebuild/handler.ts';

export interface ServerOptions {
  pool: Pool;
  manifests: ManifestStore;
  jwtKey: Uint8Array;
  log: (line: string) => void;
  /** Per-endpoint in-flight limits (`--max-in-flight`); absent means no admission control. */
  admission?: Admission;
  /** The WAL capture worker of this process, when it runs one: pull and rebuild give it a moment to catch up first. */
  capture?: Pick<CaptureHandle, 'catchUp'>;
  /** The control protocol's handler (`/__control/`), present only with `--test-controls`. */
  controls?: (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void>;
  /** This instance's own clock; absent, requests read the process clock. */
  clock?: ClockState;
  /** Timeouts and the connection cap (http-limits.ts); each absent member keeps its default. */
  connectionLimits?: Partial<ConnectionLimits>;
  /** Counts every answered sync request by route and status (core/metrics.ts). */
  metrics?: RequestMetrics;
}

function send(res: ServerResponse, status: number, body: string, extra: Record<string, string> = {}): void {
  const bytes = Buffer.from(body, 'utf8');
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(bytes.length), ...extra });
  res.end(bytes);
}

function sendError(res: ServerResponse, e: SyncError, extra: Record<string, string> = {}): void {
  const headers = e.status === 429 || e.status === 503 ? { 'Retry-After': String(RETRY_AFTER_SECONDS), ...extra } : extra;
  send(res, e.status, JSON.stringify(e.body()), headers);
}

/** Maps anything thrown to the envelope; only codes and classes are logged, never payloads. */
function toSyncError(e: unknown, log: (line: string) => void): SyncError {
  if (e instanceof SyncError) return e;
  const cause = (e as { code?: string }).code ?? (e as Error).name;
  if (isTransientDatabaseError(e)) {
    // A retryable answer still has a cause an operator may need (lock timeouts, too many connections).
    log(`request deferred with 503: transient database error ${cause}`);
    return temporarilyUnavailable();
  }
  log(`request failed: ${cause}`);
  return integrityFailure();
}

/** Runs one SQL function with exactly the adapter role's rights and returns its single value. */
async function asAdapter(pool: Pool, sql: string, timeoutMs?: number): Promise<unknown> {
  const db = await pool.connect();
  try {
    await db.query('BEGIN; SET LOCAL ROLE synchro_adapter');
    if (timeoutMs !== undefined) await db.query(`SET LOCAL statement_timeout = ${Math.trunc(timeoutMs)}`);
    const { rows } = await db.query<{ r: unknown }>(sql);
    await db.query('COMMIT');
    return rows[0]?.r;
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    db.release();
  }
}

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * How long a pull or rebuild waits for capture to materialize the client's
 * own accepted writes before answering `503 capture_pending`: no longer than
 * the Retry-After the client would wait anyway. A client that pulls right
 * after its push would otherwise nearly always be sent into backoff; the
 * wait ends as soon as capture has caught up.
 */
export const CAPTURE_GRACE_MS = RETRY_AFTER_SECONDS * 1000;

/** How long GET /ready waits for the extension's readiness result before answering unready. */
const READINESS_TIMEOUT_MS = 5000;

/** The timeouts and connection cap in force: the defaults under `configured`, or none at all under the fault. */
function limitsOf(configured: Partial<ConnectionLimits> | undefined): ConnectionLimits | undefined {
  return fault('no-slow-client-limits') ? undefined : { ...DEFAULT_CONNECTION_LIMITS, ...configured }; // fault: server:no-slow-client-limits
}

export function createSyncServer(options: ServerOptions): Server {
  return createListeningServer(createSyncHandler(options), options.connectionLimits);
}

/**
 * The HTTP server around a request listener (one of createSyncHandler's, or
 * one that switches between them): the header timeout and connection cap
 * apply to its sockets, and what Node's parser refuses gets the envelope.
 */
export function createListeningServer(listener: (req: IncomingMessage, res: ServerResponse) => void, connectionLimits?: Partial<ConnectionLimits>): Server {
  const limits = limitsOf(connectionLimits);
  const server = createServer({ connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS }, listener);
  if (limits !== undefined) applyConnectionLimits(server, limits);
  if (!fault('bare-http-errors')) server.on('clientError', answerClientError); // fault: server:bare-http-errors
  return server;
}

/** The request listener of a server: what createSyncServer serves, for a caller that owns the listening socket. */
export function createSyncHandler(options: ServerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { pool, manifests, jwtKey, log } = options;
  const limits = limitsOf(options.connectionLimits);

  /**
   * A protocol endpoint: authenticate and parse (the adapter's own work), hand
   * the request to the core, and answer with the result of the endpoint's
   * canonical entry point (core/entry-points.ts): the core's answer was
   * returned by that call, and a refusal of the core is passed through it too.
   */
  const post = (endpoint: SyncEndpoint, run: (userId: string, value: unknown, admit: Admit) => Promise<CanonicalResult>): Handler => async (req, res) => {
    const broken = framingBroken(req);
    const userId = await authenticate(req, jwtKey);
    checkContentType(req);
    checkContentEncoding(req);
    const value = parseBody(await readBody(req, undefined, limits?.bodyTimeoutMs, broken));
    if (fault('ops005-debug-logs-requests')) log(`${req.url} user=${userId} body=${JSON.stringify(value)}`); // fault: server:ops005-debug-logs-requests
    if (fault('ops005-metrics-per-user')) options.metrics?.count(`${req.url}:${userId}`, 0); // fault: server:ops005-metrics-per-user
    if (fault('sync-service-mirror')) await mirrorToSyncService(req.url ?? '/', value); // fault: server:sync-service-mirror
    if (fault('sync-service-decision')) await decisionFromSyncService(req.url ?? '/'); // fault: server:sync-service-decision
    // The handler calls admit() once its earlier gates have passed (precedence step 8); the slot is freed when the request ends.
    let release = () => {};
    const admit: Admit = () => {
      release();
      release = options.admission?.enter((req.url ?? '/').split('?')[0] as string) ?? (() => {});
    };
    let result: CanonicalResult;
    try {
      result = await run(userId, value, admit);
    } catch (e) {
      if (!(e instanceof SyncError)) throw e;
      result = await refusalThroughEntryPoint(pool, endpoint, userId, { status: e.status, body: JSON.stringify(e.body()) });
    } finally {
      release();
    }
    const retry: Record<string, string> = result.status === 429 || result.status === 503 ? { 'Retry-After': String(RETRY_AFTER_SECONDS) } : {};
    send(res, result.status, fault('bound001-adapter-renders-push') && req.url === '/sync/push' ? JSON.stringify(JSON.parse(result.body), null, 1) : result.body, retry); // fault: server:bound001-adapter-renders-push
  };

  /**
   * Runs a pull or rebuild; when it finds the client's own accepted writes not
   * yet materialized, waits (bounded) for capture and runs it once more. The
   * refused attempt wrote nothing: its transaction was rolled back.
   */
  const withCaptureGrace = async (run: () => Promise<CanonicalResult>): Promise<CanonicalResult> => {
    try {
      return await run();
    } catch (e) {
      if (options.capture === undefined || !(e instanceof SyncError) || e.code !== 'capture_pending') throw e;
      // A stopped, killed or blocked worker refuses at once; the second attempt then answers capture_pending itself.
      await options.capture.catchUp(CAPTURE_GRACE_MS).catch(() => undefined);
      return await run();
    }
  };

  const routes: Record<string, { method: 'GET' | 'POST'; handler: Handler }> = {
    '/sync/connect': { method: 'POST', handler: post('connect', (u, v, admit) => handleConnect(pool, manifests, u, v, admit)) },
    '/sync/push': { method: 'POST', handler: post('push', (u, v, admit) => handlePush(pool, manifests, u, v, admit)) },
    '/sync/pull': {
      method: 'POST',
      handler: post('pull', (u, v, admit) => withCaptureGrace(() => handlePull(pool, manifests, u, v, admit))),
    },
    '/sync/rebuild': {
      method: 'POST',
      handler: post('rebuild', (u, v, admit) => withCaptureGrace(() => handleRebuild(pool, manifests, u, v, admit))),
    },
    '/sync/schema': {
      method: 'GET',
      handler: async (_req, res) => {
        const { current } = await manifests.catalog();
        const body = `{"manifest":${current.text},"schema_hash":"${current.hash}","schema_version":${current.version},"server_time":"${serverClock.now().toISOString()}"}`;
        send(res, 200, body);
      },
    },
    '/sync/tables': {
      method: 'GET',
      handler: async (_req, res) => {
        await manifests.catalog();
        const t = await asAdapter(pool, 'SELECT synchro.synchro_tables()::text AS r');
        send(res, 200, String(t));
      },
    },
    '/ready': {
      method: 'GET',
      handler: async (_req, res) => {
        if (fault('cap011-ready-by-ping') && (await pool.query('SELECT 1')).rowCount === 1) return send(res, 200, '{"ready":true}'); // fault: server:cap011-ready-by-ping
        let ready = false;
        try {
          // The reference publishes the schema manifest from this process, when a request first needs it;
          // readiness requires it published for the active registry, so a probe publishes one that is due.
          await manifests.catalog();
          // A probe that waits is no answer: past the timeout the extension's result counts as unavailable (503).
          const r = (await asAdapter(pool, 'SELECT synchro.synchro_readiness() AS r', READINESS_TIMEOUT_MS)) as Record<string, unknown> | null | undefined;
          ready = typeof r === 'object' && r !== null && Object.keys(r).length === 1 && r.ready === true;
        } catch {
          ready = false;
        }
        send(res, ready ? 200 : 503, ready ? '{"ready":true}' : '{"ready":false}', ready ? {} : { 'Retry-After': String(RETRY_AFTER_SECONDS) });
      },
    },
  };

  const clock = options.clock;
  return (req, res) => (clock === undefined ? serve(req, res) : withClock(clock, () => serve(req, res)));

  function serve(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] as string;
    const route = routes[path];
    // Counted by the route the server knows, never by what the request named (SYNC-OPS-005).
    if (options.metrics !== undefined && !path.startsWith(CONTROL_PREFIX)) res.once('finish', () => options.metrics?.count(route === undefined ? 'other' : path, res.statusCode));
    const run = async () => {
      if (options.controls !== undefined && path.startsWith(CONTROL_PREFIX)) return options.controls(req, res, path);
      if (route === undefined) throw new SyncError('invalid_request', 'no such endpoint', {}, 404);
      if (req.method !== route.method) {
        sendError(res, new SyncError('invalid_request', 'method not allowed', {}, 405), { Allow: route.method });
        return;
      }
      await route.handler(req, res);
    };
    run().catch((e: unknown) => {
      if (res.headersSent) return;
      // A body that never arrived whole leaves nothing on the connection that could be read in order.
      sendError(res, toSyncError(e, log), e instanceof BodyNotReceived ? { Connection: 'close' } : {});
    });
  }
}
