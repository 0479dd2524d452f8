/**
 * Scenarios share a server host process and get their servers prepared one
 * ahead, but nothing of one scenario is visible in the next: not a row, not
 * a moved clock, not a log line, not a fault switch.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { openServer } from '../../harness/adapters/open.ts';
import { type PreparedServer, prepareReferenceServer, referenceServerAlive } from '../../harness/adapters/reference-server.ts';
import type { ServerAdapter } from '../../harness/adapters/server.ts';
import type { ReferenceServerSetup } from '../../harness/adapters/setup.ts';
import { drainWarmPools } from '../../harness/adapters/warm-pool.ts';

const project = new URL('../../', import.meta.url).pathname;
let prepared: PreparedServer;
let setup: ReferenceServerSetup;

before(async () => {
  prepared = await prepareReferenceServer(project);
  assert.equal(prepared.setup.available, true, prepared.setup.reason);
  setup = prepared.setup as ReferenceServerSetup;
});

after(async () => {
  assert.deepEqual(await drainWarmPools(), [], 'every server stopped and every database dropped');
  await prepared?.close();
});

const scenario = (faults: string[] = []) => openServer(setup, { name: 'unused', faults, deadlineMs: 30_000 });

/** Connects the same fresh client twice and returns the two scope_set_versions it was given. */
async function connectTwice(server: ServerAdapter, clientId: string): Promise<number[]> {
  const token = await server.token('alice');
  const versions: number[] = [];
  let presented = 0;
  let schema = { version: 0, hash: '' };
  let generation: Record<string, number> = {};
  for (let i = 0; i < 2; i += 1) {
    const response = await fetch(`${server.baseUrl}/sync/connect`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: clientId, platform: 'test', app_version: '1.0.0', protocol_version: 3, schema, scope_set_version: presented, known_scopes: {}, ...generation }),
    });
    const body = (await response.json()) as { scope_set_version: number; client_generation: number; schema: { version: number; hash: string } };
    assert.equal(response.status, 200, JSON.stringify(body));
    versions.push(body.scope_set_version);
    presented = body.scope_set_version;
    // The second connect presents what the first one installed, as a returning client does.
    schema = { version: body.schema.version, hash: body.schema.hash };
    generation = { client_generation: body.client_generation };
  }
  return versions;
}

test('a row, a moved clock and log lines of one scenario are not in the next, though both ran in the same host', async () => {
  const first = await scenario();
  await first.provision?.exec('CREATE TABLE public.left_behind (id text PRIMARY KEY); INSERT INTO public.left_behind VALUES (\'x\')');
  await first.clock?.advance(3 * 24 * 3600 * 1000);
  const movedTo = Date.parse(String(await first.clock?.now()));
  assert.ok(movedTo - Date.now() > 2 * 24 * 3600 * 1000, 'the first scenario moved its clock');
  await connectTwice(first, 'client-of-first');
  // A quarantined transaction is logged by the first scenario's capture worker.
  await first.provision?.registerTable({ relation: 'public.left_behind' });
  await first.capture?.injectPoison?.();
  await first.sourceSql?.query("INSERT INTO public.left_behind VALUES ('poisoned')");
  await assert.rejects(first.capture?.awaitMaterialized(10_000) ?? Promise.reject(new Error('no capture control')));
  assert.match((await first.logs?.text()) ?? '', /capture quarantined a transaction/, 'the first scenario has log lines of its own');
  await first.close();

  const second = await scenario();
  try {
    assert.deepEqual(await second.sourceSql?.query("SELECT to_regclass('public.left_behind') AS found"), [{ found: null }]);
    const now = Date.parse(String(await second.clock?.now()));
    assert.ok(Math.abs(now - Date.now()) < 60_000, `the second scenario's clock is the system clock, not the first one's (${new Date(now).toISOString()})`);
    assert.doesNotMatch((await second.logs?.text()) ?? '', /quarantined/, 'the second scenario sees none of the first one\'s log lines');
  } finally {
    await second.close();
  }
});

test('a fault switch of one run is not in a scenario of another', async () => {
  const faulty = await scenario(['scope-version-bump-unchanged']);
  try {
    const [once, twice] = await connectTwice(faulty, 'faulty');
    assert.ok((twice as number) > (once as number), 'under the switch an unchanged set still advances the version');
  } finally {
    await faulty.close();
  }
  const clean = await scenario();
  try {
    const [once, twice] = await connectTwice(clean, 'clean');
    assert.equal(twice, once, 'without the switch an unchanged set keeps its version');
  } finally {
    await clean.close();
  }
});

/** The server host processes this test process started (each `reference/server/host.ts`). */
function hostProcesses(): number[] {
  const lines = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' }).split('\n');
  return lines.filter((line) => line.includes('server/host.ts')).map((line) => Number.parseInt(line.trim(), 10));
}

const running = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('a server prepared ahead is not handed out once its host died; the next scenario gets a live one', async () => {
  const first = await scenario();
  await first.close();
  // The server prepared for the next scenario of this key lives in the host killed here.
  const hosts = hostProcesses();
  assert.ok(hosts.length > 0, 'a server host is running');
  for (const pid of hosts) process.kill(pid, 'SIGKILL');
  const deadline = Date.now() + 10_000;
  // Ended, and the harness saw it end (the server closed above lived in the same host).
  while (hosts.some(running) || referenceServerAlive(first)) {
    assert.ok(Date.now() < deadline, 'the killed hosts did not end');
    await new Promise((resolve) => setImmediate(resolve));
  }
  const next = await scenario();
  try {
    const answer = await fetch(`${next.baseUrl}/ready`);
    assert.ok(answer.status === 200 || answer.status === 503, `the next scenario's server answers (${answer.status})`);
  } finally {
    await next.close();
  }
});
