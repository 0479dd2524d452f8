/**
 * The reference server adapter: cluster management plus the generic HTTP
 * adapter. Per run: one shared database cluster (the reference's own cluster
 * module, the only reference code the harness imports) and a template
 * database every scenario clones. Per scenario: a fresh clone and a server
 * instance on a free loopback port with the control protocol enabled,
 * stopped and dropped at teardown. The instance runs in the worker's server
 * host (`reference/server/host.ts`, one process per set of fault switches),
 * or in a process of its own (`reference/server/main.ts`) when the scenario
 * must kill it for real.
 *
 * Once started, the server is reached exactly as a third-party one is: the
 * wire at its base URL, the SQL groups through its database URL, every other
 * control through the control protocol at `<baseUrl>/__control` (its
 * capabilities document read once at preflight). Nothing else passes between
 * the harness and the server process but starting and stopping it. The seed
 * artifact builder (`reference/seed-artifact/`) is a separate program over
 * the database, run by the harness beside the server, not a server channel.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { ServerCapability } from './capabilities.ts';
import { describeExit, OwnedProcess, withDeadline } from './child.ts';
import { ControlClient, capabilitiesOffered, discoverControls } from './control-protocol.ts';
import { type ExtensionCluster, extensionControl } from './extension-control.ts';
import { openHttpAdapter, SQL_CAPABILITIES } from './http-server.ts';
import { type NetworkObserver, observeNetwork } from './network-observer.ts';
import { type HostedInstance, startHostedInstance } from './reference-host.ts';
import { referenceSeedArtifact } from './reference-seed.ts';
import type { DatabaseCrashControl, DatabaseRole, LogsControl, NetworkControl, Row, ScenarioSetup, ServerAdapter, SourceSqlSession, StartAttempt } from './server.ts';
import type { ReferenceServerSetup, RoleLogin, ServerSetup } from './setup.ts';
import { unavailable } from './setup.ts';
import { mintJwt } from './token.ts';
import { type HbaCluster, workerConnectionControl } from './worker-connections.ts';

export const REFERENCE_SERVER_ENTRY = 'reference/server/main.ts';
/** Where the reference keeps its cluster module; the first that exists is used. */
const CLUSTER_MODULES = ['reference/server/db/index.ts', 'reference/server/db/cluster.ts'];
/** What the preflight instance is opened with; the run's capabilities are then read from its capabilities document. */
const REFERENCE_CAPABILITIES: ServerCapability[] = ['provision', 'sourceSql', 'scopes', 'schema', 'capture', 'inspect', 'logs', 'clock', 'clients', 'compaction', 'seed'];
const START_DEADLINE_MS = 60_000;

/** The part of the reference cluster module the adapter uses. */
interface Cluster extends Partial<ExtensionCluster> {
  adminUrl: string;
  urlFor(database: string): string;
  createTemplate(name: string): Promise<unknown>;
  /** Embedded clusters: immediate shutdown and start again (reference/server/db/cluster.ts). */
  restartImmediately?(): Promise<void>;
  /** The deployment's HBA rules for a worker login (reference/server/db/cluster.ts). */
  restrictWorkerLogin?: HbaCluster['restrictWorkerLogin'];
  /** A new database as a file copy of a template (reference/server/db/cluster.ts). */
  cloneDatabase?(template: string, name: string): Promise<void>;
  stop(): Promise<void>;
}

/** The cluster module's operations on a cluster it did not start, as the scenarios' servers use them. */
type AttachedCluster = ExtensionCluster & HbaCluster & Required<Pick<Cluster, 'cloneDatabase'>>;

type ClusterModule = { startCluster?: (env?: NodeJS.ProcessEnv) => Promise<Cluster> };

/** Whether the cluster module packages the server as a PostgreSQL extension. */
function offersExtension(cluster: Cluster): cluster is Cluster & ExtensionCluster {
  return typeof cluster.createExtensionDatabase === 'function' && typeof cluster.provisionRoles === 'function' && typeof cluster.extensionPackage === 'function' && typeof cluster.dropDatabase === 'function';
}

export interface PreparedServer {
  setup: ServerSetup;
  /** Stops the cluster; safe to call when none was started. */
  close(): Promise<void>;
}

const DESCRIPTION = `Synchro reference server (${REFERENCE_SERVER_ENTRY})`;

/** Starts the run's cluster and proves the reference server starts on it; otherwise reports it unavailable. */
export async function prepareReferenceServer(root: string): Promise<PreparedServer> {
  const none = async () => {};
  if (!existsSync(join(root, REFERENCE_SERVER_ENTRY))) {
    return { setup: unavailable('reference', DESCRIPTION, `the reference server is not built yet: ${REFERENCE_SERVER_ENTRY} does not exist`), close: none };
  }
  const modulePath = CLUSTER_MODULES.map((path) => join(root, path)).find((path) => existsSync(path));
  if (!modulePath) return { setup: unavailable('reference', DESCRIPTION, `the reference cluster module (${CLUSTER_MODULES.join(' or ')}) does not exist yet`), close: none };
  let cluster: Cluster;
  try {
    const module = (await import(pathToFileURL(modulePath).href)) as ClusterModule;
    if (typeof module.startCluster !== 'function') return { setup: unavailable('reference', DESCRIPTION, `${modulePath} does not export startCluster()`), close: none };
    cluster = await module.startCluster();
  } catch (error) {
    return { setup: unavailable('reference', DESCRIPTION, `the database cluster did not start: ${(error as Error).message}`), close: none };
  }
  const close = () => cluster.stop();
  const template = `synchro_template_${process.pid}`;
  const setup: ReferenceServerSetup = {
    kind: 'reference',
    id: 'reference',
    description: DESCRIPTION,
    available: true,
    capabilities: REFERENCE_CAPABILITIES,
    entry: join(root, REFERENCE_SERVER_ENTRY),
    jwtSecret: randomBytes(32).toString('hex'),
    cluster: { adminUrl: cluster.adminUrl, template },
  };
  try {
    await cluster.createTemplate(template);
    setup.cluster = { adminUrl: cluster.adminUrl, template, roleLogins: await createRoleLogins(cluster.adminUrl) };
    if (offersExtension(cluster)) {
      // The reference installs its SQL as the extension the cluster module packages (decision 280).
      setup.cluster = { ...setup.cluster, module: modulePath, extension: (await cluster.extensionPackage()).name };
      setup.forms = ['postgresql-extension'];
    }
    // Preflight: one real start on a scratch clone, so a server that cannot start is reported once, not per scenario.
    const probe = await openReferenceServer(setup, { name: `preflight_${process.pid}`, faults: [], deadlineMs: START_DEADLINE_MS });
    const ready = await fetch(`${probe.baseUrl}/ready`).then((response) => response.status, (error: Error) => error.message);
    // Every instance serves the same document: it is read once, here, like a third-party server's at preflight.
    const controls = await discoverControls(controlUrlOf(probe.baseUrl)).catch((error: Error) => error);
    await probe.close();
    if (typeof ready === 'string') throw new Error(`GET /ready did not answer: ${ready}`);
    if (controls instanceof Error) throw new Error(`the control protocol did not answer: ${controls.message}`);
    setup.controls = controls;
    // Discovered, as for any server: the SQL groups plus what the document's controls earn.
    setup.capabilities = [...SQL_CAPABILITIES, ...capabilitiesOffered(new ControlClient(controlUrlOf(probe.baseUrl), controls))];
  } catch (error) {
    await close().catch(() => {});
    return { setup: unavailable('reference', DESCRIPTION, `the reference server does not start and answer: ${(error as Error).message}`), close: none };
  }
  return { setup, close };
}

/** Where a reference server serves the control protocol. */
const controlUrlOf = (baseUrl: string) => `${baseUrl}/__control`;

function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * The roles `sourceSql.asRole` offers on the reference: a login per runtime
 * group with that group as its only membership, and one in no Synchro group
 * (`public`). Roles are cluster-wide: created once per run, with a fresh
 * password so a cluster that asks for one accepts it. `synchro_worker` is
 * offered too, as each scenario database's own worker login, which the
 * server's capture connects as (provisionWorkerLogin, decision 350).
 */
const ROLE_LOGINS: Partial<Record<DatabaseRole, string>> = {
  synchro_adapter: 'synchro_conformance_adapter_login',
  synchro_seed: 'synchro_conformance_seed_login',
  synchro_monitor: 'synchro_conformance_monitor_login',
  synchro_operator: 'synchro_conformance_operator_login',
  public: 'synchro_conformance_public_login',
};

export async function createRoleLogins(adminUrl: string): Promise<Partial<Record<DatabaseRole, RoleLogin>>> {
  const password = randomBytes(18).toString('hex');
  const logins: Partial<Record<DatabaseRole, RoleLogin>> = {};
  await admin(adminUrl, async (client) => {
    for (const [role, user] of Object.entries(ROLE_LOGINS) as [DatabaseRole, string][]) {
      const exists = (await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [user])).rowCount !== 0;
      const attributes = `LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION INHERIT PASSWORD '${password}'`;
      await client.query(`${exists ? 'ALTER' : 'CREATE'} ROLE ${quoteIdent(user)} ${attributes}`);
      if (role !== 'public') await client.query(`GRANT ${quoteIdent(role)} TO ${quoteIdent(user)}`);
      logins[role] = { user, password };
    }
  });
  return logins;
}

/** The scenario database's URL as each role's login. */
export function roleDatabaseUrls(url: string, logins: Partial<Record<DatabaseRole, RoleLogin>> | undefined): Partial<Record<DatabaseRole, string>> {
  const urls: Partial<Record<DatabaseRole, string>> = {};
  for (const [role, login] of Object.entries(logins ?? {}) as [DatabaseRole, RoleLogin][]) {
    const asRole = new URL(url);
    asRole.username = login.user;
    asRole.password = login.password;
    urls[role] = asRole.toString();
  }
  return urls;
}

async function admin<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const projectRoot = (setup: ReferenceServerSetup) => join(setup.entry, '..', '..', '..');

/** A server in a process of its own, which a scenario may kill for real. */
interface OwnServerProcess extends HostedInstance {
  kill(): Promise<void>;
  /** What the process wrote on stderr (its log lines among them), kept after it exited. */
  stderr(): string;
  /** strace attached to the process, when the scenario observes its network. */
  observer?: NetworkObserver;
}

/** The loaded module that refuses every connection but the database's (`ScenarioSetup.network` `database-only`). */
const EGRESS_GUARD = new URL('./egress-guard.ts', import.meta.url).href;

/** The `host:port` a database URL points at. */
function databaseEndpoint(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port === '' ? '5432' : parsed.port}`;
}

/** Starts `main.ts` in a process of its own (on `port`, or a free one for 0), resolving once it printed its listening line (and, with `network`, once strace observes it). */
async function startServerProcess(setup: ReferenceServerSetup, database: ScenarioDatabase, faults: readonly string[], deadlineMs: number, port = 0, network?: ScenarioSetup['network']): Promise<OwnServerProcess> {
  const url = database.url;
  const guard = network === 'database-only' ? ['--import', EGRESS_GUARD] : [];
  const args = [process.execPath, ...guard, setup.entry, '--host', '127.0.0.1', '--port', String(port), '--database-url', url, '--worker-database-url', database.workerUrl, '--jwt-secret', setup.jwtSecret, '--test-controls', '--capture'];
  const env = { ...process.env, ...(faults.length > 0 ? { SYNCHRO_FAULTS: faults.join(',') } : {}), ...(network === 'database-only' ? { SYNCHRO_EGRESS_ALLOW: databaseEndpoint(url) } : {}) };
  if (faults.length === 0) delete env.SYNCHRO_FAULTS;
  const child = new OwnedProcess(args, { cwd: projectRoot(setup), env });
  const listening = new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.process.stdout as NodeJS.ReadableStream });
    lines.on('line', (line) => {
      try {
        const event = JSON.parse(line) as { event?: unknown; url?: unknown };
        if (event.event === 'listening' && typeof event.url === 'string') resolve(event.url);
      } catch {
        // Only the listening line is meaningful on stdout; anything else is ignored here.
      }
    });
    void child.exited.then((exit) => reject(new Error(`the reference server ${describeExit(exit)} before listening\n${child.stderr.trim().split('\n').slice(-20).join('\n')}`)));
  });
  try {
    const baseUrl = await withDeadline(listening, deadlineMs, () => `the reference server did not print its listening line within ${deadlineMs} ms\n${child.stderr.trim().split('\n').slice(-20).join('\n')}`);
    const traceFile = join(tmpdir(), `synchro-network-${process.pid}-${child.pid}.trace`);
    const observer = network === undefined ? undefined : await observeNetwork(child.pid as number, traceFile);
    const detach = async () => {
      await observer?.stop();
      if (observer !== undefined) rmSync(traceFile, { force: true });
    };
    return {
      baseUrl,
      stderr: () => child.stderr,
      alive: () => child.alive,
      stop: async () => {
        await detach();
        await child.stop(5_000);
      },
      kill: async () => {
        await child.kill();
        await detach();
      },
      ...(observer === undefined ? {} : { observer }),
    };
  } catch (error) {
    await child.kill();
    throw error;
  }
}

/** Starts `main.ts` with extra settings and reports whether it came up before ending; a server that comes up is stopped at once. */
async function attemptStart(setup: ReferenceServerSetup, url: string, faults: readonly string[], settings: Readonly<Record<string, string>>, deadlineMs: number): Promise<StartAttempt> {
  // The `--name=value` form hands the value over exactly as written, even one that starts with a dash or is empty.
  const extra = Object.entries(settings).map(([name, value]) => `--${name}=${value}`);
  const args = [process.execPath, setup.entry, '--host', '127.0.0.1', '--port', '0', '--database-url', url, '--jwt-secret', setup.jwtSecret, ...extra];
  const env = { ...process.env, ...(faults.length > 0 ? { SYNCHRO_FAULTS: faults.join(',') } : {}) };
  if (faults.length === 0) delete env.SYNCHRO_FAULTS;
  const child = new OwnedProcess(args, { cwd: projectRoot(setup), env });
  let stdout = '';
  const outcome = new Promise<StartAttempt>((resolve) => {
    const lines = createInterface({ input: child.process.stdout as NodeJS.ReadableStream });
    lines.on('line', (line) => {
      stdout += `${line}\n`;
      if (line.includes('"listening"')) resolve({ started: true, output: stdout + child.stderr });
    });
    void child.exited.then((exit) => resolve({ started: false, exit: describeExit(exit), output: stdout + child.stderr }));
  });
  try {
    return await withDeadline(outcome, deadlineMs, () => `a server started with ${extra.join(' ')} neither listened nor ended within ${deadlineMs} ms`);
  } finally {
    await child.stop(5_000).catch(() => child.kill());
  }
}

/** The database a scenario's server runs on, and how it goes away. */
interface ScenarioDatabase {
  url: string;
  /** The same database as its own worker login, which the server's capture worker connects as (decision 350). */
  workerUrl: string;
  roleLogins: Partial<Record<DatabaseRole, RoleLogin>> | undefined;
  drop(): Promise<void>;
  /** Only for a database in a cluster of its own. */
  crash?: DatabaseCrashControl;
  /** Where the worker login's HBA rules are written, when the cluster module can (workerConnections). */
  hba?: HbaCluster;
}

/**
 * A durable embedded cluster started for this scenario alone, with the
 * database installed in it, for a scenario that crashes the database
 * (`ScenarioSetup.ownDatabase`). Undefined when the cluster module gives no
 * immediate restart (an existing server or a container is never crashed).
 */
async function ownClusterDatabase(setup: ReferenceServerSetup, database: string): Promise<ScenarioDatabase | undefined> {
  const modulePath = CLUSTER_MODULES.map((path) => join(projectRoot(setup), path)).find((path) => existsSync(path));
  if (modulePath === undefined) return undefined;
  const module = (await import(pathToFileURL(modulePath).href)) as { startCluster?: (env: NodeJS.ProcessEnv, mode: 'durable') => Promise<Cluster> };
  if (typeof module.startCluster !== 'function') return undefined;
  // Durable: an immediate shutdown must lose nothing a commit reported durable.
  const cluster = await module.startCluster(process.env, 'durable');
  const restart = cluster.restartImmediately?.bind(cluster);
  if (restart === undefined) {
    await cluster.stop();
    return undefined;
  }
  try {
    await cluster.createTemplate(database);
    const url = databaseUrl(cluster.adminUrl, database);
    // The whole cluster goes at teardown, the worker login with it.
    const workerUrl = await provisionWorkerLogin(cluster.adminUrl, database);
    const hba = cluster.restrictWorkerLogin === undefined ? {} : { hba: { restrictWorkerLogin: cluster.restrictWorkerLogin.bind(cluster) } };
    return { url, workerUrl, roleLogins: await createRoleLogins(cluster.adminUrl), drop: () => cluster.stop(), crash: { restartImmediately: restart, sessionInOtherDatabase: (other) => otherDatabaseSession(cluster.adminUrl, other) }, ...hba };
  } catch (error) {
    await cluster.stop().catch(() => {});
    throw error;
  }
}

/**
 * A superuser session in another database of a scenario's own cluster,
 * created empty on first use; the cluster, and the session with it, ends when
 * the scenario's server closes.
 */
async function otherDatabaseSession(adminUrl: string, name: string): Promise<SourceSqlSession> {
  await admin(adminUrl, async (client) => {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE template0`);
  });
  const client = new pg.Client({ connectionString: databaseUrl(adminUrl, name) });
  // The cluster stops under it at the scenario's end: that must not end the harness.
  client.on('error', () => undefined);
  await client.connect();
  return {
    query: async <R extends Row = Row>(sql: string, params: readonly unknown[] = []) => (await client.query(sql, params as unknown[])).rows as R[],
    close: () => client.end(),
  };
}

/** The worker login of one scenario database: cluster-wide, so named after the database (as the cluster module names it). */
function workerLoginOf(database: string): string {
  return `${database.slice(0, 56)}_worker`;
}

/**
 * What a deployment provisions for the capture worker (SYNC-OPS-002): one
 * login, LOGIN REPLICATION NOINHERIT with nothing else, member of
 * synchro_worker only, with a password of its own (a cluster that asks for
 * one gets it). It may log a running-transactions record, which keeps the
 * slot's restart point moving under load (worker.ts, nudgeRestartPoint): a
 * grant on a system function, not a Synchro one. Returns the database's URL
 * as that login.
 */
async function provisionWorkerLogin(adminUrl: string, database: string): Promise<string> {
  const login = workerLoginOf(database);
  const password = randomBytes(18).toString('hex');
  // Function privileges live in the database's own catalog: granted there, and gone with it. The login and
  // the setting that names it as this database's worker login (the 005 sheet's synchro.worker_login, which
  // readiness compares with) appear in one transaction: concurrent scenarios' readiness never sees a
  // replication login that no database configures.
  await admin(databaseUrl(adminUrl, database), (client) =>
    client.query(
      [
        'BEGIN',
        `CREATE ROLE ${quoteIdent(login)} LOGIN REPLICATION NOINHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD '${password}' IN ROLE synchro_worker`,
        `GRANT EXECUTE ON FUNCTION pg_catalog.pg_log_standby_snapshot() TO ${quoteIdent(login)}`,
        `ALTER DATABASE ${quoteIdent(database)} SET synchro.worker_login = '${login}'`,
        'COMMIT',
      ].join('; '),
    ),
  );
  const url = new URL(databaseUrl(adminUrl, database));
  url.username = login;
  url.password = password;
  return url.toString();
}

/** Takes REPLICATION from `login` if it exists (a teardown after a failed provisioning finds none). */
async function dropReplication(client: pg.Client, login: string): Promise<void> {
  if ((await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [login])).rowCount !== 0) await client.query(`ALTER ROLE ${quoteIdent(login)} NOREPLICATION`);
}

/** A fresh clone of the run's template in the run's shared cluster. */
async function sharedClusterDatabase(setup: ReferenceServerSetup, database: string): Promise<ScenarioDatabase> {
  const cluster = setup.cluster;
  if (!cluster) throw new Error('the reference server setup has no database cluster');
  const attached = cluster.module === undefined ? undefined : attachedCluster(cluster.module, cluster.adminUrl);
  // The cluster module clones on the superuser session it keeps between statements (a backend start less per scenario).
  if (attached !== undefined) await attached.cloneDatabase(cluster.template, database);
  else await admin(cluster.adminUrl, (client) => client.query(`CREATE DATABASE ${quoteIdent(database)} TEMPLATE ${quoteIdent(cluster.template)} STRATEGY FILE_COPY`));
  // The capture worker's logical slot pins the database, so it goes first; the worker login (cluster-wide) goes with the database.
  // The cluster module drops the same and also removes the worker login's HBA file (workerConnections).
  const drop = async () =>
    attached !== undefined ? attached.dropDatabase(database) : admin(cluster.adminUrl, async (client) => {
      await client.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1 AND NOT active', [database]);
      // The login stops being a replication principal before the setting that names it goes with the database.
      await dropReplication(client, workerLoginOf(database));
      await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
      await client.query(`DROP ROLE IF EXISTS ${quoteIdent(workerLoginOf(database))}`);
    });
  try {
    const hba = attached === undefined ? {} : { hba: attached };
    return { url: databaseUrl(cluster.adminUrl, database), workerUrl: await provisionWorkerLogin(cluster.adminUrl, database), roleLogins: cluster.roleLogins, drop, ...hba };
  } catch (error) {
    await drop().catch(() => {});
    throw error;
  }
}

/** One scenario's reference server on a fresh clone of the template (or, when asked, in a cluster of its own). */
export async function openReferenceServer(setup: ReferenceServerSetup, scenario: ScenarioSetup): Promise<ServerAdapter> {
  const database = `synchro_${scenario.name}`.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 63);
  const scenarioDatabase = (scenario.ownDatabase === true ? await ownClusterDatabase(setup, database) : undefined) ?? (await sharedClusterDatabase(setup, database));
  const { url, crash } = scenarioDatabase;
  const dropDatabase = () => scenarioDatabase.drop();
  let started: HostedInstance;
  let own: OwnServerProcess | undefined;
  try {
    // A database that will crash gets a server process of its own: a shared host would lose every server in it if one mishandled the crash.
    if (scenario.ownProcess === true || scenario.network !== undefined || crash !== undefined) own = await startServerProcess(setup, scenarioDatabase, scenario.faults, scenario.deadlineMs, 0, scenario.network);
    started = own ?? (await startHostedInstance(setup.entry, projectRoot(setup), scenario.faults, url, setup.jwtSecret, scenarioDatabase.workerUrl));
  } catch (error) {
    await dropDatabase().catch(() => {});
    throw error;
  }
  let adapter: ServerAdapter;
  try {
    adapter = await openHttpAdapter({
      id: setup.id,
      baseUrl: started.baseUrl,
      token: (userId) => mintJwt({ secret: setup.jwtSecret }, userId),
      capabilities: setup.capabilities,
      databaseUrl: url,
      // The worker login is the one the server's capture connects as (decision 350).
      roleDatabaseUrls: { ...roleDatabaseUrls(url, scenarioDatabase.roleLogins), synchro_worker: scenarioDatabase.workerUrl },
      controlUrl: controlUrlOf(started.baseUrl),
      controls: setup.controls ?? (await discoverControls(controlUrlOf(started.baseUrl))),
    });
  } catch (error) {
    await started.stop().catch(() => {});
    await dropDatabase().catch(() => {});
    throw error;
  }
  const cluster = setup.cluster;
  const extension = cluster?.module !== undefined && cluster.extension !== undefined ? extensionControl(attachedCluster(cluster.module, cluster.adminUrl), cluster.extension, database.slice(0, 40), scenario.faults, (dbUrl, role) => roleDatabaseUrls(dbUrl, cluster.roleLogins)[role]) : undefined;
  const seed = adapter.seed && { ...adapter.seed, ...referenceSeedArtifact({ root: projectRoot(setup), databaseUrl: url, faults: scenario.faults, deadlineMs: scenario.deadlineMs }) };
  // Killing and restarting the server, and watching its network, act on the process this adapter
  // started, not on the server's state: they stay with the process management here, outside the
  // control protocol (docs/adapters.md, "What stays with the adapter").
  const ownProcess = own === undefined ? undefined : ownProcessControls(setup, scenario, scenarioDatabase, own, adapter, (next) => {
    started = next;
  });
  let closed = false;
  const opened: ServerAdapter = {
    ...adapter,
    ...(seed ? { seed } : {}),
    ...(ownProcess?.process ? { process: ownProcess.process } : {}),
    ...(ownProcess?.network ? { network: ownProcess.network } : {}),
    ...(ownProcess?.logs ? { logs: ownProcess.logs } : {}),
    ...(crash === undefined ? {} : { database: crash }),
    ...(scenarioDatabase.hba === undefined ? {} : { workerConnections: workerConnectionControl(scenarioDatabase.hba, scenarioDatabase.workerUrl, scenario.faults) }),
    ...(extension ? { extension } : {}),
    attemptStart: (settings, deadlineMs) => attemptStart(setup, url, scenario.faults, settings, deadlineMs),
    async close() {
      if (closed) return;
      closed = true;
      await adapter.close().catch(() => {});
      await started.stop();
      await extension?.close();
      await dropDatabase();
    },
  };
  serving.set(opened, () => started.alive());
  return opened;
}

/** Whether the process serving each opened server is still running (a restarted own process counts by its newest). */
const serving = new WeakMap<ServerAdapter, () => boolean>();

/** False once the process that served `server` is gone; true for a server this module did not open. */
export function referenceServerAlive(server: ServerAdapter): boolean {
  return serving.get(server)?.() ?? true;
}

/**
 * The run's cluster as the reference cluster module attaches to it (an
 * existing server, never stopped from here), on first use only: most
 * scenarios never ask for a clean extension database.
 */
function attachedCluster(modulePath: string, adminUrl: string): AttachedCluster {
  let attaching: Promise<AttachedCluster> | undefined;
  const attach = () => {
    attaching ??= (async () => {
      const module = (await import(pathToFileURL(modulePath).href)) as ClusterModule;
      if (typeof module.startCluster !== 'function') throw new Error(`${modulePath} does not export startCluster()`);
      const cluster = await module.startCluster({ DATABASE_URL: adminUrl });
      if (!offersExtension(cluster)) throw new Error(`${modulePath} does not package an extension`);
      if (cluster.restrictWorkerLogin === undefined) throw new Error(`${modulePath} writes no HBA rules for a worker login`);
      if (cluster.cloneDatabase === undefined) throw new Error(`${modulePath} does not clone databases`);
      return cluster as typeof cluster & AttachedCluster;
    })();
    return attaching;
  };
  return {
    urlFor: (database) => databaseUrl(adminUrl, database),
    createExtensionDatabase: async (name, faults) => (await attach()).createExtensionDatabase(name, faults),
    provisionRoles: async (database) => (await attach()).provisionRoles(database),
    extensionPackage: async (faults) => (await attach()).extensionPackage(faults),
    dropDatabase: async (name) => (await attach()).dropDatabase(name),
    cloneDatabase: async (template, name) => (await attach()).cloneDatabase(template, name),
    restrictWorkerLogin: async (database, login, password, faults) => (await attach()).restrictWorkerLogin(database, login, password, faults),
  };
}

/**
 * Kill and restart of a server in a process of its own, the observation of
 * its network, and its logs across restarts. A killed process's log lines
 * are what it wrote on stderr (it can no longer answer `logs.since`); after a
 * restart, the new process's lines are read through the control protocol
 * from its first line on.
 */
function ownProcessControls(setup: ReferenceServerSetup, scenario: ScenarioSetup, database: ScenarioDatabase, first: OwnServerProcess, adapter: ServerAdapter, replaced: (next: OwnServerProcess) => void): { process: NonNullable<ServerAdapter['process']>; network?: NetworkControl; logs?: LogsControl } {
  let current = first;
  let earlierLogs = '';
  let currentLogs: LogsControl | undefined = adapter.logs;
  const controlUrl = controlUrlOf(first.baseUrl);
  // A killed process answers no control: its logs are what it wrote on stderr until a restart.
  let killed = false;
  const processControl: NonNullable<ServerAdapter['process']> = {
    kill: async () => {
      killed = true;
      await current.kill();
    },
    restart: async () => {
      const previous = current;
      killed = true;
      await previous.kill();
      earlierLogs += previous.stderr();
      // The same address, so the proxy and every client keep reaching it.
      current = await startServerProcess(setup, database, scenario.faults, scenario.deadlineMs, Number(new URL(previous.baseUrl).port), scenario.network);
      replaced(current);
      killed = false;
      if (currentLogs !== undefined && setup.controls !== undefined) {
        const client = new ControlClient(controlUrl, setup.controls);
        currentLogs = { text: async () => (await client.call<{ text: string }>('logs.since', { mark: 0 })).text };
      }
    },
  };
  const network: NetworkControl | undefined =
    scenario.network === undefined
      ? undefined
      : {
          databaseEndpoints: [databaseEndpoint(database.url)],
          egress: scenario.network === 'database-only' ? 'database-only' : 'open',
          activity: (from, until, deadlineMs) => {
            const observer = current.observer;
            if (observer === undefined) return Promise.reject(new Error('the server process is not observed'));
            return observer.activity(from, until, deadlineMs);
          },
        };
  const logs: LogsControl | undefined = currentLogs === undefined ? undefined : { text: async () => earlierLogs + (killed ? current.stderr() : await (currentLogs as LogsControl).text()) };
  return { process: processControl, ...(network === undefined ? {} : { network }), ...(logs === undefined ? {} : { logs }) };
}
