/**
 * The reference server's side of the Synchro control protocol
 * (docs/control-protocol.md, schemas/adapter/control/). Everything is under
 * `/__control/`: a capabilities document at `GET /__control/capabilities`
 * and one POST (or GET) per control. The controls exist only when the server
 * was started with `--test-controls`, answer only loopback peers (anyone
 * else gets the same 404 as an unknown path), and change or read server state
 * a scenario cannot reach through the sync protocol: the capture worker, the
 * clock, client expiry and retirement, compaction, the server's log output,
 * readiness detail, seed export, the push entry point inside a caller's
 * transaction and a whole per-scenario reset.
 *
 * Failures answer the control protocol's own envelope
 * `{"error": {"code", "message", "control"}}`, never the sync protocol's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Pool, PoolClient } from 'pg';
import { checkContentType, parseBody, readBody } from '../core/body.ts';
import { type CaptureHandle, CapturePoisoned, CaptureStopped, CRASH_POINTS, HoldNotArmed, RESET_PHASES, ResetActivationRefused, type ResetPhase, type ResetProgress } from '../core/capture-control.ts';
import { advanceClock, serverClock, setClock } from '../core/clock.ts';
import { SyncError } from '../core/errors.ts';
import { fault } from '../core/faults.ts';
import type { RequestMetrics } from '../core/metrics.ts';
import { BOOTSTRAP_PHASES, BootstrapActivationRefused, type BootstrapHandle, type BootstrapProgress, NoBootstrap } from '../core/projection-bootstrap-control.ts';
import { clientCounters } from './counters.ts';
import { expireClient, expireStaleClients } from './expiry.ts';
import type { LogBuffer } from './log-buffer.ts';
import type { SeedSessions } from './seed-sessions.ts';
import { injectStoreFault, restoreStoreFaults, STORE_FAULTS, StoreFaultRefused } from './store-faults.ts';

export const CONTROL_PREFIX = '/__control/';
export const CONTROL_PROTOCOL = 'synchro-control';
export const CONTROL_PROTOCOL_VERSION = 1;

/** The server state the controls act on; read on every call, since a reset replaces it. */
export interface ControlTarget {
  pool: Pool;
  /** The capture worker, when this server runs one. */
  capture?: CaptureHandle;
  /** The Class 3 projection bootstrap coordinator (beside a capture worker). */
  bootstrap?: BootstrapHandle;
}

/**
 * The push entry point for a caller holding an open transaction on `db`
 * (given by the entry point that wires the server); answers the push's body.
 */
export type CallerPush = (db: PoolClient, userId: string, request: unknown) => Promise<{ body: string }>;

/** One whole seed export in one transaction on `db`; a refusal of the request is `{ refused }`. */
export type SeedExport = (
  db: PoolClient,
  request: { pageLimit?: number; scopes?: string[] },
) => Promise<{ manifest: unknown; pages: unknown } | { refused: string }>;

export interface ControlOptions {
  target(): ControlTarget;
  staleClientIntervalMs: number;
  /** Offered as `push.in-transaction` when present. */
  callerPush?: CallerPush;
  /** Offered as `seed.export` when present (the seed handlers live beside, not below, the controls). */
  seedExport?: SeedExport;
  /** Offered as `seed.session.open`, `seed.session.call` and `seed.session.close` when present. */
  seedSessions?: SeedSessions;
  /** The server's own log lines, for `logs.mark` and `logs.since`. */
  logs: LogBuffer;
  /** The server's metrics, for `logs.metrics` (and the empty span list of `logs.spans`); absent, neither is offered. */
  metrics?: RequestMetrics;
  /** Returns the server to its freshly installed state; absent, `reset` is not offered. */
  reset?: () => Promise<void>;
}

/** A control that answers with an error of the control protocol. */
export class ControlError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, status: number, message: string) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

const invalid = (message: string) => new ControlError('invalid_request', 400, message);

const UTC_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** A UTC instant `YYYY-MM-DDTHH:MM:SS[.fraction]Z` naming a real calendar second, or undefined. */
function utcInstant(text: unknown): Date | undefined {
  if (typeof text !== 'string' || !UTC_INSTANT.test(text)) return undefined;
  const date = new Date(text);
  // Date rolls 30 February over to March; the round trip catches it.
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 19) === text.slice(0, 19) ? date : undefined;
}

/** A production environment never serves the control protocol, whatever the flags say. */
export function isProductionEnvironment(env: NodeJS.ProcessEnv): boolean {
  return env.NODE_ENV === 'production' || env.SYNCHRO_ENV === 'production';
}

export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

function sendJson(res: ServerResponse, value: unknown, status = 200, extra: Record<string, string> = {}): void {
  const bytes = Buffer.from(JSON.stringify(value), 'utf8');
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(bytes.length), ...extra });
  res.end(bytes);
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  try {
    checkContentType(req);
    const value = parseBody(await readBody(req));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('the request body must be a JSON object');
    return value as Record<string, unknown>;
  } catch (e) {
    if (e instanceof SyncError) throw invalid(e.message);
    throw e;
  }
}

/** Checks that `value` has no members beyond `allowed` and all of `required`. */
/** A projection bootstrap's progress as a control answers it. */
function bootstrapAnswer(p: BootstrapProgress): Record<string, unknown> {
  return { bootstrap_id: p.bootstrapId, lifecycle: p.lifecycle, slot: p.slot, ...(p.reason === undefined ? {} : { reason: p.reason }) };
}

/** A reset's progress as a control answers it. */
function resetAnswer(p: ResetProgress): Record<string, unknown> {
  return {
    reset_id: p.resetId,
    lifecycle: p.lifecycle,
    slot: p.slot,
    ...(p.reason === undefined ? {} : { reason: p.reason }),
    ...(p.result === undefined ? {} : { stream_generation: p.result.streamGeneration, generation_start_lsn: p.result.consistentPoint }),
  };
}

function members(value: Record<string, unknown>, required: readonly string[], optional: readonly string[] = []): void {
  const keys = Object.keys(value);
  const extra = keys.filter((k) => !required.includes(k) && !optional.includes(k));
  const missing = required.filter((k) => !keys.includes(k));
  if (extra.length > 0 || missing.length > 0) {
    const allowed = [...required, ...optional.map((o) => `${o} (optional)`)];
    throw invalid(`members must be: ${allowed.join(', ') || '(none)'}${extra.length > 0 ? `; unexpected ${extra.join(', ')}` : ''}${missing.length > 0 ? `; missing ${missing.join(', ')}` : ''}`);
  }
}

function clientIdentity(value: Record<string, unknown>, optional: readonly string[] = []): { userId: string; clientId: string } {
  members(value, ['user_id', 'client_id'], optional);
  const { user_id: userId, client_id: clientId } = value;
  if (typeof userId !== 'string' || userId === '' || typeof clientId !== 'string' || clientId === '') throw invalid('user_id and client_id must be non-empty strings');
  // PostgreSQL text cannot hold U+0000: refused here rather than failing in the database.
  if (userId.includes('\u0000') || clientId.includes('\u0000')) throw invalid('user_id and client_id must not contain U+0000');
  return { userId, clientId };
}

/** The body `{ "timeout_ms": <positive integer> }` of a control that waits. */
async function timeoutOf(req: IncomingMessage): Promise<number> {
  const value = await body(req);
  members(value, ['timeout_ms']);
  const ms = value.timeout_ms;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms <= 0) throw invalid('timeout_ms must be a positive integer');
  return ms;
}

/**
 * An application's transaction around the push entry point: BEGIN, the
 * caller's own statements, then the push; COMMIT when the push returns,
 * ROLLBACK when anything fails. The answer names the SQLSTATE of a SQL
 * failure, or carries the sync protocol's error body of a refusal.
 */
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

const unknownClient = () => new ControlError('not_found', 404, 'the server has no record of that client');

const clockState = () => ({ now: serverClock.now().toISOString(), offset_ms: serverClock.offsetMs() });

/** Readiness ages what the database stamped against the server's clock (sql/054), so a move is written there too. */
async function recordClock(db: Pool): Promise<void> {
  await db.query('UPDATE synchro.server_clock SET offset_ms = $1', [serverClock.offsetMs()]);
}

type Run = (req: IncomingMessage) => Promise<unknown>;
interface Control {
  method: 'GET' | 'POST';
  path: string;
  run: Run;
}

/** Compacts every scope with retained effects; the deleted effects per scope. */
async function compactScopes(pool: Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ scope_id: string; deleted: string }>(
    'SELECT scope_id, synchro.synchro_compact_scope(scope_id)::text AS deleted FROM (SELECT DISTINCT scope_id FROM synchro.scope_effects) s ORDER BY scope_id',
  );
  return Object.fromEntries(rows.map((row) => [row.scope_id, Number(row.deleted)]));
}

async function sqlValue(pool: Pool, sql: string): Promise<unknown> {
  const { rows } = await pool.query<{ r: unknown }>(sql);
  return rows[0]?.r;
}

/** The control table: each control's name (as the capabilities document lists it), method, path and behaviour. */
function controlTable(options: ControlOptions): Record<string, Control> {
  const { target, staleClientIntervalMs, logs } = options;
  const pool = () => target().pool;
  const worker = (): CaptureHandle => {
    const capture = target().capture;
    if (capture === undefined) throw new ControlError('not_offered', 409, 'this server runs no capture worker');
    return capture;
  };
  const coordinator = (): BootstrapHandle => {
    const bootstrap = target().bootstrap;
    if (bootstrap === undefined) throw new ControlError('not_offered', 409, 'this server runs no projection bootstrap coordinator (it needs a capture worker)');
    return bootstrap;
  };
  /** A bootstrap control; an activation refusal is 409 `refused`, nothing to drive is 409 `no_bootstrap`. */
  const bootstrapControl = (path: string, act: (b: BootstrapHandle, value: Record<string, unknown>) => Promise<Record<string, unknown>>, optional: readonly string[] = []): Control => ({
    method: 'POST',
    path,
    run: async (req) => {
      const value = await body(req);
      members(value, [], optional);
      try {
        return await act(coordinator(), value);
      } catch (e) {
        if (e instanceof BootstrapActivationRefused) throw new ControlError('refused', 409, `activation refused: ${e.message}`);
        if (e instanceof NoBootstrap) throw new ControlError('no_bootstrap', 409, e.message);
        throw e;
      }
    },
  });
  /** A worker control takes an empty body and answers once the worker is in the new state. */
  const workerControl = (path: string, act: (w: CaptureHandle) => Promise<void>, state: string): Control => ({
    method: 'POST',
    path,
    run: async (req) => {
      members(await body(req), []);
      await act(worker());
      return { worker: state };
    },
  });
  /** `hold_at` (optional) names the phase to stop at once durable; without it the reset runs through activation. */
  const resetDriveControl = (path: string, start: boolean): Control => ({
    method: 'POST',
    path,
    run: async (req) => {
      const value = await body(req);
      members(value, [], ['hold_at']);
      const holdAt = RESET_PHASES.find((p) => p === value.hold_at);
      if (value.hold_at !== undefined && holdAt === undefined) throw invalid(`hold_at must be one of ${RESET_PHASES.join(', ')}`);
      try {
        return resetAnswer(await worker().driveReset({ start, holdAt: holdAt as ResetPhase | undefined }));
      } catch (e) {
        if (e instanceof ResetActivationRefused) throw new ControlError('refused', 409, `activation refused: ${e.message}`);
        throw e;
      }
    },
  });
  const table: Record<string, Control> = {
    'capture.await': {
      method: 'POST',
      path: 'capture/await',
      run: async (req) => {
        const ms = await timeoutOf(req);
        // Everything committed before this request is materialized and acknowledged when it answers.
        // A stopped or quarantine-blocked worker is refused at once rather than waited on until the deadline.
        try {
          await worker().catchUp(ms);
        } catch (e) {
          if (e instanceof CaptureStopped) throw new ControlError('capture_stopped', 409, e.message);
          if (e instanceof CapturePoisoned) throw new ControlError('capture_blocked', 409, e.message);
          if (e instanceof ControlError) throw e;
          throw new ControlError('deadline_exceeded', 504, (e as Error).message);
        }
        return { materialized: true };
      },
    },
    'capture.stop': workerControl('capture/stop', (w) => w.pause(), 'stopped'),
    'capture.kill': workerControl('capture/kill', (w) => w.kill(), 'killed'),
    'capture.restart': workerControl('capture/restart', (w) => w.resume(), 'running'),
    'capture.poison': workerControl('capture/poison', async (w) => w.armPoison(), 'poison_armed'),
    'capture.hold': workerControl('capture/hold', async (w) => w.armHold(), 'hold_armed'),
    'capture.held': {
      method: 'POST',
      path: 'capture/held',
      run: async (req) => {
        const ms = await timeoutOf(req);
        // Answers once the worker waits at the armed hold, its materialization transaction open.
        const capture = worker();
        try {
          await capture.awaitHold(ms);
        } catch (e) {
          if (e instanceof HoldNotArmed) throw new ControlError('not_offered', 409, e.message);
          throw new ControlError('deadline_exceeded', 504, (e as Error).message);
        }
        return { held: true };
      },
    },
    'capture.crash-at': {
      method: 'POST',
      path: 'capture/crash-at',
      run: async (req) => {
        const value = await body(req);
        members(value, ['point']);
        const point = CRASH_POINTS.find((p) => p === value.point);
        if (point === undefined) throw invalid(`point must be one of ${CRASH_POINTS.join(', ')}`);
        worker().armCrash(point);
        return { crash_armed: point };
      },
    },
    'capture.reset-stream': {
      method: 'POST',
      path: 'capture/reset-stream',
      run: async (req) => {
        members(await body(req), []);
        // The operator's stream reset: answers once the new generation is active and the worker runs on its slot.
        const r = await worker().resetStream();
        return { reset_id: r.resetId, stream_generation: r.streamGeneration, slot: r.slot, generation_start_lsn: r.consistentPoint };
      },
    },
    // The operator's reset phase by phase: start (or continue) it up to a held phase, or through activation.
    'capture.reset-start': resetDriveControl('capture/reset-start', true),
    'capture.reset-continue': resetDriveControl('capture/reset-continue', false),
    'capture.reset-abort': {
      method: 'POST',
      path: 'capture/reset-abort',
      run: async (req) => {
        members(await body(req), []);
        const p = await worker().abortReset();
        return p === undefined ? { lifecycle: null } : resetAnswer(p);
      },
    },
    'capture.reset-kill-operator': {
      method: 'POST',
      path: 'capture/reset-kill-operator',
      run: async (req) => {
        members(await body(req), []);
        return { terminated: await worker().killResetOperator() };
      },
    },
    // An operator's damage to one captured effect, and its exact repair (controls/store-faults.ts).
    'capture.store-fault': {
      method: 'POST',
      path: 'capture/store-fault',
      run: async (req) => {
        const value = await body(req);
        members(value, ['fault', 'table', 'scope', 'pk']);
        const kind = STORE_FAULTS.find((f) => f === value.fault);
        if (kind === undefined) throw invalid(`fault must be one of ${STORE_FAULTS.join(', ')}`);
        if (typeof value.table !== 'string' || typeof value.scope !== 'string') throw invalid('table and scope must be strings');
        if (typeof value.pk !== 'string' && !Number.isSafeInteger(value.pk)) throw invalid('pk must be a string or an integer');
        try {
          return { fault: kind, ...(await injectStoreFault(pool(), { fault: kind, tableId: value.table, scope: value.scope, pk: String(value.pk) })) };
        } catch (e) {
          if (e instanceof StoreFaultRefused) throw new ControlError('refused', 409, e.message);
          throw e;
        }
      },
    },
    'capture.store-restore': {
      method: 'POST',
      path: 'capture/store-restore',
      run: async (req) => {
        members(await body(req), []);
        return { restored: await restoreStoreFaults(pool()) };
      },
    },
    // The Class 3 projection bootstrap, phase by phase (capture/projection-bootstrap.ts).
    'bootstrap.hold': bootstrapControl(
      'bootstrap/hold',
      async (b, value) => {
        const phase = BOOTSTRAP_PHASES.find((p) => p === value.phase);
        if (phase === undefined) throw invalid(`phase must be one of ${BOOTSTRAP_PHASES.join(', ')}`);
        if (value.past_durable_barrier !== undefined && typeof value.past_durable_barrier !== 'boolean') throw invalid('past_durable_barrier must be a boolean');
        if (value.past_durable_barrier === true && phase !== 'catching_up') throw invalid('past_durable_barrier applies to the phase catching_up only');
        return bootstrapAnswer(await b.hold(phase, { pastDurableBarrier: value.past_durable_barrier === true }));
      },
      ['phase', 'past_durable_barrier'],
    ),
    'bootstrap.release': bootstrapControl('bootstrap/release', async (b) => bootstrapAnswer(await b.release())),
    'bootstrap.resume': bootstrapControl('bootstrap/resume', async (b) => bootstrapAnswer(await b.release())),
    'bootstrap.kill': bootstrapControl('bootstrap/kill', async (b) => ({ terminated: await b.kill() })),
    'bootstrap.activate': bootstrapControl('bootstrap/activate', async (b) => bootstrapAnswer(await b.activate())),
    'clock.now': { method: 'GET', path: 'clock', run: async () => clockState() },
    'clock.advance': {
      method: 'POST',
      path: 'clock/advance',
      run: async (req) => {
        const value = await body(req);
        members(value, ['milliseconds']);
        const ms = value.milliseconds;
        if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) throw invalid('milliseconds must be a non-negative integer');
        advanceClock(ms);
        await recordClock(pool());
        return clockState();
      },
    },
    'clock.set': {
      method: 'POST',
      path: 'clock/set',
      run: async (req) => {
        const value = await body(req);
        members(value, ['now']);
        const now = utcInstant(value.now);
        if (now === undefined) throw invalid('now must be a UTC instant YYYY-MM-DDTHH:MM:SS[.fraction]Z');
        setClock(now);
        await recordClock(pool());
        return clockState();
      },
    },
    'clients.expire': {
      method: 'POST',
      path: 'clients/expire',
      run: async (req) => {
        const { userId, clientId } = clientIdentity(await body(req));
        const done = await expireClient(pool(), userId, clientId);
        if (done === undefined) throw unknownClient();
        return { expired: true, client_generation: done.client_generation };
      },
    },
    'clients.retire': {
      method: 'POST',
      path: 'clients/retire',
      run: async (req) => {
        const { userId, clientId } = clientIdentity(await body(req));
        // The operator's SQL entry point, so retirement has one implementation.
        const { rows } = await pool().query<{ id: string }>(fault('retire-without-marker') ? 'WITH m AS (DELETE FROM synchro.push_mutations WHERE user_id = $1 AND client_id = $2), b AS (DELETE FROM synchro.push_batches WHERE user_id = $1 AND client_id = $2) SELECT gen_random_uuid()::text AS id' : 'SELECT synchro.synchro_retire_client($1, $2) AS id', [userId, clientId]); // fault: server:retire-without-marker
        return { retirement_id: rows[0]?.id };
      },
    },
    'clients.run-expiry': {
      method: 'POST',
      path: 'clients/run-expiry',
      run: async (req) => {
        members(await body(req), []);
        const now = serverClock.now();
        const expired = await expireStaleClients(pool(), now, staleClientIntervalMs);
        return { now: now.toISOString(), stale_client_interval_ms: staleClientIntervalMs, expired };
      },
    },
    'clients.counters': {
      method: 'POST',
      path: 'clients/counters',
      run: async (req) => {
        const value = await body(req);
        const { userId, clientId } = clientIdentity(value, ['set']);
        try {
          return await clientCounters(pool(), userId, clientId, value.set);
        } catch (e) {
          if (e instanceof SyncError) throw e.status === 404 ? unknownClient() : invalid(e.message);
          throw e;
        }
      },
    },
    'compaction.run': {
      method: 'POST',
      path: 'compaction/run',
      run: async (req) => {
        members(await body(req), []);
        // Expiry runs first, as a retention job does: expired clients no longer hold a scope's floor back.
        const expired = await expireStaleClients(pool(), serverClock.now(), staleClientIntervalMs);
        return { expired, deleted: await compactScopes(pool()) };
      },
    },
    'logs.mark': {
      method: 'POST',
      path: 'logs/mark',
      run: async (req) => {
        members(await body(req), []);
        return { mark: logs.mark() };
      },
    },
    'logs.since': {
      method: 'POST',
      path: 'logs/since',
      run: async (req) => {
        const value = await body(req);
        members(value, ['mark']);
        const mark = value.mark;
        if (typeof mark !== 'number' || !Number.isSafeInteger(mark) || mark < 0) throw invalid('mark must be a non-negative integer returned by logs.mark');
        return logs.since(mark);
      },
    },
    'inspect.readiness': { method: 'GET', path: 'inspect/readiness', run: async () => ({ readiness: await sqlValue(pool(), 'SELECT synchro.synchro_readiness() AS r') }) },
    'inspect.health-detail': { method: 'GET', path: 'inspect/health-detail', run: async () => ({ health_detail: await sqlValue(pool(), 'SELECT synchro.synchro_health_detail() AS r') }) },
  };
  if (options.metrics !== undefined) {
    const metrics = options.metrics;
    table['logs.metrics'] = { method: 'GET', path: 'logs/metrics', run: async () => ({ text: metrics.text() }) };
    // The reference exports no trace spans, so it has none to hand over (decision 208).
    table['logs.spans'] = { method: 'GET', path: 'logs/spans', run: async () => ({ spans: [] }) };
  }
  if (options.seedExport !== undefined) {
    const seedExport = options.seedExport;
    table['seed.export'] = {
      method: 'POST',
      path: 'seed/export',
      run: async (req) => {
        const value = await body(req);
        members(value, [], ['page_limit', 'scopes']);
        const { page_limit: pageLimit, scopes } = value;
        if (pageLimit !== undefined && (typeof pageLimit !== 'number' || !Number.isSafeInteger(pageLimit) || pageLimit <= 0)) throw invalid('page_limit must be a positive integer');
        if (scopes !== undefined && (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string'))) throw invalid('scopes must be an array of scope ids');
        // One connection and one transaction for the whole export, as the seed sheet asks.
        const db = await pool().connect();
        try {
          const result = await seedExport(db, { ...(pageLimit === undefined ? {} : { pageLimit: pageLimit as number }), ...(scopes === undefined ? {} : { scopes: scopes as string[] }) });
          if ('refused' in result) {
            await db.query('ROLLBACK').catch(() => undefined);
            throw new ControlError('refused', 422, result.refused);
          }
          return { manifest: result.manifest, pages: result.pages };
        } catch (e) {
          await db.query('ROLLBACK').catch(() => undefined);
          throw e;
        } finally {
          db.release();
        }
      },
    };
  }
  if (options.seedSessions !== undefined) Object.assign(table, seedSessionControls(options.seedSessions, pool));
  if (options.callerPush !== undefined) {
    const callerPush = options.callerPush;
    table['push.in-transaction'] = {
      method: 'POST',
      path: 'push/in-transaction',
      run: async (req) => {
        const value = await body(req);
        members(value, ['statements', 'user_id', 'request']);
        const { statements, user_id: userId, request } = value;
        if (typeof statements !== 'string' || typeof userId !== 'string' || userId === '') throw invalid('statements must be a string and user_id a non-empty string');
        return pushInCallerSession(pool(), callerPush, statements, userId, request);
      },
    };
  }
  if (options.reset !== undefined) {
    const reset = options.reset;
    table.reset = {
      method: 'POST',
      path: 'reset',
      run: async (req) => {
        members(await body(req), []);
        // A session's connection belongs to the state the reset replaces.
        options.seedSessions?.closeAll();
        await reset();
        return { reset: true, log_mark: logs.mark() };
      },
    };
  }
  return table;
}

const unsignedOrdinal = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** The seed session controls: one connection per session, one seed call at a time on it. */
function seedSessionControls(sessions: SeedSessions, pool: () => Pool): Record<string, Control> {
  const session = (value: Record<string, unknown>) => {
    if (typeof value.session !== 'string' || !sessions.has(value.session)) throw invalid('session must name an open seed session');
    return value.session;
  };
  return {
    'seed.session.open': {
      method: 'POST',
      path: 'seed/session/open',
      run: async (req) => {
        members(await body(req), []);
        return { session: await sessions.open(pool()) };
      },
    },
    'seed.session.call': {
      method: 'POST',
      path: 'seed/session/call',
      run: async (req) => {
        const value = await body(req);
        members(value, ['session'], ['statement', 'manifest', 'page']);
        const id = session(value);
        const given = ['statement', 'manifest', 'page'].filter((k) => value[k] !== undefined);
        if (given.length !== 1) throw invalid('give exactly one of statement, manifest and page');
        if (value.statement !== undefined) {
          if (typeof value.statement !== 'string') throw invalid('statement must be a string');
          return sessions.call(id, { statement: value.statement });
        }
        if (value.manifest !== undefined) {
          const manifest = value.manifest as Record<string, unknown>;
          if (typeof manifest !== 'object' || manifest === null) throw invalid('manifest must be an object');
          members(manifest, [], ['page_limit']);
          if (manifest.page_limit !== undefined && !Number.isSafeInteger(manifest.page_limit)) throw invalid('manifest.page_limit must be an integer');
          return sessions.call(id, { manifest: manifest.page_limit === undefined ? {} : { pageLimit: manifest.page_limit as number } });
        }
        const page = value.page as Record<string, unknown>;
        if (typeof page !== 'object' || page === null) throw invalid('page must be an object');
        members(page, ['scope', 'page_token', 'continuation_receipt', 'expected_row_ordinal'], ['limit']);
        const { scope, page_token: pageToken, continuation_receipt: receipt, expected_row_ordinal: ordinal, limit } = page;
        if (typeof scope !== 'string' || typeof pageToken !== 'string' || (receipt !== null && typeof receipt !== 'string') || !unsignedOrdinal(ordinal) || (limit !== undefined && !Number.isSafeInteger(limit))) {
          throw invalid('page needs scope and page_token strings, continuation_receipt a string or null, expected_row_ordinal a non-negative integer and limit an integer');
        }
        return sessions.call(id, { page: { scope, pageToken, continuationReceipt: receipt as string | null, expectedRowOrdinal: ordinal as number, limit: limit as number | undefined } });
      },
    },
    'seed.session.close': {
      method: 'POST',
      path: 'seed/session/close',
      run: async (req) => {
        const value = await body(req);
        members(value, ['session']);
        if (typeof value.session !== 'string') throw invalid('session must be a string');
        return { closed: sessions.close(value.session) };
      },
    },
  };
}

export function createControls(options: ControlOptions): (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void> {
  const table = controlTable(options);
  const byPath = new Map(Object.entries(table).map(([name, control]) => [`${CONTROL_PREFIX}${control.path}`, { name, ...control }]));
  const capabilities = {
    protocol: CONTROL_PROTOCOL,
    version: CONTROL_PROTOCOL_VERSION,
    implementation: 'synchro-reference',
    controls: Object.fromEntries(Object.entries(table).map(([name, control]) => [name, { method: control.method, path: control.path }])),
  };
  return async (req, res, path) => {
    // Not loopback: indistinguishable from a server without controls.
    if (!isLoopback(req.socket.remoteAddress)) throw new SyncError('invalid_request', 'no such endpoint', {}, 404);
    const fail = (e: ControlError, control: string | null, extra: Record<string, string> = {}) => sendJson(res, { error: { code: e.code, message: e.message, control } }, e.status, extra);
    if (path === `${CONTROL_PREFIX}capabilities`) {
      if (req.method !== 'GET') return fail(new ControlError('method_not_allowed', 405, 'GET only'), null, { Allow: 'GET' });
      return sendJson(res, capabilities);
    }
    const control = byPath.get(path);
    if (control === undefined) return fail(new ControlError('unknown_control', 404, `no control at ${path}; GET ${CONTROL_PREFIX}capabilities lists them`), null);
    if (req.method !== control.method) return fail(new ControlError('method_not_allowed', 405, `${control.method} only`), control.name, { Allow: control.method });
    try {
      sendJson(res, await control.run(req));
    } catch (e) {
      if (e instanceof ControlError) return fail(e, control.name);
      options.logs.write(`control ${control.name} failed: ${(e as { code?: string }).code ?? (e as Error).name}: ${(e as Error).message}`);
      return fail(new ControlError('failed', 500, (e as Error).message), control.name);
    }
  };
}
