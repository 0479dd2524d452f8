/**
 * What the client-lifecycle steps keep per scenario and how they look at a
 * client: its status and status log, its durable-state snapshot, its backoff
 * record, and the requests it sent as the proxy recorded them.
 */
import { FaultStage, type StageEndpoint, type StageRule } from '../../../harness/proxy/fault-stage.ts';
import type { WireProxy } from '../../../harness/proxy/proxy.ts';
import { type Exchange, isResponse } from '../../../harness/proxy/records.ts';
import type { ProcessClient, SyncWorld } from '../world.ts';
import { exchangesIn } from '../exchanges.ts';

/** The eleven client states and the fifty pairs the adjacency map allows, written out from the state map of the protocol. */
export const CLIENT_STATES = ['uninitialized', 'local_ready', 'connecting', 'schema_applying', 'ready', 'pushing', 'pulling', 'rebuilding', 'backoff', 'error', 'stopped'] as const;

const ADJACENCY: Record<string, readonly string[]> = {
  uninitialized: ['local_ready', 'error', 'stopped'],
  local_ready: ['connecting', 'error', 'stopped'],
  connecting: ['schema_applying', 'ready', 'backoff', 'error', 'stopped'],
  schema_applying: ['ready', 'rebuilding', 'error', 'stopped'],
  ready: ['connecting', 'pushing', 'pulling', 'rebuilding', 'error', 'stopped'],
  pushing: ['connecting', 'ready', 'pushing', 'pulling', 'backoff', 'error', 'stopped'],
  pulling: ['connecting', 'ready', 'pulling', 'rebuilding', 'backoff', 'error', 'stopped'],
  rebuilding: ['connecting', 'ready', 'rebuilding', 'backoff', 'error', 'stopped'],
  backoff: ['connecting', 'pushing', 'pulling', 'rebuilding', 'error', 'stopped'],
  error: ['local_ready', 'stopped'],
  stopped: ['local_ready'],
};

export function isLegalPair(from: string, to: string): boolean {
  return Object.hasOwn(ADJACENCY, from) && (ADJACENCY[from] ?? []).includes(to);
}

/** Which lifecycle state stands for work on each endpoint. */
export const OPERATION_OF: Record<StageEndpoint, string> = { connect: 'connecting', push: 'pushing', pull: 'pulling', rebuild: 'rebuilding' };

export interface Status {
  status: string;
  statusLog: string[];
  statusTimes?: number[];
  failure?: { operation: string; code: string; retryable: boolean; recoveryAction?: string };
}

export interface Backoff {
  operation: string;
  attempt: number;
  nextRetryAt: number;
}

export interface Snapshot {
  digest: string;
  sections?: Record<string, string>;
}

/** A failure the harness arranged for one request of a client. */
export interface ArrangedFailure {
  client: string;
  clientId: string;
  endpoint: StageEndpoint;
  nth: number;
  /** Number of proxy exchanges when it was arranged: the failed request comes after. */
  mark: number;
  retryAfterSeconds?: number;
  description: string;
  /** Epoch ms when it was arranged: no answer to the failed request can come earlier. */
  arrangedAt: number;
  /** The stage rule behind it, when the stage acts on the request. */
  rule?: StageRule;
}

export interface LifecycleState {
  stage?: FaultStage;
  snapshot?: Snapshot;
  failures: ArrangedFailure[];
  /** Start and end (epoch ms) of the last sync per client, and its proxy mark. */
  syncs: Map<string, { started: number; ended: number; mark: number }>;
  /** The first of those syncs, with the scopes still rebuild-required right after it. */
  firstSync: Map<string, { started: number; ended: number; mark: number; scopes: string[] }>;
  /** Status-log length per client when a later comparison starts (e.g. before a retry). */
  logMarks: Map<string, number>;
  /** Proxy mark when client was stopped, per client. */
  stoppedAt: Map<string, number>;
  /** Status log length right after a restart, per client. */
  restarted: Map<string, { mark: number }>;
}

const states = new WeakMap<SyncWorld, LifecycleState>();

export function lifecycle(world: SyncWorld): LifecycleState {
  let state = states.get(world);
  if (!state) {
    state = { failures: [], syncs: new Map(), firstSync: new Map(), logMarks: new Map(), stoppedAt: new Map(), restarted: new Map() };
    states.set(world, state);
  }
  return state;
}

/** The scenario's fault stage, placed behind the proxy on first use. */
export async function stageOf(world: SyncWorld): Promise<FaultStage> {
  const state = lifecycle(world);
  if (!state.stage) {
    const [server, proxy] = [await world.readyServer(), await world.proxy()];
    const stage = new FaultStage(server.baseUrl);
    await stage.start();
    proxy.retarget(stage.url);
    state.stage = stage;
  }
  return state.stage;
}

export async function stopStage(world: SyncWorld): Promise<void> {
  const state = states.get(world);
  await state?.stage?.stop();
}

/** The exchange a failure was applied to, once it happened. */
export function failedExchange(proxy: WireProxy, failure: ArrangedFailure): Exchange | undefined {
  return exchangesIn(proxy.exchanges, { clientId: failure.clientId, endpoints: [failure.endpoint], from: failure.mark, unfinished: true })[failure.nth - 1];
}

/** The earliest instant the client can have learnt of the failure. */
export function failureTime(world: SyncWorld, failure: ArrangedFailure): number {
  const hit = lifecycle(world).stage?.hits.find((h) => h.rule === failure.rule);
  return hit?.at ?? failure.arrangedAt;
}

export function lastFailure(world: SyncWorld, client?: string): ArrangedFailure {
  const failures = lifecycle(world).failures.filter((f) => client === undefined || f.client === client);
  const failure = failures[failures.length - 1];
  if (!failure) throw new Error(`no failure was arranged${client === undefined ? '' : ` for client "${client}"`} earlier in this scenario`);
  return failure;
}

export function statusOf(client: ProcessClient): Promise<Status> {
  return client.call<Status>('getStatus');
}

export async function backoffOf(client: ProcessClient): Promise<Backoff | null> {
  return (await client.call<{ backoff: Backoff | null }>('inspectBackoff')).backoff;
}

export function snapshotOf(client: ProcessClient): Promise<Snapshot> {
  return client.call<Snapshot>('snapshotDigest', { excludeBackoff: true });
}

/** Names of the sections that differ between two snapshots, for a readable failure. */
export function snapshotDifference(before: Snapshot, after: Snapshot): string {
  if (!before.sections || !after.sections) return 'the client reports no sections';
  const names = new Set([...Object.keys(before.sections), ...Object.keys(after.sections)]);
  const changed = [...names].filter((name) => before.sections?.[name] !== after.sections?.[name]);
  return changed.length === 0 ? 'no section differs' : `changed: ${changed.join(', ')}`;
}

/** Consecutive pairs of a status log. */
export function pairsOf(log: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 1; i < log.length; i += 1) pairs.push([log[i - 1] as string, log[i] as string]);
  return pairs;
}

/** Pairs of the form `"a" -> "b"` listed in a step text. */
export function parsePairs(text: string): [string, string][] {
  return [...text.matchAll(/"([^"]*)" -> "([^"]*)"/g)].map((m) => [m[1] ?? '', m[2] ?? '']);
}

export function quoted(text: string): string[] {
  return [...text.matchAll(/"([^"]*)"/g)].map((m) => m[1] ?? '');
}

export function deliveredStatus(exchange: Exchange): number | undefined {
  return isResponse(exchange.delivered) ? exchange.delivered.status : undefined;
}

/** Waits until `at` (epoch ms), failing when that is beyond the scenario's deadline. */
export async function waitUntil(at: number, deadlineMs: number, what: string): Promise<void> {
  const wait = at - Date.now();
  if (wait > deadlineMs) throw new Error(`${what} is ${wait} ms away, beyond the ${deadlineMs} ms deadline`);
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}
