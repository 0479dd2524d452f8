/**
 * The `/__test/` endpoints. They exist only when the server was started with
 * `--test-controls`, answer only loopback peers (anyone else gets the same 404
 * as an unknown path), and change server state a scenario cannot reach through
 * the protocol: the clock, client expiry, client retirement, and the
 * capture worker (wait for it, stop it, kill it, start it again, poison its
 * next transaction, reset its stream).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Pool, PoolClient } from 'pg';
import { checkContentType, parseBody, readBody } from '../core/body.ts';
import { type CaptureHandle, CapturePoisoned, CaptureStopped, CRASH_POINTS } from '../core/capture-control.ts';
import { advanceClock, serverClock, setClock } from '../core/clock.ts';
import { invalidRequest, SyncError } from '../core/errors.ts';
import { fault } from '../core/faults.ts';
import { clientCounters } from './counters.ts';
import { expireClient, expireStaleClients } from './expiry.ts';

export const CONTROL_PREFIX = '/__test/';

export interface ControlOptions {
  pool: Pool;
  staleClientIntervalMs: number;
  /** The push entry point for a caller holding an open transaction on `db` (given by the entry point that wires the server). */
  callerPush?: CallerPush;
  /** The capture worker, when this process runs one: a scenario waits on it instead of sleeping. */
  capture?: CaptureHandle;
}

const UTC_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** A UTC instant `YYYY-MM-DDTHH:MM:SS[.fraction]Z` naming a real calendar second, or undefined. */
function utcInstant(text: unknown): Date | undefined {
  if (typeof text !== 'string' || !UTC_INSTANT.test(text)) return undefined;
  const date = new Date(text);
  // Date rolls 30 February over to March; the round trip catches it.
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 19) === text.slice(0, 19) ? date : undefined;
}

export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

const notFound = () => new SyncError('invalid_request', 'no such endpoint', {}, 404);

function sendJson(res: ServerResponse, value: unknown, status = 200, extra: Record<string, string> = {}): void {
  const bytes = Buffer.from(JSON.stringify(value), 'utf8');
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(bytes.length), ...extra });
  res.end(bytes);
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  checkContentType(req);
  return parseBody(await readBody(req)) as Record<string, unknown>;
}

function exactMembers(value: Record<string, unknown>, names: readonly string[]): void {
  const keys = Object.keys(value);
  if (keys.length !== names.length || !names.every((n) => keys.includes(n))) throw invalidRequest(`members must be exactly: ${names.join(', ') || '(none)'}`);
}

/** The body `{ "timeout_ms": <positive integer> }` of a control that waits. */
async function timeoutOf(req: IncomingMessage): Promise<number> {
  const value = await body(req);
  exactMembers(value, ['timeout_ms']);
  const ms = value.timeout_ms;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms <= 0) throw invalidRequest('timeout_ms must be a positive integer');
  return ms;
}

/**
 * An application's transaction around the push entry point: BEGIN, the
 * caller's own statements, then the push; COMMIT when the push returns,
 * ROLLBACK when anything fails. The answer names the SQLSTATE of a failure.
 */
export type CallerPush = (db: PoolClient, userId: string, request: unknown) => Promise<{ body: string }>;

async function pushInCallerSession(pool: Pool, callerPush: CallerPush, statements: string, userId: string, request: unknown): Promise<Record<string, unknown>> {
  const db = await pool.connect();
  try {
    await db.query('BEGIN');
    try {
      if (statements.trim() !== '') await db.query(statements);
      const result = await callerPush(db, userId, request);
      await db.query('COMMIT');
      return { ok: true, body: result.body };
    } catch (e) {
      await db.query('ROLLBACK').catch(() => undefined);
      if (e instanceof SyncError) return { ok: false, error: e.body() };
      const { code, message } = e as { code?: unknown; message?: unknown };
      if (typeof code !== 'string') throw e;
      return { ok: false, sqlstate: code, message: String(message) };
    }
  } finally {
    db.release();
  }
}

function clientIdentity(value: Record<string, unknown>): { userId: string; clientId: string } {
  exactMembers(value, ['user_id', 'client_id']);
  const { user_id: userId, client_id: clientId } = value;
  if (typeof userId !== 'string' || userId === '' || typeof clientId !== 'string' || clientId === '') throw invalidRequest('user_id and client_id must be non-empty strings');
  return { userId, clientId };
}

const clockState = () => ({ now: serverClock.now().toISOString(), offset_ms: serverClock.offsetMs() });

type Control = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function createControls(options: ControlOptions): (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void> {
  const { pool, staleClientIntervalMs, capture, callerPush } = options;
  const worker = (): CaptureHandle => {
    if (capture === undefined) throw new SyncError('invalid_request', 'this server runs no capture worker', {}, 409);
    return capture;
  };
  /** A worker control takes an empty body and answers once the worker is in the new state. */
  const workerControl = (act: (w: CaptureHandle) => Promise<void>, state: string): { method: 'POST'; run: Control } => ({
    method: 'POST',
    run: async (req, res) => {
      exactMembers(await body(req), []);
      await act(worker());
      sendJson(res, { worker: state });
    },
  });
  const routes: Record<string, { method: 'GET' | 'POST'; run: Control }> = {
    '/__test/clock': { method: 'GET', run: async (_req, res) => sendJson(res, clockState()) },
    '/__test/clock/advance': {
      method: 'POST',
      run: async (req, res) => {
        const value = await body(req);
        exactMembers(value, ['milliseconds']);
        const ms = value.milliseconds;
        if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) throw invalidRequest('milliseconds must be a non-negative integer');
        advanceClock(ms);
        sendJson(res, clockState());
      },
    },
    '/__test/clock/set': {
      method: 'POST',
      run: async (req, res) => {
        const value = await body(req);
        exactMembers(value, ['now']);
        const now = utcInstant(value.now);
        if (now === undefined) throw invalidRequest('now must be a UTC instant YYYY-MM-DDTHH:MM:SS[.fraction]Z');
        setClock(now);
        sendJson(res, clockState());
      },
    },
    '/__test/clients/expire': {
      method: 'POST',
      run: async (req, res) => {
        const { userId, clientId } = clientIdentity(await body(req));
        const done = await expireClient(pool, userId, clientId);
        if (done === undefined) throw new SyncError('invalid_request', 'the server has no record of that client', {}, 404);
        sendJson(res, { expired: true, client_generation: done.client_generation });
      },
    },
    '/__test/clients/counters': {
      method: 'POST',
      run: async (req, res) => {
        const { set, ...identity } = await body(req);
        const { userId, clientId } = clientIdentity(identity);
        sendJson(res, await clientCounters(pool, userId, clientId, set));
      },
    },
    '/__test/clients/expire-stale': {
      method: 'POST',
      run: async (req, res) => {
        exactMembers(await body(req), []);
        const now = serverClock.now();
        const expired = await expireStaleClients(pool, now, staleClientIntervalMs);
        sendJson(res, { now: now.toISOString(), stale_client_interval_ms: staleClientIntervalMs, expired });
      },
    },
    '/__test/capture/catch-up': {
      method: 'POST',
      run: async (req, res) => {
        const ms = await timeoutOf(req);
        // Everything committed before this request is materialized and acknowledged when it answers.
        // A stopped or quarantine-blocked worker is refused at once (409) rather than waited on until the deadline.
        try {
          await worker().catchUp(ms);
        } catch (e) {
          if (e instanceof CaptureStopped || e instanceof CapturePoisoned) throw new SyncError('invalid_request', e.message, {}, 409);
          throw e;
        }
        sendJson(res, { caught_up: true });
      },
    },
    '/__test/capture/stop': workerControl((w) => w.pause(), 'stopped'),
    '/__test/capture/kill': workerControl((w) => w.kill(), 'killed'),
    '/__test/capture/start': workerControl((w) => w.resume(), 'running'),
    '/__test/capture/poison': workerControl(async (w) => w.armPoison(), 'poison_armed'),
    '/__test/capture/hold': workerControl(async (w) => w.armHold(), 'hold_armed'),
    '/__test/capture/held': {
      method: 'POST',
      run: async (req, res) => {
        const ms = await timeoutOf(req);
        // Answers once the worker waits at the armed hold, its materialization transaction open.
        try {
          await worker().awaitHold(ms);
        } catch (e) {
          throw new SyncError('invalid_request', (e as Error).message, {}, 409);
        }
        sendJson(res, { held: true });
      },
    },
    '/__test/capture/crash-at': {
      method: 'POST',
      run: async (req, res) => {
        const value = await body(req);
        exactMembers(value, ['point']);
        const point = CRASH_POINTS.find((p) => p === value.point);
        if (point === undefined) throw invalidRequest(`point must be one of ${CRASH_POINTS.join(', ')}`);
        worker().armCrash(point);
        sendJson(res, { crash_armed: point });
      },
    },
    '/__test/capture/reset': {
      method: 'POST',
      run: async (req, res) => {
        exactMembers(await body(req), []);
        // The operator's stream reset: answers once the new generation is active and the worker runs on its slot.
        const r = await worker().resetStream();
        sendJson(res, { reset_id: r.resetId, stream_generation: r.streamGeneration, slot: r.slot, generation_start_lsn: r.consistentPoint });
      },
    },
    '/__test/push/in-transaction': {
      method: 'POST',
      run: async (req, res) => {
        const value = await body(req);
        exactMembers(value, ['statements', 'user_id', 'request']);
        const { statements, user_id: userId, request } = value;
        if (typeof statements !== 'string' || typeof userId !== 'string' || userId === '') throw invalidRequest('statements and user_id must be strings');
        if (callerPush === undefined) throw new SyncError('invalid_request', 'this server has no push entry point for callers', {}, 409);
        sendJson(res, await pushInCallerSession(pool, callerPush, statements, userId, request));
      },
    },
    '/__test/clients/retire': {
      method: 'POST',
      run: async (req, res) => {
        const { userId, clientId } = clientIdentity(await body(req));
        // The operator's SQL entry point, so retirement has one implementation.
        const { rows } = await pool.query<{ id: string }>(fault('retire-without-marker') ? 'WITH m AS (DELETE FROM synchro.push_mutations WHERE user_id = $1 AND client_id = $2) DELETE FROM synchro.push_batches WHERE user_id = $1 AND client_id = $2 RETURNING NULL::text AS id' : 'SELECT synchro.synchro_retire_client($1, $2) AS id', [userId, clientId]); // fault: server:retire-without-marker
        sendJson(res, { retirement_id: rows[0]?.id });
      },
    },
  };
  return async (req, res, path) => {
    const route = routes[path];
    if (route === undefined || !isLoopback(req.socket.remoteAddress)) throw notFound();
    if (req.method !== route.method) {
      sendJson(res, new SyncError('invalid_request', 'method not allowed', {}, 405).body(), 405, { Allow: route.method });
      return;
    }
    await route.run(req, res);
  };
}
