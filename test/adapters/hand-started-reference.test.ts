/**
 * The reference server certified as any third-party server is: started by
 * hand (`main.ts --test-controls --resettable`) on a database of its own and
 * named by a config file alone (generic HTTP adapter, control protocol, no
 * private channel). One requirement of each section that passes on the
 * built-in path must get the same status through the config; and a tampering
 * proxy that breaks one rule in the server's answers must fail the
 * requirement of that rule through the same path.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { type Cluster, startCluster } from '../../reference/server/db/index.ts';

const root = new URL('../../', import.meta.url).pathname;
// Reports are read after each run; the scratch directory goes with the test.
const scratch = mkdtempSync(join(tmpdir(), 'synchro-hand-started-test-'));
const SECRET = 'hand-started-secret';
/**
 * One requirement per section that passes against the built-in reference path
 * (a small one of each). SYNC-SEED-001 builds seed artifact files: through the
 * config its builder is named as a command (`seedArtifact`).
 */
const ONE_PER_SECTION = ['SYNC-PROTO-004', 'SYNC-INTEG-003', 'SYNC-STATE-005', 'SYNC-SCOPE-001', 'SYNC-SEED-001'];
const START_DEADLINE_MS = 60_000;

let cluster: Cluster;
let server: ChildProcess | undefined;
let configFile: string;

before(async () => {
  cluster = await startCluster({});
  await cluster.createTemplate('hand_started_template');
  await cluster.cloneDatabase('hand_started_template', 'hand_started_app');
  const databaseUrl = cluster.urlFor('hand_started_app');
  const child = spawn(process.execPath, [join(root, 'reference/server/main.ts'), '--database-url', databaseUrl, '--jwt-secret', SECRET, '--capture', '--test-controls', '--resettable'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
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
  configFile = join(scratch, 'hand-started-reference.json');
  writeFileSync(configFile, JSON.stringify({ role: 'server', kind: 'http', id: 'hand-started-reference', baseUrl, auth: { jwt: { secret: SECRET } }, databaseUrl, controlUrl: `${baseUrl}/__control`, seedArtifact: { command: [process.execPath, join(root, 'reference/seed-artifact/main.ts'), '--database-url', databaseUrl] } }, null, 2));
});

after(async () => {
  if (server !== undefined && server.exitCode === null) {
    const exited = new Promise((resolve) => server?.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
  await cluster?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** Runs the CLI and returns each selected requirement's status from its conformance.json. */
async function run(name: string, args: string[]): Promise<Record<string, string>> {
  const out = join(scratch, name);
  const child = spawn(process.execPath, [join(root, 'harness/cli.ts'), 'run', '--out', out, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.ok(code === 0 || code === 1, `the ${name} run ended with exit status ${code}:\n${output.slice(-3_000)}`);
  const report = JSON.parse(readFileSync(join(out, 'conformance.json'), 'utf8')) as { requirements: { id: string; status: string }[] };
  return Object.fromEntries(report.requirements.map((r) => [r.id, r.status]));
}

const tags = (ids: readonly string[]) => ids.map((id) => `@${id}`).join(' or ');

test('the hand-started reference certified through a config file gets the built-in path\'s status, one requirement per section', async () => {
  const selection = tags(ONE_PER_SECTION);
  const builtIn = await run('built-in', ['--tags', selection]);
  const viaConfig = await run('via-config', ['--server', configFile, '--tags', selection]);
  for (const id of ONE_PER_SECTION) {
    assert.equal(builtIn[id], 'passed', `${id} passes on the built-in path`);
    assert.equal(viaConfig[id], builtIn[id], `${id} through the config file`);
  }
});

test('a tampering proxy that breaks one rule fails that rule\'s requirement through the config path', async () => {
  // wire:long-server-version makes every push outcome's server_version 65 octets: SYNC-PROTO-004's first Rule.
  const tampered = await run('tampered', ['--server', configFile, '--tags', '@SYNC-PROTO-004', '--fault', 'wire:long-server-version']);
  assert.equal(tampered['SYNC-PROTO-004'], 'failed');
});
