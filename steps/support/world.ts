/**
 * The Cucumber World: per-scenario state of the harness.
 *
 * Steps reach the implementations under test only through what this World
 * hands out: the scenario's server adapter, the proxy in front of it (with its
 * exchange records) and client adapter processes, each created on first use
 * and torn down after the scenario. Everything is fresh per scenario: its own
 * server database, its own client data directories. Every wait has a deadline.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { type IWorldOptions, setDefaultTimeout, setWorldConstructor, World } from '@cucumber/cucumber';
import { ClientSupervisor } from '../../harness/adapters/client-process.ts';
import { openServer } from '../../harness/adapters/open.ts';
import type { ClientMethod } from '../../harness/adapters/rpc-schemas.ts';
import type { ServerAdapter } from '../../harness/adapters/server.ts';
import { type ClientSetup, isSetup, type ServerSetup, unavailable } from '../../harness/adapters/setup.ts';
import { afterScenario } from '../../harness/adapters/warm-pool.ts';
import { type FaultDefinition, findFault, switchName } from '../../harness/faults/registry.ts';
import { WireProxy } from '../../harness/proxy/proxy.ts';
import { CountingAssert } from './assertions.ts';
import { drivesProcess } from './client-mode.ts';
import { ScenarioModel } from './model.ts';
import { networkModeOf } from './network/server-network.ts';
import type { Reply } from './reply.ts';
import { crashesDatabase } from './database-crash/index.ts';
import { killsServer } from './server-process.ts';
import { WireClient } from './wire-client.ts';

export interface RunParameters {
  /** Server adapter setup prepared by `run` (an adapter id when the run was not prepared). */
  server: ServerSetup | string;
  /** Client adapter setup prepared by `run` (an adapter id when the run was not prepared). */
  client: ClientSetup | string;
  /** Fault recipe to apply in a sensitivity run, absent in a normal run. */
  fault?: string;
  /** Project root, to find the reference implementation and fixtures. */
  root: string;
  /** Scenarios whose steps are not all defined once, keyed by `scenarioKey`, with the first such step. */
  incomplete?: Record<string, string>;
  /** Deadline of any single wait, in milliseconds (30 s by default). */
  deadlineMs?: number;
  /** Sensitivity run of one rule: skip the remaining scenarios once a Then step failed under the fault. */
  stopAtDetection?: boolean;
}

export const DEFAULT_DEADLINE_MS = 30_000;

let scenarioCounter = 0;

/** A client adapter process of this scenario and the data directory it keeps across restarts. */
export interface ScenarioClient {
  name: string;
  dataDir: string;
  process: ClientSupervisor;
}

/** A client adapter process opened against the scenario's proxy as a user. */
export interface ProcessClient extends ScenarioClient {
  userId: string;
  clientId: string;
  /** A JSON-RPC call to the process (`docs/client-adapter-protocol.md`). */
  call<T = Record<string, unknown>>(method: ClientMethod, params?: Record<string, unknown>): Promise<T>;
}

/** What the last `syncNow` of a process client gave: its result, or the error it raised. */
export type SyncResult = { completion: string; status: string } | { error: Error };

/** The step that ran a sync: `client "X" syncs`, `... has synced` (also `of user "U"`), or `... syncs for the first time` / `starts syncing for the first time`. */
export type SyncStep = 'syncs' | 'has synced' | 'first time';

/**
 * What the proxy recorded while one sync step of a client ran: the
 * exchanges from index `from` up to (not including) `to` of its log, and what
 * the sync returned. Every sync step keeps one, in every feature, so "that
 * sync" and "those syncs" mean the same wherever a step says them.
 */
export interface SyncWindow {
  client: string;
  step: SyncStep;
  from: number;
  /** Undefined while the sync is still running. */
  to: number | undefined;
  result: SyncResult | undefined;
}

function setupOf<S extends ServerSetup | ClientSetup>(value: S | string | undefined, role: 'server' | 'client'): S {
  if (isSetup(value)) return value as S;
  return unavailable(String(value ?? 'reference'), String(value ?? 'reference'), `the ${role} adapter was not prepared: run the features through "synchro-conformance run"`) as S;
}

export class SyncWorld extends World<RunParameters> {
  readonly assert: CountingAssert = new CountingAssert();
  /** The assertion count when the running step began, and the Then steps that passed without one. */
  assertionsBeforeStep = 0;
  readonly unassertedSteps: string[] = [];
  readonly serverSetup: ServerSetup;
  readonly clientSetup: ClientSetup;
  readonly deadlineMs: number;
  /** Identifier-safe and unique across workers: database and directory names derive from it. */
  readonly scenarioName: string;
  /** The fault of a sensitivity run, when one is set and registered. */
  readonly fault: FaultDefinition | undefined;
  readonly clients = new Map<string, ScenarioClient>();
  /** Source tables and scope placement the scenario declared (installed before the first server step). */
  readonly model = new ScenarioModel();
  /** The last answer a harness-driven request got, and all of them in order. */
  reply: Reply | undefined;
  readonly replies: Reply[] = [];
  /** Text of every step of the running scenario (set by the Before hook). */
  stepTexts: readonly string[] = [];
  /** The user each named client belongs to, from "client X of user Y" steps. */
  readonly clientUsers = new Map<string, string>();
  readonly lastSync = new Map<string, SyncResult>();
  /** One window per sync step, in the order the steps ran (see SyncWindow). */
  readonly syncWindows: SyncWindow[] = [];
  /** How many replies were recorded before the scenario's first action step ("these responses" start there). */
  repliesBeforeAction: number | undefined;
  /** Numbers a step noted under a name (V, W) for later steps to compare with. */
  readonly noted = new Map<string, number>();
  /** Server versions the harness's clients hold, by `table/pk`, from push outcomes and pulled or rebuilt rows. */
  readonly heldVersions = new Map<string, string>();
  /** Extra environment a named client process starts with (its time zone, ...), set before the process is first used. */
  readonly clientEnv = new Map<string, Record<string, string>>();
  /** Server state before the scenario's first action, when a step compares against it. */
  serverSnapshot: Map<string, string> | undefined;
  /** Work a step left for teardown (a further server it opened), run before the scenario's own server stops. */
  readonly cleanups: Array<() => Promise<unknown>> = [];
  readonly #wires = new Map<string, WireClient>();
  readonly #processes = new Map<string, Promise<ProcessClient>>();
  #server: Promise<ServerAdapter> | undefined;
  /** How long the scenario waited for its server (mostly nothing, when one was prepared ahead). */
  #serverWaitMs: number | undefined;
  #proxy: Promise<WireProxy> | undefined;
  #scratch: string | undefined;

  constructor(options: IWorldOptions<RunParameters>) {
    super(options);
    this.serverSetup = setupOf<ServerSetup>(this.parameters.server, 'server');
    this.clientSetup = setupOf<ClientSetup>(this.parameters.client, 'client');
    this.deadlineMs = this.parameters.deadlineMs ?? DEFAULT_DEADLINE_MS;
    scenarioCounter += 1;
    // Parallel Cucumber workers may be threads of one process: the thread id keeps names apart.
    this.scenarioName = `s${process.pid}_${threadId}_${scenarioCounter}`;
    this.fault = this.parameters.fault ? findFault(this.parameters.fault) : undefined;
  }

  /** Switch names for a process of `kind` under the current fault. */
  faultSwitches(kind: 'server' | 'client'): string[] {
    return this.fault?.kind === kind ? [switchName(this.fault)] : [];
  }

  /** The scenario's server, started (fresh database) on first use. */
  server(): Promise<ServerAdapter> {
    if (this.#server === undefined) {
      const asked = performance.now();
      const network = networkModeOf(this.stepTexts);
      this.#server = openServer(this.serverSetup, { name: this.scenarioName, faults: this.faultSwitches('server'), deadlineMs: this.deadlineMs, ownProcess: killsServer(this.stepTexts), ownDatabase: crashesDatabase(this.stepTexts), ...(network === undefined ? {} : { network }) });
      void this.#server.then(() => {
        this.#serverWaitMs = Math.round(performance.now() - asked);
      }, () => undefined);
    }
    return this.#server;
  }

  /** Records an answer as the scenario's last response. */
  recordReply(reply: Reply): void {
    this.reply = reply;
    this.replies.push(reply);
    if (reply.status === 200) this.#holdVersions(reply);
  }

  /** Key of a row in `heldVersions`: table id and the key's wire value. */
  static rowKey(tableId: string, pk: unknown): string {
    const value = pk !== null && typeof pk === 'object' ? Object.values(pk)[0] : pk;
    return `${tableId}/${JSON.stringify(value)}`;
  }

  // A client holds the version of every row it was told about: what "current" base versions refer to.
  #holdVersions(reply: Reply): void {
    const body = reply.json ?? {};
    const rows: { table: string; pk: unknown; server_version?: string; op?: string }[] =
      reply.endpoint === 'push' ? [...(body.accepted ?? []), ...(body.rejected ?? [])] : reply.endpoint === 'pull' ? (body.changes ?? []) : reply.endpoint === 'rebuild' ? (body.records ?? []) : [];
    for (const row of rows) {
      const key = SyncWorld.rowKey(row.table, row.pk);
      if (typeof row.server_version === 'string') this.heldVersions.set(key, row.server_version);
      else if (row.op === 'delete') this.heldVersions.delete(key);
    }
  }

  /** The last answer, or a failure saying no request was made yet. */
  lastReply(): Reply {
    if (!this.reply) throw new Error('no request has been answered yet in this scenario');
    return this.reply;
  }

  /** The server with the declared tables installed. */
  async readyServer(): Promise<ServerAdapter> {
    const server = await this.server();
    if (this.model.pending) await this.model.install(server);
    return server;
  }

  userOf(name: string): string {
    const user = this.clientUsers.get(name);
    if (user === undefined) throw new Error(`client "${name}" has no user yet: a step "client ${name} of user ..." must come first`);
    return user;
  }

  /** True when this scenario drives client `name` as an adapter process. */
  isProcess(name: string): boolean {
    return this.#processes.has(name) || drivesProcess(this.stepTexts, name);
  }

  hasWire(name: string): boolean {
    return this.#wires.has(name);
  }

  /** The harness's own protocol client `name`, created for its user on first use. */
  wire(name: string, userId?: string): WireClient {
    let client = this.#wires.get(name);
    if (!client) {
      if (userId !== undefined) this.clientUsers.set(name, userId);
      client = new WireClient(name, this.userOf(name), {
        url: async () => (await this.proxy()).url,
        token: async (user) => (await this.server()).token(user),
        record: (reply) => this.recordReply(reply),
        deadlineMs: this.deadlineMs,
      });
      this.#wires.set(name, client);
    }
    return client;
  }

  /** Replaces protocol client `name` by a fresh one (new client id, nothing installed). */
  newWire(name: string, userId: string): WireClient {
    this.#wires.delete(name);
    return this.wire(name, userId);
  }

  /** The client adapter process `name`, started and opened against the proxy on first use. */
  process(name: string, extra: Record<string, unknown> = {}): Promise<ProcessClient> {
    let opened = this.#processes.get(name);
    if (!opened) {
      opened = (async () => {
        await this.readyServer();
        const userId = this.userOf(name);
        const client = this.startClient(name);
        const params = await this.openParams(client, userId, extra);
        await client.process.call('open', params);
        return {
          ...client,
          userId,
          clientId: String(params.clientId),
          call: <T>(method: ClientMethod, callParams: Record<string, unknown> = {}) => client.process.call(method, callParams) as Promise<T>,
        };
      })();
      this.#processes.set(name, opened);
    }
    return opened;
  }

  /** Runs one `syncNow` of process client `name` and keeps the outcome for later steps. */
  async syncProcess(name: string): Promise<SyncResult> {
    const client = await this.process(name);
    let result: SyncResult;
    try {
      result = await client.call<{ completion: string; status: string }>('syncNow');
    } catch (error) {
      result = { error: error as Error };
    }
    this.lastSync.set(name, result);
    return result;
  }

  /** Opens a sync window of client `name` at the current end of the proxy's log; `closeSyncWindow` ends it. */
  async openSyncWindow(name: string, step: SyncStep): Promise<SyncWindow> {
    const window: SyncWindow = { client: name, step, from: (await this.proxy()).exchanges.length, to: undefined, result: undefined };
    this.syncWindows.push(window);
    return window;
  }

  /** Ends a sync window at the current end of the proxy's log, with the client's last sync result. */
  async closeSyncWindow(window: SyncWindow): Promise<void> {
    window.to = (await this.proxy()).exchanges.length;
    window.result = this.lastSync.get(window.client);
  }

  /** Runs one sync step's work for client `name` inside a sync window. */
  async inSyncWindow<T>(name: string, step: SyncStep, work: () => Promise<T>): Promise<T> {
    const window = await this.openSyncWindow(name, step);
    try {
      return await work();
    } finally {
      await this.closeSyncWindow(window);
    }
  }

  /** The proxy in front of the scenario's server, with the scenario's wire fault installed. */
  proxy(): Promise<WireProxy> {
    this.#proxy ??= (async () => {
      const server = await this.server();
      const proxy = new WireProxy(server.baseUrl);
      for (const rule of this.fault?.kind === 'wire' ? (this.fault.rules ?? []) : []) proxy.inject(rule);
      await proxy.start();
      return proxy;
    })();
    return this.#proxy;
  }

  /** A scratch directory of this scenario, removed at teardown. */
  scratchDir(): string {
    this.#scratch ??= mkdtempSync(join(tmpdir(), `synchro-${this.scenarioName}-`));
    return this.#scratch;
  }

  /** Starts client process `name` (not yet opened) with its own fresh data directory. */
  startClient(name = 'client'): ScenarioClient {
    if (this.clientSetup.kind !== 'process') throw new Error(`client adapter "${this.clientSetup.id}" is unavailable: ${this.clientSetup.reason ?? ''}`);
    if (this.clients.has(name)) throw new Error(`client "${name}" is already started in this scenario`);
    const switches = this.faultSwitches('client');
    const env = { ...this.clientEnv.get(name), ...(switches.length > 0 ? { SYNCHRO_FAULTS: switches.join(',') } : {}) };
    const process = new ClientSupervisor(this.clientSetup.spec, { callDeadlineMs: this.deadlineMs, warm: true, ...(Object.keys(env).length > 0 ? { env } : {}) });
    const client: ScenarioClient = { name, dataDir: join(this.scratchDir(), `client-${name}`), process };
    process.start();
    this.clients.set(name, client);
    return client;
  }

  /** `open` params for a client talking to the server through the proxy as `userId`. */
  async openParams(client: ScenarioClient, userId: string, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const [server, proxy] = [await this.server(), await this.proxy()];
    return { dataDir: client.dataDir, serverUrl: proxy.url, token: await server.token(userId), clientId: `${this.scenarioName}-${client.name}`, appVersion: '1.0.0', ...extra };
  }

  /** What the scenario started, for the cost benchmark. */
  resources(): { server: boolean; serverWaitMs: number | null; clientProcesses: number } {
    return { server: this.#server !== undefined, serverWaitMs: this.#serverWaitMs ?? null, clientProcesses: [...this.clients.values()].reduce((sum, client) => sum + client.process.starts, 0) };
  }

  /** Problems found along the way that fail the scenario even if every step passed. */
  async problems(): Promise<string[]> {
    const found: string[] = [];
    if (this.#proxy) {
      const proxy = await this.#proxy.catch(() => undefined);
      for (const line of proxy?.problems() ?? []) found.push(`wire: ${line}`);
    }
    for (const client of this.clients.values()) {
      for (const breach of client.process.breaches) found.push(`client "${client.name}": ${breach}${client.process.stderr.trim() ? `\n--- its stderr ---\n${client.process.stderr.trim().split('\n').slice(-40).join('\n')}` : ''}`);
    }
    return found;
  }

  /** Kills every process of the scenario and removes its state; never throws. */
  async teardown(): Promise<string[]> {
    const errors: string[] = [];
    const attempt = async (what: string, work: () => Promise<unknown>) => {
      try {
        await work();
      } catch (error) {
        errors.push(`${what}: ${(error as Error).message}`);
      }
    };
    for (const client of this.clients.values()) await attempt(`stopping client "${client.name}"`, () => client.process.close());
    if (this.#proxy) await attempt('stopping the proxy', async () => (await this.#proxy)?.stop());
    for (const cleanup of this.cleanups) await attempt('a cleanup a step left', cleanup);
    // Nothing of this scenario reaches its server any more: stopping it and
    // dropping its database overlap the next scenario (the run waits for them
    // at its end and fails on any that went wrong).
    const server = this.#server;
    if (server) afterScenario(`stopping the server of scenario ${this.scenarioName}`, async () => (await server.catch(() => undefined))?.close());
    if (this.#scratch) rmSync(this.#scratch, { recursive: true, force: true });
    return errors;
  }
}

setWorldConstructor(SyncWorld);

// Cucumber's own limit (5 s by default) would cut a step short of the deadlines
// its waits carry (a server start, a sync); it stays as the outer bound.
setDefaultTimeout(4 * DEFAULT_DEADLINE_MS);
