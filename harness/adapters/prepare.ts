/**
 * Resolving `--server` / `--client` (an adapter id, the path of a JSON config,
 * or a config inlined in synchro-conformance.config.json) into adapter setups
 * before any scenario runs. Bad configs and third-party servers or clients
 * that do not answer are input errors; the reference pair, still being built,
 * is reported unavailable instead so its requirements come out undetermined.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type JsonValue, parseJson } from '../codec/index.ts';
import { InputError } from '../errors.ts';
import { type ClientProcessSpec, ClientProtocolError, ClientRpcError, ClientSupervisor } from './client-process.ts';
import { type AdapterConfig, checkAdapterConfig, type HttpServerConfig, loadAdapterConfig, type ModuleServerConfig, type ProcessClientConfig } from './config.ts';
import { prepareHttpServer } from './http-server.ts';
import { prepareModuleServer } from './module-server.ts';
import { type PreparedServer, prepareReferenceServer } from './reference-server.ts';
import { type ClientSetup, type ProcessClientSetup, unavailable } from './setup.ts';

export const REFERENCE_CLIENT_ENTRY = 'reference/driver.ts';
/** How long a client process may take to start and answer its first call, unless its config says otherwise. */
export const CLIENT_STARTUP_DEADLINE_MS = 15_000;

/** An adapter as named on the command line or in the run config. */
export type AdapterSpec = string | { config: unknown; file: string };

function configFrom(role: 'server' | 'client', spec: AdapterSpec, root: string): AdapterConfig {
  if (typeof spec !== 'string') {
    // An inline config: re-read through the strict parser so it gets the same checks as a file.
    const text = JSON.stringify(spec.config, null, 2);
    const positions = new WeakMap<object, number>();
    return checkAdapterConfig(role, parseJson(text, { positions }) as JsonValue, spec.file, text, positions);
  }
  const path = resolve(root, spec);
  if (!spec.endsWith('.json') && !existsSync(path)) {
    throw new InputError(spec, undefined, `"${spec}" is neither a known ${role} adapter nor an adapter config file`, `use "reference" or the path of a JSON config (see docs/adapters.md)`);
  }
  return loadAdapterConfig(role, path);
}

export async function prepareServer(spec: AdapterSpec, root: string): Promise<PreparedServer> {
  if (spec === 'reference') return prepareReferenceServer(root);
  const file = typeof spec === 'string' ? resolve(root, spec) : spec.file;
  const config = configFrom('server', spec, root) as HttpServerConfig | ModuleServerConfig;
  if (config.kind === 'module') return { setup: await prepareModuleServer(config, file), close: async () => {} };
  return { setup: await prepareHttpServer(config, file), close: async () => {} };
}

/** Starts the client process once and asks it something: any well-formed JSON-RPC answer proves it speaks the protocol. */
export async function preflightClient(spec: ClientProcessSpec, startupDeadlineMs = CLIENT_STARTUP_DEADLINE_MS): Promise<string | undefined> {
  const supervisor = new ClientSupervisor(spec, { callDeadlineMs: startupDeadlineMs });
  try {
    supervisor.start();
    await supervisor.call('crashPoints');
    return undefined;
  } catch (error) {
    if (error instanceof ClientRpcError) return undefined;
    if (error instanceof ClientProtocolError) return error.message;
    return (error as Error).message;
  } finally {
    await supervisor.close();
  }
}

export async function prepareClient(spec: AdapterSpec, root: string): Promise<ClientSetup> {
  if (spec === 'reference') {
    const description = `Synchro reference client (${REFERENCE_CLIENT_ENTRY})`;
    const entry = join(root, REFERENCE_CLIENT_ENTRY);
    if (!existsSync(entry)) return unavailable('reference', description, `the reference client is not built yet: ${REFERENCE_CLIENT_ENTRY} does not exist`);
    const processSpec: ClientProcessSpec = { command: [process.execPath, entry], cwd: root };
    const problem = await preflightClient(processSpec);
    if (problem) return unavailable('reference', description, `the reference client does not answer the adapter protocol: ${problem}`);
    return { kind: 'process', id: 'reference', description, available: true, capabilities: ['crash'], spec: processSpec };
  }
  const file = typeof spec === 'string' ? resolve(root, spec) : spec.file;
  const config = configFrom('client', spec, root) as ProcessClientConfig;
  const baseDir = typeof spec === 'string' ? resolve(file, '..') : root;
  const processSpec: ClientProcessSpec = { command: config.command, cwd: resolve(baseDir, config.cwd ?? '.'), ...(config.env ? { env: config.env } : {}) };
  const problem = await preflightClient(processSpec, config.startupDeadlineMs);
  if (problem) throw new InputError(file, undefined, `the client adapter process does not answer the adapter protocol: ${problem}`, `check "command" and "cwd", that the process answers JSON-RPC on stdout (docs/adapters.md), and, for a slow start, raise "startupDeadlineMs" (now ${config.startupDeadlineMs ?? CLIENT_STARTUP_DEADLINE_MS})`);
  const setup: ProcessClientSetup = {
    kind: 'process',
    id: config.id,
    description: config.description ?? `${config.id} (${config.command.join(' ')})`,
    available: true,
    capabilities: config.capabilities ?? [],
    forms: [...(config.forms ?? [])],
    spec: processSpec,
  };
  return setup;
}
