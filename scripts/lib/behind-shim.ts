/**
 * The reference server behind the Python control shim
 * (examples/python-control-shim), started the one way both
 * test/adapters/python-control-shim.test.ts and
 * scripts/certify-behind-shim.ts use: an embedded PostgreSQL cluster, and the
 * shim starting `reference/server/main.ts` without `--test-controls`, so every
 * control the harness gets comes from the shim. Also the server adapter config
 * that points the harness at it, and a harness run in a child process.
 *
 * It knows the server's command line and the shim's, not the harness's
 * adapters (only the harness's compile-cache folder, shared with its children).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { COMPILE_CACHE_DIR } from '../../harness/adapters/child.ts';
import { type Cluster, startCluster } from '../../reference/server/db/index.ts';

export const PROJECT_ROOT = new URL('../../', import.meta.url).pathname;
export const SHIM = join(PROJECT_ROOT, 'examples/python-control-shim/shim.py');
/** The JWT secret the server behind the shim is started with (the adapter config repeats it). */
export const SHIM_JWT_SECRET = 'shim-secret';
const START_DEADLINE_MS = 120_000;

/** Why the shim cannot run on this machine, or undefined when it can. */
export function shimUnavailable(): string | undefined {
  if (spawnSync('psql', ['--version']).status !== 0) return 'psql is not installed (apt-get install postgresql-client)';
  if (spawnSync('python3', ['--version']).status !== 0) return 'python3 is not installed';
  return undefined;
}

/** The URLs the shim prints once the server behind it listens. */
export interface ShimUrls {
  control_url: string;
  base_url: string;
  database_url: string;
}

export interface ShimStack {
  cluster: Cluster;
  urls: ShimUrls;
  /** Stops the shim (which stops the server) and then the cluster. */
  stop(): Promise<void>;
}

export interface ShimStackOptions {
  /** The shim's --stale-client-interval-ms; the shim's default (the reference's, 30 days) when absent. */
  staleClientIntervalMs?: number;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Starts an embedded cluster and the reference server behind the shim; resolves once the shim reports its URLs. */
export async function startShimStack(options: ShimStackOptions = {}): Promise<ShimStack> {
  const cluster = await startCluster({});
  const server = [process.execPath, join(PROJECT_ROOT, 'reference/server/main.ts'), '--host', '127.0.0.1', '--port', '{port}', '--database-url', '{database_url}', '--jwt-secret', SHIM_JWT_SECRET, '--capture'];
  const interval = options.staleClientIntervalMs === undefined ? [] : ['--stale-client-interval-ms', String(options.staleClientIntervalMs)];
  // The server starts again on every reset: Node's compile cache (the harness's own) saves most of its start-up.
  const env = { ...process.env, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? COMPILE_CACHE_DIR };
  const child = spawn('python3', [SHIM, '--admin-url', cluster.adminUrl, '--database', 'shim_app', ...interval, '--', ...server], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = `${stderr}${chunk.toString('utf8')}`.slice(-4_000);
  });
  try {
    const urls = await new Promise<ShimUrls>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the shim did not report its URLs within ${START_DEADLINE_MS} ms: ${stderr}`)), START_DEADLINE_MS);
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', (line) => {
        clearTimeout(timer);
        resolve(JSON.parse(line) as ShimUrls);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the shim exited (${code}): ${stderr}`));
      });
    });
    return {
      cluster,
      urls,
      stop: async () => {
        await stopChild(child);
        await cluster.stop();
      },
    };
  } catch (error) {
    await stopChild(child);
    await cluster.stop();
    throw error;
  }
}

/** Writes the generic HTTP server adapter config for the server behind the shim; returns its path. */
export function writeShimServerConfig(file: string, urls: ShimUrls): string {
  const config = { role: 'server', kind: 'http', id: 'reference-behind-python-shim', baseUrl: urls.base_url, auth: { jwt: { secret: SHIM_JWT_SECRET } }, databaseUrl: urls.database_url, controlUrl: urls.control_url };
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

/**
 * Runs `node harness/cli.ts <args>` and resolves its exit status and the tail
 * of its output. Not spawnSync: the caller's process must keep reading the
 * embedded database's output while the run goes on.
 */
export async function runHarness(args: string[], onOutput?: (text: string) => void): Promise<{ status: number | null; output: string }> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'harness/cli.ts'), ...args], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      onOutput?.(text);
      output = `${output}${text}`.slice(-6_000);
    });
  }
  // 'close', not 'exit': the output streams are read to their end.
  const status = await new Promise<number | null>((resolve) => child.once('close', (code: number | null) => resolve(code)));
  return { status, output };
}
