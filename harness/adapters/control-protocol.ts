/**
 * The harness's side of the Synchro control protocol (docs/control-protocol.md):
 * reading a server's capabilities document at `<controlUrl>/capabilities`,
 * calling the controls it lists, and turning them into the adapter's
 * capability groups. Every request the harness sends and every answer it
 * receives is checked against its schema in schemas/adapter/control/, so a
 * server answering off-protocol fails the scenario with the control named,
 * never with a silently wrong value.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { describeErrors, SCHEMA_DIR } from '../json-schema.ts';
import type { ServerCapability } from './capabilities.ts';
import type { BootstrapDriveOutcome, BootstrapProgressAnswer, CaptureControl, ClientsControl, ResetDriveOutcome, ResetHoldPhase, ResetProgressAnswer, ClockControl, CompactionControl, LogsControl, PushEntryResult, SeedCallResult, SeedControl, SeedSession, SourceSqlControl, TraceSpan } from './server.ts';

export const CONTROL_SCHEMA_DIR = `${SCHEMA_DIR}adapter/control/`;
const SCHEMA_BASE = 'https://synchro.dev/schemas/control/v1/';
export const CONTROL_PROTOCOL_VERSION = 1;

/** The controls of protocol version 1, by name. */
export const CONTROL_NAMES = [
  'capture.await',
  'capture.stop',
  'capture.kill',
  'capture.restart',
  'capture.poison',
  'capture.crash-at',
  'capture.hold',
  'capture.held',
  'capture.reset-stream',
  'capture.reset-start',
  'capture.reset-continue',
  'capture.reset-abort',
  'capture.reset-kill-operator',
  'capture.store-fault',
  'capture.store-restore',
  'bootstrap.hold',
  'bootstrap.release',
  'bootstrap.resume',
  'bootstrap.kill',
  'bootstrap.activate',
  'clock.now',
  'clock.advance',
  'clock.set',
  'clients.expire',
  'clients.retire',
  'clients.run-expiry',
  'clients.counters',
  'compaction.run',
  'logs.mark',
  'logs.since',
  'logs.metrics',
  'logs.spans',
  'inspect.readiness',
  'inspect.health-detail',
  'seed.export',
  'seed.session.open',
  'seed.session.call',
  'seed.session.close',
  'push.in-transaction',
  'reset',
] as const;
export type ControlName = (typeof CONTROL_NAMES)[number];

/**
 * Optional controls that add to a capability backed by SQL (`databaseUrl`),
 * not to one the controls earn: `push.in-transaction` is
 * `sourceSql.pushInTransaction`.
 */
export const SQL_GROUP_CONTROLS: Partial<Record<ServerCapability, ControlName[]>> = { sourceSql: ['push.in-transaction'] };

/**
 * Which controls earn which capability. A group is offered when all of its
 * `needs` are; `optional` members add to it when present. `inspect` also
 * needs SQL (`databaseUrl`) for its queries; the controls only add the
 * readiness observations. `capture.hold` and `capture.held` count only as a
 * pair (one arms the hold, the other waits for it).
 */
export const CONTROL_GROUPS: Record<'capture' | 'clock' | 'clients' | 'compaction' | 'logs' | 'seed', { needs: ControlName[]; optional: ControlName[] }> = {
  capture: { needs: ['capture.await', 'capture.stop', 'capture.kill', 'capture.restart', 'capture.poison'], optional: ['capture.crash-at', 'capture.hold', 'capture.held', 'capture.reset-stream', 'capture.reset-start', 'capture.reset-continue', 'capture.reset-abort', 'capture.reset-kill-operator', 'capture.store-fault', 'capture.store-restore', 'bootstrap.hold', 'bootstrap.release', 'bootstrap.resume', 'bootstrap.kill', 'bootstrap.activate'] },
  clock: { needs: ['clock.now', 'clock.advance', 'clock.set'], optional: [] },
  clients: { needs: ['clients.expire', 'clients.retire', 'clients.run-expiry'], optional: ['clients.counters'] },
  compaction: { needs: ['compaction.run'], optional: [] },
  logs: { needs: ['logs.mark', 'logs.since'], optional: ['logs.metrics', 'logs.spans'] },
  seed: { needs: ['seed.export'], optional: ['seed.session.open', 'seed.session.call', 'seed.session.close'] },
};

let ajv: Ajv2020 | undefined;
function validator(file: string): ValidateFunction {
  if (ajv === undefined) {
    ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
    for (const name of readdirSync(CONTROL_SCHEMA_DIR).filter((f) => f.endsWith('.schema.json'))) ajv.addSchema(JSON.parse(readFileSync(`${CONTROL_SCHEMA_DIR}${name}`, 'utf8')) as object);
  }
  const validate = ajv.getSchema(`${SCHEMA_BASE}${file}`);
  if (validate === undefined) throw new Error(`schemas/adapter/control has no ${file}`);
  return validate;
}

/** The problems of `value` against one control schema, as "pointer message" lines; empty when it conforms. */
export function controlSchemaProblems(file: string, value: unknown): string[] {
  const validate = validator(file);
  return validate(value) ? [] : describeErrors(validate.errors ?? []).map((p) => `${p.pointer || '/'} ${p.message}`);
}

/** A control answered with the protocol's error envelope (or not at all as the protocol says). */
export class ControlCallError extends Error {
  readonly control: string;
  readonly code: string;
  readonly status: number;
  constructor(control: string, status: number, code: string, message: string) {
    super(`control ${control} answered ${status} ${code}: ${message}`);
    this.control = control;
    this.code = code;
    this.status = status;
  }
}

export interface CapabilitiesDocument {
  protocol: 'synchro-control';
  version: number;
  implementation?: string;
  controls: Partial<Record<ControlName, { method: 'GET' | 'POST'; path: string }>>;
}

const DISCOVERY_DEADLINE_MS = 10_000;

/** Reads and checks the capabilities document; a document the harness cannot use is an error saying why. */
export async function discoverControls(controlUrl: string): Promise<CapabilitiesDocument> {
  const base = controlUrl.replace(/\/$/, '');
  let response: Response;
  try {
    response = await fetch(`${base}/capabilities`, { signal: AbortSignal.timeout(DISCOVERY_DEADLINE_MS) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new Error(`GET ${base}/capabilities did not answer (${cause})`);
  }
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${base}/capabilities answered ${response.status}: ${text.slice(0, 300)}`);
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new Error(`GET ${base}/capabilities did not answer JSON: ${text.slice(0, 300)}`);
  }
  const version = (document as { version?: unknown } | null)?.version;
  if (typeof version === 'number' && version !== CONTROL_PROTOCOL_VERSION) throw new Error(`the server speaks control protocol version ${version}; this harness speaks version ${CONTROL_PROTOCOL_VERSION}`);
  const problems = controlSchemaProblems('capabilities.schema.json', document);
  if (problems.length > 0) throw new Error(`the capabilities document at ${base}/capabilities does not follow schemas/adapter/control/capabilities.schema.json: ${problems.join('; ')}`);
  return document as CapabilitiesDocument;
}

/** Calls the controls a capabilities document lists, checking both directions against the schemas. */
export class ControlClient {
  readonly #base: string;
  readonly document: CapabilitiesDocument;

  constructor(controlUrl: string, document: CapabilitiesDocument) {
    this.#base = controlUrl.replace(/\/$/, '');
    this.document = document;
  }

  offers(name: ControlName): boolean {
    return this.document.controls[name] !== undefined;
  }

  offersAll(names: readonly ControlName[]): boolean {
    return names.every((name) => this.offers(name));
  }

  async call<T = Record<string, unknown>>(name: ControlName, body?: Record<string, unknown>, timeoutMs = 60_000): Promise<T> {
    const entry = this.document.controls[name];
    if (entry === undefined) throw new Error(`the server's capabilities document does not offer control ${name}`);
    if (entry.method === 'POST') {
      const problems = controlSchemaProblems(`${name}.request.schema.json`, body ?? {});
      if (problems.length > 0) throw new Error(`the harness built a request for ${name} that breaks its schema: ${problems.join('; ')}`);
    }
    const init: RequestInit = entry.method === 'POST' ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body ?? {}) } : { method: 'GET' };
    let response: Response;
    try {
      response = await fetch(`${this.#base}/${entry.path}`, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw new Error(`control ${name} (${entry.method} ${this.#base}/${entry.path}) did not answer: ${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message}`);
    }
    const text = await response.text();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new Error(`control ${name} answered ${response.status} with a body that is not JSON: ${text.slice(0, 300)}`);
    }
    if (response.status !== 200) {
      const problems = controlSchemaProblems('error.schema.json', value);
      if (problems.length > 0) throw new Error(`control ${name} answered ${response.status} without the control error envelope (${problems.join('; ')}): ${text.slice(0, 300)}`);
      const { code, message } = (value as { error: { code: string; message: string } }).error;
      throw new ControlCallError(name, response.status, code, message);
    }
    const problems = controlSchemaProblems(`${name}.response.schema.json`, value);
    if (problems.length > 0) throw new Error(`control ${name} answered off its schema (schemas/adapter/control/${name}.response.schema.json): ${problems.join('; ')}`);
    return value as T;
  }
}

/** The capability groups a server's controls make available, and the controls behind them. */
export interface ControlGroups {
  capabilities: ServerCapability[];
  capture?: CaptureControl;
  clock?: ClockControl;
  clients?: ClientsControl;
  compaction?: CompactionControl;
  seed?: SeedControl;
  /** The push entry point inside a caller's transaction, added to `sourceSql` (which needs SQL). */
  pushInTransaction?: NonNullable<SourceSqlControl['pushInTransaction']>;
  /** Readiness observations over the controls (the inspect group's queries need SQL). */
  readiness?: { readiness(): Promise<unknown>; healthDetail(): Promise<unknown> };
  /** Opens the scenario's log window: `logs.text()` then returns what the server logged from this call on. */
  openLogs?(): Promise<LogsControl>;
  /** Closes the seed sessions the scenario left open (each holds a server connection). */
  closeSeedSessions?(): Promise<void>;
}

/** Which capabilities the document earns (before any SQL ones). */
export function capabilitiesOffered(client: ControlClient): ServerCapability[] {
  return (Object.keys(CONTROL_GROUPS) as (keyof typeof CONTROL_GROUPS)[]).filter((group) => client.offersAll(CONTROL_GROUPS[group].needs));
}

export function controlGroups(client: ControlClient): ControlGroups {
  const groups: ControlGroups = { capabilities: capabilitiesOffered(client) };
  const has = (name: ControlName) => client.offers(name);
  const empty = {};
  if (has('capture.await')) {
    const capture: CaptureControl = {
      awaitMaterialized: async (deadlineMs) => {
        await client.call('capture.await', { timeout_ms: Math.max(1, Math.round(deadlineMs)) }, deadlineMs + 5_000);
      },
    };
    if (groups.capabilities.includes('capture')) {
      capture.stopWorker = async () => void (await client.call('capture.stop', empty));
      capture.killWorker = async () => void (await client.call('capture.kill', empty));
      // After a stop or a kill alike: the worker carries on from its durable progress.
      capture.restartWorker = async () => void (await client.call('capture.restart', empty));
      capture.injectPoison = async () => void (await client.call('capture.poison', empty));
      if (has('capture.crash-at')) capture.killWorkerAt = async (point) => void (await client.call('capture.crash-at', { point }));
      if (has('capture.hold') && has('capture.held')) {
        capture.holdBeforeCommit = async () => void (await client.call('capture.hold', empty));
        capture.awaitHold = async (deadlineMs) => void (await client.call('capture.held', { timeout_ms: Math.max(1, Math.round(deadlineMs)) }, deadlineMs + 5_000));
      }
      if (has('capture.reset-stream')) capture.resetStream = async () => void (await client.call('capture.reset-stream', empty, 120_000));
      // The phased reset counts only as the whole set: start, continue, abort and the operator kill.
      if (has('capture.reset-start') && has('capture.reset-continue') && has('capture.reset-abort') && has('capture.reset-kill-operator')) {
        const drive = async (name: 'capture.reset-start' | 'capture.reset-continue', holdAt?: ResetHoldPhase): Promise<ResetDriveOutcome> => {
          try {
            return { progress: await client.call<ResetProgressAnswer>(name, holdAt === undefined ? empty : { hold_at: holdAt }, 120_000) };
          } catch (e) {
            if (e instanceof ControlCallError && e.code === 'refused') return { refused: e.message };
            throw e;
          }
        };
        capture.reset = {
          start: (holdAt) => drive('capture.reset-start', holdAt),
          continue: (holdAt) => drive('capture.reset-continue', holdAt),
          abort: async () => void (await client.call('capture.reset-abort', empty, 60_000)),
          killOperator: async () => (await client.call<{ terminated: number }>('capture.reset-kill-operator', empty)).terminated,
        };
      }
      // Capture-store damage counts only as the pair: injecting it and writing it back.
      if (has('capture.store-fault') && has('capture.store-restore')) {
        capture.store = {
          inject: async (fault, target) => void (await client.call('capture.store-fault', { fault, table: target.table, scope: target.scope, pk: target.pk })),
          restore: async () => (await client.call<{ restored: number }>('capture.store-restore', empty)).restored,
        };
      }
      // The Class 3 projection bootstrap counts only as the whole set.
      const bootstrapControls = ['bootstrap.hold', 'bootstrap.release', 'bootstrap.resume', 'bootstrap.kill', 'bootstrap.activate'] as const;
      if (bootstrapControls.every((name) => has(name))) {
        const drive = async (name: 'bootstrap.hold' | 'bootstrap.release' | 'bootstrap.resume' | 'bootstrap.activate', request: Record<string, unknown> = empty): Promise<BootstrapDriveOutcome> => {
          try {
            return { progress: await client.call<BootstrapProgressAnswer>(name, request, 120_000) };
          } catch (e) {
            if (e instanceof ControlCallError && e.code === 'refused') return { refused: e.message };
            throw e;
          }
        };
        capture.bootstrap = {
          hold: (phase, options) => drive('bootstrap.hold', { phase, ...(options?.pastDurableBarrier === true ? { past_durable_barrier: true } : {}) }),
          release: () => drive('bootstrap.release'),
          resume: () => drive('bootstrap.resume'),
          activate: () => drive('bootstrap.activate'),
          kill: async () => (await client.call<{ terminated: number }>('bootstrap.kill', empty)).terminated,
        };
      }
    }
    groups.capture = capture;
  }
  if (groups.capabilities.includes('clock')) {
    groups.clock = {
      advance: async (milliseconds) => void (await client.call('clock.advance', { milliseconds })),
      set: async (instant) => void (await client.call('clock.set', { now: instant })),
      now: async () => (await client.call<{ now: string }>('clock.now')).now,
    };
  }
  if (groups.capabilities.includes('clients')) {
    const clients: ClientsControl = {
      expire: async (userId, clientId) => void (await client.call('clients.expire', { user_id: userId, client_id: clientId })),
      retire: async (userId, clientId) => void (await client.call('clients.retire', { user_id: userId, client_id: clientId })),
      runExpiry: async () => {
        const { expired } = await client.call<{ expired: { user_id: string; client_id: string }[] }>('clients.run-expiry', empty);
        return expired.map((c) => ({ userId: c.user_id, clientId: c.client_id }));
      },
    };
    if (has('clients.counters')) {
      clients.counters = async (userId, clientId, set) => {
        const wanted = { ...(set?.clientGeneration === undefined ? {} : { client_generation: set.clientGeneration }), ...(set?.scopeSetVersion === undefined ? {} : { scope_set_version: set.scopeSetVersion }) };
        const stored = await client.call<{ client_generation: number; scope_set_version: number }>('clients.counters', { user_id: userId, client_id: clientId, ...(set === undefined ? {} : { set: wanted }) });
        return { clientGeneration: stored.client_generation, scopeSetVersion: stored.scope_set_version };
      };
    }
    groups.clients = clients;
  }
  if (groups.capabilities.includes('compaction')) {
    groups.compaction = { compact: async () => client.call('compaction.run', empty, 120_000) };
  }
  if (groups.capabilities.includes('seed')) {
    groups.seed = {
      export: async (options = {}) => {
        try {
          const answer = await client.call<{ manifest: unknown; pages: Record<string, unknown[]> }>('seed.export', { ...(options.pageLimit === undefined ? {} : { page_limit: options.pageLimit }), ...(options.scopes === undefined ? {} : { scopes: options.scopes }) }, 120_000);
          return { manifest: answer.manifest, pages: answer.pages };
        } catch (error) {
          // The seed steps read the server's refusal reason from the message.
          if (error instanceof ControlCallError && error.code === 'refused') throw new Error(`the seed export was refused: ${error.message}`);
          throw error;
        }
      },
    };
    if (has('seed.session.open') && has('seed.session.call') && has('seed.session.close')) {
      const open = new Set<SeedSession>();
      groups.closeSeedSessions = async () => void (await Promise.all([...open].map((s) => s.close().catch(() => undefined))));
      groups.seed.session = async () => {
        const { session } = await client.call<{ session: string }>('seed.session.open', empty);
        const call = (member: Record<string, unknown>) => client.call<SeedCallResult>('seed.session.call', { session, ...member });
        const opened: SeedSession = {
          statement: (sql) => call({ statement: sql }),
          manifest: (pageLimit) => call({ manifest: pageLimit === undefined ? {} : { page_limit: pageLimit } }),
          page: (page) =>
            call({
              page: {
                scope: page.scope,
                page_token: page.pageToken,
                continuation_receipt: page.continuationReceipt,
                expected_row_ordinal: page.expectedRowOrdinal,
                ...(page.limit === undefined ? {} : { limit: page.limit }),
              },
            }),
          close: async () => {
            if (!open.delete(opened)) return;
            await client.call('seed.session.close', { session });
          },
        };
        open.add(opened);
        return opened;
      };
    }
  }
  if (has('push.in-transaction')) {
    groups.pushInTransaction = async (statements, userId, request) => client.call<PushEntryResult>('push.in-transaction', { statements, user_id: userId, request });
  }
  if (has('inspect.readiness') && has('inspect.health-detail')) {
    groups.readiness = {
      readiness: async () => (await client.call<{ readiness: unknown }>('inspect.readiness')).readiness,
      healthDetail: async () => (await client.call<{ health_detail: unknown }>('inspect.health-detail')).health_detail,
    };
  }
  if (groups.capabilities.includes('logs')) {
    groups.openLogs = async () => {
      const { mark } = await client.call<{ mark: number }>('logs.mark', empty);
      return {
        text: async () => (await client.call<{ text: string }>('logs.since', { mark })).text,
        ...(has('logs.metrics') ? { metrics: async () => (await client.call<{ text: string }>('logs.metrics')).text } : {}),
        ...(has('logs.spans') ? { spans: async () => (await client.call<{ spans: TraceSpan[] }>('logs.spans')).spans } : {}),
      };
    };
  }
  return groups;
}
