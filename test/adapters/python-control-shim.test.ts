/**
 * The control protocol is language neutral: the Python shim in
 * examples/python-control-shim (standard library only, PostgreSQL through
 * psql) runs beside a reference server started without any controls of its
 * own, and offers await-materialization, logs and the per-scenario reset.
 * Its answers follow the protocol's schemas, and a Protocol requirement whose
 * scenarios commit source rows and pull them certifies through it.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { CONTROL_NAMES, ControlClient, controlSchemaProblems, discoverControls } from '../../harness/adapters/control-protocol.ts';
import { type Cluster, startCluster } from '../../reference/server/db/index.ts';

const root = new URL('../../', import.meta.url).pathname;
const shim = join(root, 'examples/python-control-shim/shim.py');
const scratch = mkdtempSync(join(tmpdir(), 'synchro-python-shim-test-'));
const SECRET = 'shim-secret';
const START_DEADLINE_MS = 120_000;
const psqlFound = spawnSync('psql', ['--version']).status === 0;

let cluster: Cluster;
let shimProcess: ChildProcess | undefined;
let started: { control_url: string; base_url: string; database_url: string };

before(async () => {
  if (!psqlFound) return;
  cluster = await startCluster({});
  const command = [process.execPath, join(root, 'reference/server/main.ts'), '--host', '127.0.0.1', '--port', '{port}', '--database-url', '{database_url}', '--jwt-secret', SECRET, '--capture'];
  const child = spawn('python3', [shim, '--admin-url', cluster.adminUrl, '--database', 'shim_app', '--', ...command], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  shimProcess = child;
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = `${stderr}${chunk.toString('utf8')}`.slice(-4_000);
  });
  started = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the shim did not report its URLs within ${START_DEADLINE_MS} ms: ${stderr}`)), START_DEADLINE_MS);
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', (line) => {
      clearTimeout(timer);
      resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`the shim exited (${code}): ${stderr}`)));
  });
});

after(async () => {
  if (shimProcess !== undefined && shimProcess.exitCode === null) {
    const exited = new Promise((resolve) => shimProcess?.once('exit', resolve));
    shimProcess.kill('SIGTERM');
    await exited;
  }
  await cluster?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

test('the shim offers await, logs and reset, each answer on its schema; the server itself offers no control', { skip: psqlFound ? false : 'psql is not installed (apt-get install postgresql-client)' }, async () => {
  const own = await fetch(`${started.base_url}/__control/capabilities`);
  assert.equal(own.status, 404, 'the server was started without --test-controls');
  const document = await discoverControls(started.control_url);
  assert.deepEqual(Object.keys(document.controls).sort(), ['capture.await', 'logs.mark', 'logs.since', 'reset']);
  assert.ok(Object.keys(document.controls).every((name) => (CONTROL_NAMES as readonly string[]).includes(name)));
  const client = new ControlClient(started.control_url, document);
  // A committed source row is materialized once capture.await answers (the call checks the answer's schema).
  const db = new pg.Client({ connectionString: started.database_url });
  await db.connect();
  try {
    await db.query('CREATE TABLE public.notes (id text PRIMARY KEY, body text)');
    await db.query("SELECT synchro.synchro_register_table(relation => 'public.notes')");
    await db.query("INSERT INTO public.notes VALUES ('n1', 'hello')");
    await client.call('capture.await', { timeout_ms: 30_000 });
    const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM synchro.row_versions WHERE pk_text = 'n1'");
    assert.equal(rows[0]?.n, 1, 'the row is materialized when await answers');
  } finally {
    await db.end().catch(() => undefined);
  }
  const { mark } = await client.call<{ mark: number }>('logs.mark', {});
  const since = await client.call<{ mark: number; text: string }>('logs.since', { mark });
  assert.ok(since.mark >= mark);
  const bad = await fetch(`${started.control_url}/logs/since`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"mark": -1}' });
  assert.equal(bad.status, 400);
  assert.deepEqual(controlSchemaProblems('error.schema.json', await bad.json()), []);
  await client.call('reset', {}, 120_000);
  const after = new pg.Client({ connectionString: started.database_url });
  await after.connect();
  try {
    const { rows } = await after.query("SELECT to_regclass('public.notes') IS NULL AS gone");
    assert.equal(rows[0]?.gone, true, 'the reset dropped the table');
  } finally {
    await after.end();
  }
  const ready = await fetch(`${started.base_url}/ready`);
  assert.ok([200, 503].includes(ready.status), `the server answers again after the reset (${ready.status})`);
});

test('a Protocol requirement certifies through the shim alone', { skip: psqlFound ? false : 'psql is not installed (apt-get install postgresql-client)' }, async () => {
  const config = join(scratch, 'behind-shim.json');
  writeFileSync(config, JSON.stringify({ role: 'server', kind: 'http', id: 'reference-behind-python-shim', baseUrl: started.base_url, auth: { jwt: { secret: SECRET } }, databaseUrl: started.database_url, controlUrl: started.control_url }, null, 2));
  const out = join(scratch, 'report');
  // SYNC-PROTO-004 commits source rows and pulls them: without await-materialization it fails falsely.
  // Not spawnSync: this process must keep reading the embedded database's output while the run goes on.
  const child = spawn(process.execPath, [join(root, 'harness/cli.ts'), 'run', '--server', config, '--tags', '@SYNC-PROTO-004', '--out', out], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) stream?.on('data', (chunk: Buffer) => (output = `${output}${chunk.toString('utf8')}`.slice(-6_000)));
  const status = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.ok(status === 0 || status === 1, `the run ended with ${status}:\n${output}`);
  const report = JSON.parse(readFileSync(join(out, 'conformance.json'), 'utf8')) as { requirements: { id: string; status: string }[] };
  assert.equal(report.requirements.find((r) => r.id === 'SYNC-PROTO-004')?.status, 'passed', output);
});
