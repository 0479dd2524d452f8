/**
 * The reference server started as a third-party server is: by hand
 * (`main.ts --capture --test-controls --resettable`) on a database of its own
 * in an embedded cluster, and named by a config file alone (generic HTTP
 * adapter, control protocol, the seed artifact builder as a command). Used by
 * test/adapters/hand-started-reference.test.ts and
 * scripts/compare-config-path.ts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createRoleLogins, roleDatabaseUrls } from '../../harness/adapters/reference-server.ts';
import { type Cluster, startCluster } from '../../reference/server/db/index.ts';

export const PROJECT_ROOT = new URL('../../', import.meta.url).pathname;
const START_DEADLINE_MS = 60_000;

export interface HandStartedReference {
  /** The config file naming the server, written into the scratch directory. */
  configFile: string;
  stop(): Promise<void>;
}

/** Starts a cluster and the reference server by hand; writes the config that names it. */
export async function startHandStartedReference(scratch: string, secret: string): Promise<HandStartedReference> {
  const cluster: Cluster = await startCluster({});
  let server: ChildProcess | undefined;
  const stop = async () => {
    if (server !== undefined && server.exitCode === null) {
      const exited = new Promise((resolve) => server?.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    await cluster.stop();
  };
  try {
    await cluster.createTemplate('hand_started_template');
    await cluster.cloneDatabase('hand_started_template', 'hand_started_app');
    const databaseUrl = cluster.urlFor('hand_started_app');
    const child = spawn(process.execPath, [join(PROJECT_ROOT, 'reference/server/main.ts'), '--database-url', databaseUrl, '--jwt-secret', secret, '--capture', '--test-controls', '--resettable'], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    server = child;
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = `${stderr}${chunk.toString('utf8')}`.slice(-4_000);
    });
    const baseUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not listen within ${START_DEADLINE_MS} ms: ${stderr}`)), START_DEADLINE_MS);
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', (line) => {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      });
      child.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening: ${stderr}`)));
    });
    const configFile = join(scratch, 'hand-started-reference.json');
    const config = {
      role: 'server',
      kind: 'http',
      id: 'hand-started-reference',
      baseUrl,
      auth: { jwt: { secret } },
      databaseUrl,
      // A login per database role, as an operator would hand them over (SYNC-OPS-001/002, docs/adapters.md).
      roleDatabaseUrls: roleDatabaseUrls(databaseUrl, await createRoleLogins(cluster.adminUrl)),
      controlUrl: `${baseUrl}/__control`,
      seedArtifact: { command: [process.execPath, join(PROJECT_ROOT, 'reference/seed-artifact/main.ts'), '--database-url', databaseUrl] },
    };
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    return { configFile, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface RunResult {
  code: number | null;
  output: string;
  /** Each requirement's status from the run's conformance.json; empty when the run wrote none. */
  statuses: Record<string, string>;
  /** The reasons of each requirement's scenarios that did not pass. */
  reasons: Record<string, string[]>;
}

/** Runs `harness/cli.ts run --out <out> ...args` and reads each requirement's status. */
export async function runConformance(out: string, args: string[], onLine?: (line: string) => void): Promise<RunResult> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'harness/cli.ts'), 'run', '--out', out, ...args], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => {
      output = `${output}${chunk.toString('utf8')}`.slice(-20_000);
    });
  }
  if (onLine !== undefined && child.stdout !== null) createInterface({ input: child.stdout }).on('line', onLine);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  let statuses: Record<string, string> = {};
  let reasons: Record<string, string[]> = {};
  try {
    const report = JSON.parse(readFileSync(join(out, 'conformance.json'), 'utf8')) as { requirements: { id: string; status: string; scenarios: { status: string; reason?: string | null }[] }[] };
    statuses = Object.fromEntries(report.requirements.map((r) => [r.id, r.status]));
    reasons = Object.fromEntries(report.requirements.map((r) => [r.id, r.scenarios.filter((sc) => sc.status !== 'passed').map((sc) => sc.reason ?? '')]));
  } catch {
    statuses = {};
  }
  return { code, output, statuses, reasons };
}
