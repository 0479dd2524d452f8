/**
 * End to end through Cucumber: adapters prepared from JSON configs, scenario
 * gating by capability, a deliberately wrong client and a wrong server whose
 * scenarios must fail, and a wire fault from the registry that a feature
 * notices (the sensitivity wiring).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { LocatedRecord, RequirementRecord } from '../../harness/catalog/types.ts';
import { knownFaultNames } from '../../harness/faults/registry.ts';
import { classifyRun, type RequirementOutcome } from '../../harness/report/classify.ts';
import { readMessages } from '../../harness/report/messages.ts';
import { runFeatures } from '../../harness/run/cucumber.ts';
import { leaseSession, openSession } from '../../harness/run/session.ts';
import { runSensitivity } from '../../harness/sensitivity/run.ts';
import { type StubServer, startStubServer } from './fixtures/stub-server.ts';

const fixtureRoot = new URL('./fixtures/', import.meta.url).pathname;
const stubClient = new URL('./fixtures/stub-client.ts', import.meta.url).pathname;
const stubModule = new URL('./fixtures/stub-module-adapter.ts', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'synchro-adapter-run-test-'));
let stub: StubServer;
before(async () => {
  stub = await startStubServer();
});
after(async () => {
  await stub.close();
  rmSync(scratch, { recursive: true, force: true });
});

function record(id: string, feature: string): RequirementRecord {
  return { id, title: id, anchor: id.toLowerCase(), section: 'Alpha', summary: 'A fixture requirement for the adapter tests.', applies_to: ['server'], profiles: ['server', 'full'], feature: `features/${feature}.feature`, references: [{ type: 'normative', anchor: id.toLowerCase() }] };
}
const RECORDS = [record('SYNC-ALPHA-001', 'round-trip'), record('SYNC-ALPHA-002', 'needs-provision'), record('SYNC-ALPHA-003', 'crash')];

let files = 0;
function config(value: object): string {
  files += 1;
  const file = join(scratch, `adapter-${files}.json`);
  writeFileSync(file, JSON.stringify(value, null, 2));
  return file;
}
const serverConfig = (url: string) => config({ role: 'server', kind: 'http', id: 'stub-server', baseUrl: url, auth: { jwt: { secret: 'test-secret' } } });
const clientConfig = (env: Record<string, string> = {}, capabilities: string[] = ['crash']) => config({ role: 'client', kind: 'process', id: 'stub-client', command: [process.execPath, stubClient], env, capabilities });

async function run(server: string, client: string): Promise<Map<string, RequirementOutcome>> {
  const session = await openSession({ server, client, root: fixtureRoot });
  files += 1;
  const messagesFile = join(scratch, `messages-${files}.ndjson`);
  try {
    await runFeatures({ cwd: fixtureRoot, paths: ['features/**/*.feature'], imports: ['steps/**/*.ts'], parallel: 1, worldParameters: session.worldParameters, messagesFile, progress: 'none' });
  } finally {
    await session.close();
  }
  const classification = classifyRun(readMessages(messagesFile), RECORDS);
  return new Map(classification.requirements.map((requirement) => [requirement.id, requirement]));
}

test('a conforming pair passes, and a missing capability is not-applicable with its reason', async () => {
  const outcomes = await run(serverConfig(stub.url), clientConfig());
  assert.equal(outcomes.get('SYNC-ALPHA-001')?.status, 'passed', JSON.stringify(outcomes.get('SYNC-ALPHA-001')?.scenarios.map((s) => s.steps.map((x) => x.error)), null, 1));
  assert.equal(outcomes.get('SYNC-ALPHA-003')?.status, 'passed');
  const provision = outcomes.get('SYNC-ALPHA-002');
  assert.equal(provision?.status, 'not-applicable');
  assert.match(provision?.reason ?? '', /provision/);
});

test('a client adapter without the crash capability makes crash scenarios not-applicable', async () => {
  const outcomes = await run(serverConfig(stub.url), clientConfig({}, []));
  assert.equal(outcomes.get('SYNC-ALPHA-003')?.status, 'not-applicable');
  assert.equal(outcomes.get('SYNC-ALPHA-001')?.status, 'passed');
});

test('a deliberately wrong client fails its scenarios with its captured output, and the run goes on', async () => {
  const outcomes = await run(serverConfig(stub.url), clientConfig({ STUB_MISBEHAVE: 'bad-result' }));
  const failed = outcomes.get('SYNC-ALPHA-001');
  assert.equal(failed?.status, 'failed');
  const errors = failed?.scenarios.flatMap((scenario) => scenario.steps.map((step) => step.error ?? '')).join('\n') ?? '';
  assert.match(errors, /executeResult/);
  assert.match(errors, /stub client opened/, 'the client stderr is in the failure');
  assert.equal(outcomes.get('SYNC-ALPHA-002')?.status, 'not-applicable', 'later scenarios still ran');
});

test('a deliberately wrong server fails the scenario naming message, pointer and rule', async () => {
  const wrong = await startStubServer();
  wrong.answers.set('/sync/pull', { status: 200, body: '{"changes":"none"}' });
  try {
    const outcomes = await run(serverConfig(wrong.url), clientConfig());
    const failed = outcomes.get('SYNC-ALPHA-001');
    assert.equal(failed?.status, 'failed');
    const errors = failed?.scenarios.flatMap((scenario) => scenario.steps.map((step) => step.error ?? '')).join('\n') ?? '';
    assert.match(errors, /pull-response of exchange #2 \(POST \/sync\/pull\): \/changes breaks rule "type"/);
  } finally {
    await wrong.close();
  }
});

test('the sensitivity run applies a registered wire fault through the proxy and the feature notices it', async () => {
  const located: LocatedRecord[] = [{ record: { ...record('SYNC-ALPHA-001', 'round-trip'), faults: [{ name: 'wire:corrupt-pull-response', rule: 'a written value survives a sync', description: 'pull body corrupted' }, { name: 'wire:pull-503', rule: 'a written value survives a sync', description: 'pull refused' }] }, line: 1 }];
  const outcome = await runSensitivity({
    root: fixtureRoot,
    recordsFile: 'invariants.yaml',
    records: located,
    knownFaults: knownFaultNames(),
    worldParameters: { server: serverConfig(stub.url), client: clientConfig(), root: fixtureRoot },
    imports: ['steps/**/*.ts'],
    parallel: 1,
    workDir: mkdtempSync(join(scratch, 'sensitivity-')),
  });
  assert.deepEqual(
    outcome.requirements.map((r) => [r.id, r.baseline, r.rules.flatMap((rule) => rule.recipes.map((f) => [f.fault, f.outcome]))]),
    [['SYNC-ALPHA-001', 'passed', [['wire:corrupt-pull-response', 'detected'], ['wire:pull-503', 'detected']]]],
  );
});

test('a TypeScript adapter module named in a config offers the controls it declares', async () => {
  const module = config({ role: 'server', kind: 'module', id: 'stub-module', module: stubModule, options: { baseUrl: stub.url }, capabilities: ['provision'] });
  const outcomes = await run(module, clientConfig());
  assert.equal(outcomes.get('SYNC-ALPHA-001')?.status, 'passed');
  assert.equal(outcomes.get('SYNC-ALPHA-002')?.status, 'passed', 'the provision scenario ran through the module');
});

test('a module that opens a server without a declared control fails that scenario saying which', async () => {
  const module = config({ role: 'server', kind: 'module', id: 'stub-module', module: stubModule, options: { baseUrl: stub.url, forgetProvision: true }, capabilities: ['provision'] });
  const outcomes = await run(module, clientConfig());
  const failed = outcomes.get('SYNC-ALPHA-002');
  assert.equal(failed?.status, 'failed');
  const errors = failed?.scenarios.flatMap((scenario) => scenario.steps.map((step) => step.error ?? '')).join('\n') ?? '';
  assert.match(errors, /no "provision" member, though the config declares that capability/);
});

test('consecutive runs naming the same adapters share one prepared session', async () => {
  const [server, client] = [serverConfig(stub.url), clientConfig()];
  const first = await leaseSession({ server, client, root: fixtureRoot, extra: { fault: 'wire:push-429' } });
  first.release();
  const second = await leaseSession({ server, client, root: fixtureRoot });
  second.release();
  assert.equal(second.session.server, first.session.server, 'the second run reused the first one\'s session');
  assert.equal(first.session.worldParameters.fault, 'wire:push-429');
  assert.equal(second.session.worldParameters.fault, undefined, 'per-run parameters do not leak into the next run');
});
