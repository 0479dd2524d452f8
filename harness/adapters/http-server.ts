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
/** Capabilities whose scenarios create tables and rows: each needs the state the previous one left removed. */
const STATEFUL_CAPABILITIES: readonly ServerCapability[] = ['provision', 'sourceSql'];
const RESET_DEADLINE_MS = 120_000;
const PROBE_TABLE = 'synchro_conformance_reset_probe';

/**
 * Proves the reset before any scenario relies on it: a table and row written
 * after one reset must be gone after the next. Without that, the second
 * scenario meets the first one's tables ("relation already exists") and every
 * later verdict is about leftovers.
 */
async function verifyReset(config: HttpServerConfig, file: string, configDir: string): Promise<void> {
  if (!config.resetCommand) {
    throw new InputError(file, undefined, 'the SQL capabilities provision and sourceSql need "resetCommand": every scenario creates its own tables in the server\'s database, so it must start from a clean one', 'add a "resetCommand" that returns the server and its database to their freshly installed state (docs/adapters.md, Resetting an external server)');
  }
  const databaseUrl = config.databaseUrl as string;
  // A connection per probe: the reset may end every session of the database.
  const probe = async (...statements: string[]): Promise<unknown> => {
    const controls = new SqlControls(databaseUrl);
    try {
      let last: unknown;
      for (const sql of statements) {
        const [row] = await controls.query(sql);
        last = row === undefined ? undefined : Object.values(row)[0];
      }
      return last;
    } finally {
      await controls.close();
    }
  };
  try {
    await runReset(config.resetCommand, configDir, RESET_DEADLINE_MS);
    await probe(`CREATE TABLE ${PROBE_TABLE} (id integer PRIMARY KEY)`, `INSERT INTO ${PROBE_TABLE} VALUES (1)`);
    await runReset(config.resetCommand, configDir, RESET_DEADLINE_MS);
  } catch (error) {
    throw new InputError(file, undefined, `the reset could not be verified: ${(error as Error).message}`, 'make "resetCommand" succeed against the server named by "baseUrl" and "databaseUrl"');
  }
  const left = await probe(`SELECT to_regclass('${PROBE_TABLE}') IS NOT NULL`);
  if (left === true) {
    await probe(`DROP TABLE IF EXISTS ${PROBE_TABLE}`);
    throw new InputError(file, undefined, `"resetCommand" does not reset the database: a table created after one reset was still there after the next`, 'make the reset recreate the database (or drop every application table and the server\'s sync state) before the server answers again');
  }
}

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
  if (config.databaseUrl && declared.some((capability) => STATEFUL_CAPABILITIES.includes(capability))) await verifyReset(config, file, configDir);
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
