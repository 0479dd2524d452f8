/**
 * A run session: the adapters resolved and checked once, before any scenario
 * runs, and the run-wide resources they need (the reference server's shared
 * database cluster) kept alive until the last scenario finished.
 */
import { type AdapterSpec, prepareClient, prepareServer } from '../adapters/prepare.ts';
import { type ClientSetup, type ServerSetup, toWorldParameter } from '../adapters/setup.ts';
import type { JsonObject, JsonValue } from './cucumber.ts';

export interface RunSession {
  server: ServerSetup;
  client: ClientSetup;
  /** World parameters carrying the prepared setups to every Cucumber worker. */
  worldParameters: JsonObject;
  close(): Promise<void>;
}

export function describeSetup(role: 'server' | 'client', setup: ServerSetup | ClientSetup): string {
  const state = setup.available ? `available (capabilities: ${setup.capabilities.join(', ') || 'none'})` : `unavailable: ${setup.reason}`;
  return `${role}: ${setup.description} — ${state}`;
}

/**
 * Workers one run may use with this server: an external server reset between
 * scenarios is one database that every scenario takes whole, so two workers
 * would reset it under each other. Returns the workers and, when fewer than
 * asked, the line saying why.
 */
export function workersFor(server: ServerSetup, requested: number): { parallel: number; note?: string } {
  if (requested > 1 && server.kind === 'http' && (server.config.resetCommand !== undefined || server.controls?.controls.reset !== undefined)) {
    return { parallel: 1, note: `server "${server.id}" is one external server reset before each scenario: scenarios run one at a time (--parallel ${requested} ignored)` };
  }
  return { parallel: requested };
}

/** Resolves both adapters; throws InputError for a bad config or a third-party implementation that does not answer. */
export async function openSession(specs: { server: AdapterSpec; client: AdapterSpec; root: string; extra?: JsonObject }): Promise<RunSession> {
  const preparedServer = await prepareServer(specs.server, specs.root);
  let client: ClientSetup;
  try {
    client = await prepareClient(specs.client, specs.root);
  } catch (error) {
    await preparedServer.close();
    throw error;
  }
  const server = preparedServer.setup;
  return {
    server,
    client,
    worldParameters: { ...(specs.extra ?? {}), root: specs.root, server: toWorldParameter(server) as JsonValue, client: toWorldParameter(client) as JsonValue },
    close: () => preparedServer.close(),
  };
}

/** World parameters that name adapters (strings) instead of carrying prepared setups need a session. */
export function needsSession(parameters: JsonObject): boolean {
  return typeof parameters.server === 'string' || typeof parameters.client === 'string';
}

/**
 * Sessions for runs that name their adapters by id (the sensitivity run calls
 * runFeatures once per requirement and fault). Consecutive runs with the same
 * adapters share one session, so the database cluster is not restarted for
 * each; a session is closed once no run has used it for IDLE_MS.
 */
const IDLE_MS = 2_000;
const leased = new Map<string, { session: Promise<RunSession>; users: number; timer?: NodeJS.Timeout }>();

export async function leaseSession(specs: { server: string; client: string; root: string; extra?: JsonObject }): Promise<{ session: RunSession; release: () => void }> {
  const key = JSON.stringify([specs.server, specs.client, specs.root]);
  let entry = leased.get(key);
  if (!entry) {
    entry = { session: openSession({ server: specs.server, client: specs.client, root: specs.root }), users: 0 };
    leased.set(key, entry);
    // A session that failed to open is not kept: the next run tries again and reports the error itself.
    entry.session.catch(() => leased.delete(key));
  }
  clearTimeout(entry.timer);
  entry.users += 1;
  const current = entry;
  const session = await current.session;
  const release = () => {
    current.users -= 1;
    if (current.users > 0) return;
    current.timer = setTimeout(() => {
      leased.delete(key);
      void session.close();
    }, IDLE_MS);
  };
  return { session: { ...session, worldParameters: { ...(specs.extra ?? {}), ...session.worldParameters } }, release };
}

/**
 * Runs `body` with world parameters whose adapters are prepared: ones that
 * name adapters by id get a leased session (kept while `body` runs), prepared
 * ones are passed as they are.
 */
export async function withPreparedParameters<T>(parameters: JsonObject, cwd: string, body: (prepared: JsonObject) => Promise<T>): Promise<T> {
  if (!needsSession(parameters)) return body(parameters);
  const { server, client, root, ...extra } = parameters;
  const { session, release } = await leaseSession({ server: String(server ?? 'reference'), client: String(client ?? 'reference'), root: typeof root === 'string' ? root : cwd, extra });
  try {
    return await body(session.worldParameters);
  } finally {
    release();
  }
}
