/**
 * The generic HTTP server adapter: certifies any implementation, in any
 * language, from a JSON config (URL, how to get a token, an optional
 * PostgreSQL DSN for the SQL capabilities, an optional control URL speaking
 * the control protocol, an optional reset command). The server is
 * black-box: the harness neither starts nor stops it.
 *
 * Capabilities come from two places: `databaseUrl` backs the SQL groups
 * (provision, sourceSql, scopes, schema, inspect), and `controlUrl` backs
 * whatever the server's capabilities document offers (capture, clock,
 * clients, compaction, logs, seed; docs/control-protocol.md). The reference
 * adapter is this adapter plus starting and stopping the reference server.
 */
import { execFile } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { InputError } from '../errors.ts';
import type { ServerCapability } from './capabilities.ts';
import type { HttpServerConfig } from './config.ts';
import { type CapabilitiesDocument, ControlClient, capabilitiesOffered, controlGroups, discoverControls } from './control-protocol.ts';
import { type ArtifactCommand, artifactByCommand } from './seed-artifact-command.ts';
import type { DatabaseRole, InspectControl, ScenarioSetup, ServerAdapter } from './server.ts';
import type { HttpServerSetup } from './setup.ts';
import { SqlControls } from './sql-controls.ts';
import { tokenFor } from './token.ts';

/** What a DSN alone can back; the other groups need the control protocol. */
export const SQL_CAPABILITIES: readonly ServerCapability[] = ['provision', 'sourceSql', 'scopes', 'schema', 'inspect'];
const PREFLIGHT_DEADLINE_MS = 5_000;
/** Capabilities whose scenarios create tables and rows: each needs the state the previous one left removed. */
const STATEFUL_CAPABILITIES: readonly ServerCapability[] = ['provision', 'sourceSql'];
const RESET_DEADLINE_MS = 120_000;
const PROBE_TABLE = 'synchro_conformance_reset_probe';

/** How a scenario's state is cleared: the protocol's `reset` control, else `resetCommand`, else not at all. */
type Reset = (deadlineMs: number) => Promise<void>;

function resetOf(config: HttpServerConfig, configDir: string, controls: CapabilitiesDocument | undefined): Reset | undefined {
  if (controls?.controls.reset !== undefined && config.controlUrl !== undefined) {
    const client = new ControlClient(config.controlUrl, controls);
    return async (deadlineMs) => void (await client.call('reset', {}, deadlineMs));
  }
  const command = config.resetCommand;
  if (command !== undefined) return (deadlineMs) => runReset(command, configDir, deadlineMs);
  return undefined;
}

/**
 * Proves the reset before any scenario relies on it: a table and row written
 * after one reset must be gone after the next. Without that, the second
 * scenario meets the first one's tables ("relation already exists") and every
 * later verdict is about leftovers.
 */
async function verifyReset(config: HttpServerConfig, file: string, reset: Reset | undefined): Promise<void> {
  if (reset === undefined) {
    throw new InputError(
      file,
      undefined,
      'the SQL capabilities provision and sourceSql need a per-scenario reset: every scenario creates its own tables in the server\'s database, so it must start from a clean one',
      'offer the control protocol\'s "reset" at "controlUrl", or add a "resetCommand" that returns the server and its database to their freshly installed state (docs/adapters.md, Resetting an external server)',
    );
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
    await reset(RESET_DEADLINE_MS);
    await probe(`CREATE TABLE ${PROBE_TABLE} (id integer PRIMARY KEY)`, `INSERT INTO ${PROBE_TABLE} VALUES (1)`);
    await reset(RESET_DEADLINE_MS);
  } catch (error) {
    throw new InputError(file, undefined, `the reset could not be verified: ${(error as Error).message}`, 'make the reset ("reset" control or "resetCommand") succeed against the server named by "baseUrl" and "databaseUrl"');
  }
  const left = await probe(`SELECT to_regclass('${PROBE_TABLE}') IS NOT NULL`);
  if (left === true) {
    await probe(`DROP TABLE IF EXISTS ${PROBE_TABLE}`);
    throw new InputError(file, undefined, `the reset does not reset the database: a table created after one reset was still there after the next`, 'make the reset recreate the database (or drop every application table and the server\'s sync state) before the server answers again');
  }
}

/** Checks the config against what this adapter and the server can do and that the server answers; errors before any scenario. */
export async function prepareHttpServer(config: HttpServerConfig, file: string): Promise<HttpServerSetup> {
  const baseUrl = config.baseUrl.replace(/\/$/, '');
  try {
    await fetch(`${baseUrl}/ready`, { signal: AbortSignal.timeout(PREFLIGHT_DEADLINE_MS) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new InputError(file, undefined, `the server at ${baseUrl} does not answer GET /ready (${cause})`, 'start the server first or correct "baseUrl"');
  }
  let controls: CapabilitiesDocument | undefined;
  if (config.controlUrl !== undefined) {
    try {
      controls = await discoverControls(config.controlUrl);
    } catch (error) {
      throw new InputError(file, undefined, `the control protocol at "controlUrl" cannot be used: ${(error as Error).message}`, 'serve the capabilities document at <controlUrl>/capabilities (docs/control-protocol.md) or remove "controlUrl"');
    }
  }
  const fromControls = controls === undefined || config.controlUrl === undefined ? [] : capabilitiesOffered(new ControlClient(config.controlUrl, controls));
  const available = [...(config.databaseUrl ? SQL_CAPABILITIES : []), ...fromControls];
  const declared = config.capabilities ?? available;
  for (const capability of declared) {
    if (available.includes(capability)) continue;
    if (SQL_CAPABILITIES.includes(capability)) throw new InputError(file, undefined, `capability "${capability}" needs a PostgreSQL DSN`, 'add "databaseUrl" or remove the capability');
    const where = controls === undefined ? 'no "controlUrl" is configured' : "the server's capabilities document does not offer its controls";
    throw new InputError(file, undefined, `the "${capability}" capability is declared but ${where}`, `remove it from "capabilities", or offer its controls over the control protocol (docs/adapters.md lists which controls earn it)`);
  }
  if (config.seedArtifact !== undefined && !declared.includes('seed')) {
    throw new InputError(file, undefined, '"seedArtifact" is given but the seed capability is not available', 'offer the "seed.export" control at "controlUrl" (a seed artifact is built beside the export), or remove "seedArtifact"');
  }
  const configDir = dirname(resolve(file));
  try {
    await tokenFor(config.auth, 'preflight-user', configDir);
  } catch (error) {
    throw new InputError(file, undefined, `no token could be obtained: ${(error as Error).message}`, 'fix "auth" (a JWT secret, or a command printing one token)');
  }
  if (config.databaseUrl && declared.some((capability) => STATEFUL_CAPABILITIES.includes(capability))) await verifyReset(config, file, resetOf(config, configDir, controls));
  return {
    kind: 'http',
    id: config.id,
    description: config.description ?? `${config.id} at ${baseUrl}`,
    available: true,
    capabilities: [...declared],
    forms: [...(config.forms ?? [])],
    config: { ...config, baseUrl },
    configDir,
    ...(controls === undefined ? {} : { controls }),
  };
}

function runReset(command: string[], cwd: string, deadlineMs: number): Promise<void> {
  const [program, ...args] = command;
  if (program === undefined) return Promise.resolve();
  return new Promise((done, fail) => {
    execFile(program, args, { cwd, timeout: deadlineMs }, (error, _stdout, stderr) => (error ? fail(new Error(`reset command ${JSON.stringify(command)} failed: ${error.message}\n${stderr}`)) : done()));
  });
}

/** Everything the adapter needs to reach one server, however it was started. */
export interface HttpTarget {
  id: string;
  baseUrl: string;
  token(userId: string): Promise<string>;
  /** The capabilities the run declared: groups outside it are not handed to the scenarios. */
  capabilities: readonly ServerCapability[];
  databaseUrl?: string;
  /** Optional: a DSN per database role, of a login in that role only (`sourceSql.asRole`). */
  roleDatabaseUrls?: Partial<Record<DatabaseRole, string>>;
  controlUrl?: string;
  /** The capabilities document read at preflight. */
  controls?: CapabilitiesDocument;
  /** The builder command behind `seed.exportArtifact`, when the server has one. */
  seedArtifact?: ArtifactCommand;
}

/** The adapter over one running server: SQL groups through the DSN, the others through the control protocol. */
export async function openHttpAdapter(target: HttpTarget): Promise<ServerAdapter> {
  const sql = target.databaseUrl ? new SqlControls(target.databaseUrl, target.roleDatabaseUrls) : undefined;
  const groups = target.controls !== undefined && target.controlUrl !== undefined ? controlGroups(new ControlClient(target.controlUrl, target.controls)) : { capabilities: [] };
  const declared = (capability: ServerCapability) => target.capabilities.includes(capability);
  const sqlGroup = (capability: ServerCapability) => sql !== undefined && declared(capability);
  let inspect: InspectControl | undefined;
  if (sqlGroup('inspect') && sql) {
    // The readiness observations come from the server itself when it offers them; the queries always need SQL.
    inspect = groups.readiness === undefined ? sql.inspect : { ...sql.inspect, ...groups.readiness };
  }
  const logs = declared('logs') && groups.openLogs ? await groups.openLogs() : undefined;
  let capture = groups.capture;
  // Without the capture capability only the wait is handed out, so a scenario never finds half a worker control set.
  if (capture !== undefined && !declared('capture')) capture = { awaitMaterialized: capture.awaitMaterialized };
  return {
    id: target.id,
    capabilities: target.capabilities,
    baseUrl: target.baseUrl,
    token: target.token,
    ...(sqlGroup('provision') && sql ? { provision: sql.provision } : {}),
    ...(sqlGroup('sourceSql') && sql ? { sourceSql: groups.pushInTransaction === undefined ? sql.sourceSql : { ...sql.sourceSql, pushInTransaction: groups.pushInTransaction } } : {}),
    ...(sqlGroup('scopes') && sql ? { scopes: sql.scopes } : {}),
    ...(sqlGroup('schema') && sql ? { schema: sql.schema } : {}),
    ...(inspect ? { inspect } : {}),
    ...(capture ? { capture } : {}),
    ...(declared('clock') && groups.clock ? { clock: groups.clock } : {}),
    ...(declared('clients') && groups.clients ? { clients: groups.clients } : {}),
    ...(declared('compaction') && groups.compaction ? { compaction: groups.compaction } : {}),
    ...(declared('seed') && groups.seed ? { seed: target.seedArtifact === undefined ? groups.seed : { ...groups.seed, ...artifactByCommand(target.seedArtifact) } } : {}),
    ...(logs ? { logs } : {}),
    async close() {
      await groups.closeSeedSessions?.();
      await sql?.close();
    },
  };
}

/**
 * Adapters this process opened on an external server and not yet closed. A
 * scenario's teardown overlaps the next scenario, but a reset ends every
 * session of the server's database: whatever the previous scenario still
 * holds is closed first, so the reset never cuts a session in use.
 */
const stillOpen = new Set<ServerAdapter>();

export async function openHttpServer(setup: HttpServerSetup, scenario: ScenarioSetup): Promise<ServerAdapter> {
  const { config } = setup;
  const reset = resetOf(config, setup.configDir, setup.controls);
  if (reset) {
    await Promise.all([...stillOpen].map((adapter) => adapter.close()));
    await reset(scenario.deadlineMs);
  }
  const adapter = await openHttpAdapter({
    id: setup.id,
    baseUrl: config.baseUrl,
    token: (userId) => tokenFor(config.auth, userId, setup.configDir),
    capabilities: setup.capabilities,
    ...(config.databaseUrl === undefined ? {} : { databaseUrl: config.databaseUrl }),
    ...(config.roleDatabaseUrls === undefined ? {} : { roleDatabaseUrls: config.roleDatabaseUrls }),
    ...(config.controlUrl === undefined ? {} : { controlUrl: config.controlUrl }),
    ...(setup.controls === undefined ? {} : { controls: setup.controls }),
    ...(config.seedArtifact === undefined
      ? {}
      : { seedArtifact: { command: config.seedArtifact.command, cwd: setup.configDir, env: process.env, deadlineMs: scenario.deadlineMs, ...(config.seedArtifact.intercepts === undefined ? {} : { intercepts: config.seedArtifact.intercepts }) } }),
  });
  const tracked: ServerAdapter = {
    ...adapter,
    async close() {
      stillOpen.delete(tracked);
      await adapter.close();
    },
  };
  stillOpen.add(tracked);
  return tracked;
}
