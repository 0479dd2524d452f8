/**
 * The reference server adapter against the real database cluster module and
 * stand-ins for main.ts and host.ts: one cluster per run, a fresh database
 * and a server instance per scenario (in the worker's host, or in a process
 * of its own), fault switches and test controls passed through, everything
 * stopped and dropped at teardown.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { jwtVerify } from 'jose';
import pg from 'pg';
import type { ClientCapability } from '../../harness/adapters/capabilities.ts';
import { openReferenceServer, type PreparedServer, prepareReferenceServer } from '../../harness/adapters/reference-server.ts';
import { drainWarmPools } from '../../harness/adapters/warm-pool.ts';
import { type ReferenceServerSetup, toWorldParameter, unavailable } from '../../harness/adapters/setup.ts';
import type { RequirementRecord } from '../../harness/catalog/types.ts';
import { knownFaultNames, markedSwitches } from '../../harness/faults/registry.ts';
import type { JsonObject } from '../../harness/run/cucumber.ts';
import { runSensitivity } from '../../harness/sensitivity/run.ts';

const project = new URL('../../', import.meta.url).pathname;
const fakeMain = new URL('./fixtures/fake-reference-main.ts', import.meta.url).pathname;
const fakeHost = new URL('./fixtures/fake-reference-host.ts', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'synchro-reference-adapter-test-'));
mkdirSync(join(root, 'reference/server/db'), { recursive: true });
writeFileSync(join(root, 'reference/server/main.ts'), `import ${JSON.stringify(fakeMain)};\n`);
writeFileSync(join(root, 'reference/server/host.ts'), `import ${JSON.stringify(fakeHost)};\n`);
writeFileSync(join(root, 'reference/server/db/index.ts'), `export { startCluster } from ${JSON.stringify(join(project, 'reference/server/db/index.ts'))};\n`);

let prepared: PreparedServer;
before(async () => {
  prepared = await prepareReferenceServer(root);
});
after(async () => {
  await drainWarmPools();
  await prepared?.close();
  rmSync(root, { recursive: true, force: true });
});

async function databases(adminUrl: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return (await client.query<{ datname: string }>('SELECT datname FROM pg_database')).rows.map((row) => row.datname);
  } finally {
    await client.end();
  }
}

test('the run prepares one cluster and a template, and reports the reference available', () => {
  assert.equal(prepared.setup.available, true, prepared.setup.reason);
  assert.equal(prepared.setup.kind, 'reference');
  assert.ok(prepared.setup.capabilities.includes('provision'));
});

for (const ownProcess of [false, true]) {
test(`each scenario gets its own database and server (${ownProcess ? 'in a process of its own' : 'in the host'}), with faults and test controls`, async () => {
  const setup = prepared.setup as ReferenceServerSetup;
  const a = await openReferenceServer(setup, { name: 'scenario_a', faults: ['ignore-base-version'], deadlineMs: 30_000, ownProcess });
  const b = await openReferenceServer(setup, { name: 'scenario_b', faults: [], deadlineMs: 30_000, ownProcess });
  try {
    const started = async (url: string) => (await fetch(`${url}/__test/started`)).json() as Promise<{ database: string; faults: string | null; testControls: boolean; host: string }>;
    const [startedA, startedB] = [await started(a.baseUrl), await started(b.baseUrl)];
    assert.deepEqual(startedA, { database: 'synchro_scenario_a', faults: 'ignore-base-version', testControls: true, host: '127.0.0.1' });
    assert.equal(startedB.database, 'synchro_scenario_b');
    assert.equal(startedB.faults, null);
    await a.provision?.exec('CREATE TABLE only_in_a (id text PRIMARY KEY)');
    const inB = await b.sourceSql?.query("SELECT to_regclass('public.only_in_a') AS found");
    assert.deepEqual(inB, [{ found: null }], 'a table made in one scenario is not in the other');
    const token = await a.token('alice');
    assert.equal((await jwtVerify(token, new TextEncoder().encode(setup.jwtSecret))).payload.sub, 'alice');
  } finally {
    await a.close();
    await b.close();
  }
  const remaining = await databases(setup.cluster?.adminUrl as string);
  assert.ok(!remaining.includes('synchro_scenario_a') && !remaining.includes('synchro_scenario_b'), 'scenario databases are dropped at teardown');
  await assert.rejects(fetch(`${a.baseUrl}/ready`), 'the server is gone');
});
}

test('a server in a process of its own can be killed and started again at the same address; a hosted one offers no such control', async () => {
  const setup = prepared.setup as ReferenceServerSetup;
  const own = await openReferenceServer(setup, { name: 'scenario_kill', faults: [], deadlineMs: 30_000, ownProcess: true });
  const hosted = await openReferenceServer(setup, { name: 'scenario_hosted', faults: [], deadlineMs: 30_000 });
  try {
    assert.equal(hosted.process, undefined, 'a hosted server cannot be killed on its own');
    assert.ok(own.process, 'a server in its own process offers kill and restart');
    await own.process.kill();
    await assert.rejects(fetch(`${own.baseUrl}/ready`), 'the killed server no longer answers');
    await own.process.restart();
    const again = (await (await fetch(`${own.baseUrl}/__test/started`)).json()) as { database: string };
    assert.equal(again.database, 'synchro_scenario_kill', 'the restarted server runs on the same database and address');
  } finally {
    await own.close();
    await hosted.close();
  }
  await assert.rejects(fetch(`${own.baseUrl}/ready`), 'the restarted server is stopped at teardown');
});

test('a sensitivity run switches a server fault on in the scenario server, and the feature notices', { skip: markedSwitches().length === 0 && 'no server switch is marked in reference/ yet' }, async () => {
  const fault = markedSwitches().find((marked) => marked.kind === 'server')?.name as string;
  const fixtures = new URL('./fixtures/', import.meta.url).pathname;
  const record: RequirementRecord = { id: 'SYNC-ALPHA-010', title: 'switch', anchor: 'switch', section: 'Alpha', summary: 'A fixture requirement for the fault wiring.', applies_to: ['server'], profiles: ['server', 'full'], feature: 'reference-features/fault-switch.feature', references: [{ type: 'normative', anchor: 'switch' }], faults: [{ name: fault, rule: "the scenario's server runs with exactly the switches of the run", description: 'a marked switch' }] };
  const outcome = await runSensitivity({
    root: fixtures,
    recordsFile: 'invariants.yaml',
    records: [{ record, line: 1 }],
    knownFaults: knownFaultNames(),
    worldParameters: { root: fixtures, server: toWorldParameter(prepared.setup) as JsonObject, client: toWorldParameter(unavailable<ClientCapability>('none', 'no client', 'not needed')) as JsonObject },
    imports: ['reference-steps/**/*.ts'],
    parallel: 1,
    workDir: mkdtempSync(join(root, 'sensitivity-')),
  });
  assert.deepEqual(outcome.requirements.map((r) => [r.baseline, r.rules.flatMap((rule) => rule.recipes.map((f) => [f.fault, f.outcome]))]), [['passed', [[fault, 'detected']]]]);
});

test('a reference server that does not start is reported unavailable with its output', async () => {
  process.env.FAKE_REFERENCE_BROKEN = '1';
  try {
    const broken = await prepareReferenceServer(root);
    assert.equal(broken.setup.available, false);
    assert.match(broken.setup.reason ?? '', /exited with status 1[\s\S]*refusing to start/);
    await broken.close();
  } finally {
    delete process.env.FAKE_REFERENCE_BROKEN;
  }
});

test('without main.ts the reference is unavailable, not an error', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'synchro-reference-empty-'));
  try {
    const missing = await prepareReferenceServer(empty);
    assert.equal(missing.setup.available, false);
    assert.match(missing.setup.reason ?? '', /not built yet/);
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});
