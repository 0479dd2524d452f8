/**
 * The generic HTTP server adapter: certifies any implementation, in any
 * language, from a JSON config (URL, how to get a token, an optional
 * PostgreSQL DSN for the SQL capabilities, an optional reset command). The
 * server is black-box: the harness neither starts nor stops it.
 */
import { execFile } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { InputError } from '../errors.ts';
import type { ServerCapability } from './capabilities.ts';
import type { HttpServerConfig } from './config.ts';
import type { ScenarioSetup, ServerAdapter } from './server.ts';
import type { HttpServerSetup } from './setup.ts';
import { SqlControls } from './sql-controls.ts';
import { tokenFor } from './token.ts';

/** What a DSN alone can back; the other groups need implementation-specific controls. */
const SQL_CAPABILITIES: readonly ServerCapability[] = ['provision', 'sourceSql', 'scopes', 'schema', 'inspect'];
const PREFLIGHT_DEADLINE_MS = 5_000;

/** Checks the config against what this adapter can do and that the server answers; errors before any scenario. */
export async function prepareHttpServer(config: HttpServerConfig, file: string): Promise<HttpServerSetup> {
  const declared = config.capabilities ?? (config.databaseUrl ? [...SQL_CAPABILITIES] : []);
  for (const capability of declared) {
    if (!SQL_CAPABILITIES.includes(capability)) {
      throw new InputError(file, undefined, `the generic HTTP adapter cannot provide the "${capability}" capability`, `remove it from "capabilities" (only ${SQL_CAPABILITIES.join(', ')} can be provided, through "databaseUrl")`);
    }
    if (!config.databaseUrl) throw new InputError(file, undefined, `capability "${capability}" needs a PostgreSQL DSN`, 'add "databaseUrl" or remove the capability');
  }
  const baseUrl = config.baseUrl.replace(/\/$/, '');
  try {
    await fetch(`${baseUrl}/ready`, { signal: AbortSignal.timeout(PREFLIGHT_DEADLINE_MS) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new InputError(file, undefined, `the server at ${baseUrl} does not answer GET /ready (${cause})`, 'start the server first or correct "baseUrl"');
  }
  const configDir = dirname(resolve(file));
  try {
    await tokenFor(config.auth, 'preflight-user', configDir);
  } catch (error) {
    throw new InputError(file, undefined, `no token could be obtained: ${(error as Error).message}`, 'fix "auth" (a JWT secret, or a command printing one token)');
  }
  return { kind: 'http', id: config.id, description: config.description ?? `${config.id} at ${baseUrl}`, available: true, capabilities: declared, config: { ...config, baseUrl }, configDir };
}

function runReset(command: string[], cwd: string, deadlineMs: number): Promise<void> {
  const [program, ...args] = command;
  if (program === undefined) return Promise.resolve();
  return new Promise((done, fail) => {
    execFile(program, args, { cwd, timeout: deadlineMs }, (error, _stdout, stderr) => (error ? fail(new Error(`reset command ${JSON.stringify(command)} failed: ${error.message}\n${stderr}`)) : done()));
  });
}

export async function openHttpServer(setup: HttpServerSetup, scenario: ScenarioSetup): Promise<ServerAdapter> {
  const { config } = setup;
  if (config.resetCommand) await runReset(config.resetCommand, setup.configDir, scenario.deadlineMs);
  const sql = config.databaseUrl ? new SqlControls(config.databaseUrl) : undefined;
  const has = (capability: ServerCapability) => sql !== undefined && setup.capabilities.includes(capability);
  return {
    id: setup.id,
    capabilities: setup.capabilities,
    baseUrl: config.baseUrl,
    token: (userId) => tokenFor(config.auth, userId, setup.configDir),
    ...(has('provision') && sql ? { provision: sql.provision } : {}),
    ...(has('sourceSql') && sql ? { sourceSql: sql.sourceSql } : {}),
    ...(has('scopes') && sql ? { scopes: sql.scopes } : {}),
    ...(has('schema') && sql ? { schema: sql.schema } : {}),
    ...(has('inspect') && sql ? { inspect: sql.inspect } : {}),
    async close() {
      await sql?.close();
    },
  };
}
