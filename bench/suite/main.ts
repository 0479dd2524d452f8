/**
 * What a conformance scenario costs. Runs a fixed selection of passing
 * requirements (all of the Protocol section by default) through the real
 * `synchro-conformance run` against the reference pair, and prints the
 * median and p95 seconds per scenario (server-only scenarios apart from
 * those that also start a client adapter process), scenarios per second,
 * and the ratio to a baseline measured in the same run: one reference server
 * started on a fresh database clone plus one connect over HTTP, the floor of
 * any server scenario when nothing is prepared ahead. The floor is measured
 * both ways the harness can start a server: as an instance in the server
 * host (what scenarios use) and as a process of its own (what a scenario
 * that kills its server uses).
 *
 * Durability: both sides use the harness's embedded cluster with the same
 * settings (fsync, synchronous_commit and full_page_writes off, as every
 * disposable test cluster of the project).
 *
 *   node bench/suite/main.ts [--tags <expression>] [--baseline-runs 10] [--parallel N]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openReferenceServer, prepareReferenceServer } from '../../harness/adapters/reference-server.ts';
import type { ReferenceServerSetup } from '../../harness/adapters/setup.ts';
import { drainWarmPools } from '../../harness/adapters/warm-pool.ts';
import { RESOURCES_MEDIA_TYPE, type ResourcesEvidence } from '../../harness/report/evidence.ts';
import { readMessages, toMillis } from '../../harness/report/messages.ts';

const root = new URL('../..', import.meta.url).pathname;
const PROTOCOL = Array.from({ length: 11 }, (_, i) => `@SYNC-PROTO-${String(i + 1).padStart(3, '0')}`).join(' or ');
const TARGET_SERVER_S = 0.3;
const TARGET_CLIENT_S = 0.6;

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
const median = (values: number[]) => quantile([...values].sort((a, b) => a - b), 0.5);

/** One cold server start on a fresh clone and one connect over HTTP, in seconds each. */
async function baseline(runs: number, ownProcess: boolean): Promise<number[]> {
  const prepared = await prepareReferenceServer(root);
  if (!prepared.setup.available) throw new Error(`the reference server is unavailable: ${prepared.setup.reason}`);
  const setup = prepared.setup as ReferenceServerSetup;
  const seconds: number[] = [];
  try {
    for (let run = 0; run < runs; run += 1) {
      const started = performance.now();
      const server = await openReferenceServer(setup, { name: `bench_floor_${process.pid}_${run}`, faults: [], deadlineMs: 60_000, ownProcess });
      const response = await fetch(`${server.baseUrl}/sync/connect`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await server.token('bench-user')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: `bench-${run}`, platform: 'bench', app_version: '1.0.0', protocol_version: 3, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} }),
      });
      await response.text();
      if (response.status !== 200) throw new Error(`the baseline connect answered ${response.status}`);
      seconds.push((performance.now() - started) / 1000);
      await server.close();
    }
  } finally {
    await drainWarmPools();
    await prepared.close();
  }
  return seconds;
}

interface ScenarioCost {
  seconds: number;
  passed: boolean;
  resources: ResourcesEvidence | undefined;
}

function scenarioCosts(messagesFile: string): { scenarios: ScenarioCost[]; runSeconds: number } {
  const index = readMessages(messagesFile);
  const scenarios: ScenarioCost[] = [];
  for (const attempts of index.attempts.values()) {
    const attempt = attempts[attempts.length - 1];
    const finished = attempt === undefined ? undefined : index.finished.get(attempt.id);
    if (attempt === undefined || finished === undefined) continue;
    const results = [...(index.stepResults.get(attempt.id)?.values() ?? [])];
    const resources = (index.attachments.get(attempt.id) ?? []).find((a) => a.mediaType === RESOURCES_MEDIA_TYPE);
    scenarios.push({
      seconds: (toMillis(finished.timestamp) - toMillis(attempt.timestamp)) / 1000,
      passed: results.length > 0 && results.every((r) => String(r.status) === 'PASSED'),
      resources: resources === undefined ? undefined : (JSON.parse(resources.body) as ResourcesEvidence),
    });
  }
  const first = index.testRunStarted;
  const last = index.testRunFinished;
  const runSeconds = first && last ? (toMillis(last.timestamp) - toMillis(first.timestamp)) / 1000 : Number.NaN;
  return { scenarios, runSeconds };
}

function line(label: string, values: number[], floor: number, target?: number): string {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = quantile(sorted, 0.5);
  const goal = target === undefined ? '' : `  goal <= ${target.toFixed(2)} s: ${mid <= target ? 'met' : 'NOT met'}`;
  return `${label.padEnd(28)} ${String(values.length).padStart(5)}  median ${mid.toFixed(3)} s  p95 ${quantile(sorted, 0.95).toFixed(3)} s  ratio to floor ${(mid / floor).toFixed(2)}${goal}`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { tags: { type: 'string', default: PROTOCOL }, 'baseline-runs': { type: 'string', default: '10' }, parallel: { type: 'string' } } });
  const runs = Number(values['baseline-runs']);
  if (!Number.isInteger(runs) || runs < 1 || runs > 100) throw new Error('--baseline-runs must be 1..100');

  const floor = median(await baseline(runs, false));
  const processFloor = median(await baseline(runs, true));

  const out = mkdtempSync(join(tmpdir(), 'synchro-bench-suite-'));
  try {
    const args = ['harness/cli.ts', 'run', '--tags', values.tags, '--out', out, ...(values.parallel ? ['--parallel', values.parallel] : [])];
    const started = performance.now();
    const result = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    const wall = (performance.now() - started) / 1000;
    if (result.status !== 0) throw new Error(`the conformance run exited with status ${result.status}`);
    const { scenarios, runSeconds } = scenarioCosts(join(out, 'messages.ndjson'));
    const worked = scenarios.filter((s) => s.passed && s.resources?.server === true);
    const serverOnly = worked.filter((s) => s.resources?.clientProcesses === 0).map((s) => s.seconds);
    const withClient = worked.filter((s) => (s.resources?.clientProcesses ?? 0) > 0).map((s) => s.seconds);

    console.log(`selection: ${values.tags}`);
    console.log('durability: embedded cluster, fsync/synchronous_commit/full_page_writes off on both sides');
    console.log(`baseline (floor): one server start on a fresh clone + one connect, ${runs} runs each: median ${floor.toFixed(3)} s as an instance in the server host (the ratios below), ${processFloor.toFixed(3)} s as a process of its own`);
    console.log(line('server-only scenarios', serverOnly, floor, TARGET_SERVER_S));
    console.log(line('scenarios with a client', withClient, floor, TARGET_CLIENT_S));
    console.log(line('all passed scenarios', worked.map((s) => s.seconds), floor));
    const waits = worked.map((s) => s.resources?.serverWaitMs ?? 0).sort((a, b) => a - b);
    console.log(`waited for a server handed over by the warm pool: median ${quantile(waits, 0.5)} ms, p95 ${quantile(waits, 0.95)} ms`);
    console.log(`scenarios run: ${scenarios.length} in ${runSeconds.toFixed(1)} s of Cucumber time (${(scenarios.length / runSeconds).toFixed(2)} scenarios/s), ${wall.toFixed(1)} s wall with the cluster start`);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

await main();
