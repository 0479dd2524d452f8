/**
 * What the server says about its readiness: the public `GET /ready` answer
 * (asked through the proxy, so it is schema-checked and recorded like any
 * protocol answer) and the detailed health that server inspection reads
 * (`inspect.healthDetail()`, the extension's `synchro_health_detail()`).
 *
 * A break or a repair takes effect when the server next looks, not at the
 * instant the harness changed something, so the waits here ask again until
 * the answer is the expected one or the deadline passes; the caller then
 * asserts on the last answer, which fails when the server never got there.
 */
import { type Reply, readReply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';

/** How long a readiness answer may take to follow a change (well inside a scenario's deadline). */
export const SETTLE_MS = 10_000;

/** The checks ADR 001's readiness requires, every one of which must be "ok" for ready. */
export const REQUIRED_CHECKS = [
  'database_contract',
  'registry_generation',
  'schema_generation',
  'relation_identity',
  'publication',
  'capture_triggers',
  'replication_slot',
  'stream_reset',
  'poison',
  'materialization_progress',
  'worker',
  'heartbeat',
  'wal_byte_lag',
  'wal_time_lag',
] as const;

/** One `GET /ready` through the proxy, recorded as the scenario's last response. */
export async function requestReady(world: SyncWorld, options: { query?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const proxy = await world.proxy();
  const response = await fetch(`${proxy.url}/ready${options.query ?? ''}`, { headers: options.headers ?? {}, signal: AbortSignal.timeout(world.deadlineMs) });
  const reply = await readReply('ready', response, '');
  world.recordReply(reply);
  return reply;
}

/** Asks `GET /ready` until it answers `status` or SETTLE_MS passes; returns the last answer. */
export async function readinessSettledAt(world: SyncWorld, status: number): Promise<Reply> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const reply = await requestReady(world);
    if (reply.status === status || Date.now() > deadline) return reply;
  }
}

export interface CheckResult {
  state?: unknown;
  reason?: unknown;
}

export interface HealthDetail {
  ready?: unknown;
  checks?: Record<string, CheckResult>;
  observations?: Record<string, unknown>;
}

/** The detailed health as server inspection reads it. */
export async function healthDetail(world: SyncWorld): Promise<HealthDetail> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read the health detail`);
  const detail = await server.inspect.healthDetail();
  if (detail === null || typeof detail !== 'object' || Array.isArray(detail)) throw new Error(`server inspection answered a health detail that is not an object: ${JSON.stringify(detail)}`);
  return detail as HealthDetail;
}

/** Reads the health detail until `settled` holds or SETTLE_MS passes; returns the last one read. */
export async function healthSettled(world: SyncWorld, settled: (detail: HealthDetail) => boolean): Promise<HealthDetail> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const detail = await healthDetail(world);
    if (settled(detail) || Date.now() > deadline) return detail;
  }
}

/** The state of check `name` in `detail`, or undefined when the detail has no such check. */
export function stateOf(detail: HealthDetail, name: string): unknown {
  return detail.checks?.[name]?.state;
}

/** A state to force a check into; `absent` removes the check from the detail. */
export type ForcedState = 'ok' | 'failed' | 'unknown' | 'absent';

/**
 * Forces every required check to the given state through the reference's
 * certification seam `synchro.health_check_overrides` (decision 218), so the
 * outcome depends on the forced map alone.
 */
export async function forceChecks(world: SyncWorld, states: Record<string, ForcedState>): Promise<void> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to force check states`);
  const names = Object.keys(states);
  await server.sourceSql.query('DELETE FROM synchro.health_check_overrides');
  await server.sourceSql.query("INSERT INTO synchro.health_check_overrides (check_name, state) SELECT n, nullif(s, 'absent') FROM unnest($1::text[], $2::text[]) AS f(n, s)", [
    names,
    names.map((n) => states[n]),
  ]);
}
