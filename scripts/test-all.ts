/**
 * `npm test`: every check the project has, in one command, ending with the
 * line `N passed, N failed, N skipped` counted over the whole run.
 *
 * Stages: lint, typecheck, the real catalog's mapping check, the vector packs,
 * the unit and property tests (node:test), the conformance suite against the
 * reference, the sensitivity run, and the robustness profile against the
 * reference. Each stage runs even when an earlier one
 * failed, so one run shows everything that is wrong.
 *
 * Counting: each unit test, each conformance requirement, each Rule of
 * the sensitivity run and each part of the robustness profile (an endpoint or
 * a probe group) counts once; the single-shot stages (lint, typecheck,
 * mapping, vectors) count once each. Requirements that are undetermined or
 * not-applicable are counted as skipped: they are never passed. Each stage's
 * summary line says how long it took.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMPILE_CACHE_DIR } from '../harness/adapters/child.ts';
import { INITDB_CACHE_VARIABLE } from '../reference/server/db/cluster.ts';

const root = new URL('..', import.meta.url).pathname;
const node = process.execPath;
const totals = { passed: 0, failed: 0, skipped: 0 };
const lines: string[] = [];
const runStarted = performance.now();
let stageStarted = runStarted;

/**
 * Every Node.js process of every stage reuses compiled modules (the same cache the harness gives its children),
 * and every embedded cluster of the run starts from one copy of initdb's files per kind (reference/server/db/cluster.ts).
 * The run's temporary files all go into one folder (TMPDIR for every stage), removed when the run ends, so a
 * test or a process that leaves its scratch behind does not leave it in the machine's temporary directory. The
 * folder is world-writable and sticky, as that directory is: the embedded clusters' server processes run as
 * another user and must reach their data directories inside it.
 */
const runTemp = mkdtempSync(join(tmpdir(), 'synchro-test-run-'));
chmodSync(runTemp, 0o1777);
process.once('exit', () => rmSync(runTemp, { recursive: true, force: true }));
const initdbCache = mkdtempSync(join(runTemp, 'synchro-initdb-'));
const environment = { ...process.env, TMPDIR: runTemp, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? COMPILE_CACHE_DIR, [INITDB_CACHE_VARIABLE]: initdbCache };

function banner(title: string): void {
  stageStarted = performance.now();
  console.log(`\n=== ${title} ===`);
}

const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/** A stage's summary line, with how long the stage took. */
function summary(line: string): void {
  lines.push(`${line} [${seconds(stageStarted)}]`);
}

function run(command: string, args: string[]): number {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env: environment });
  return result.status ?? 1;
}

function single(title: string, command: string, args: string[]): void {
  banner(title);
  const ok = run(command, args) === 0;
  totals[ok ? 'passed' : 'failed'] += 1;
  summary(`${title}: ${ok ? 'passed' : 'FAILED'}`);
}

function unitTests(): void {
  banner('unit and property tests');
  const dir = mkdtempSync(join(runTemp, 'synchro-unit-'));
  const tap = join(dir, 'results.tap');
  // One test file per core at a time (node --test runs one fewer by default, so one at a time on two cores):
  // most files wait on their own embedded cluster much of the time.
  const concurrency = `--test-concurrency=${Math.max(2, availableParallelism())}`;
  const status = run(node, ['--test', concurrency, '--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=tap', `--test-reporter-destination=${tap}`, 'test/**/*.test.ts']);
  const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
  rmSync(dir, { recursive: true, force: true });
  const count = (name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  const [passed, failed, skipped] = [count('pass'), count('fail') + count('cancelled'), count('skipped') + count('todo')];
  // A runner that died before reporting must not look like an empty success.
  const broken = status !== 0 && failed === 0;
  totals.passed += passed;
  totals.failed += failed + (broken || passed + failed === 0 ? 1 : 0);
  totals.skipped += skipped;
  summary(`unit and property tests: ${passed} passed, ${failed} failed, ${skipped} skipped${broken ? ' (the runner itself failed)' : ''}`);
}

function conformance(): void {
  banner('conformance suite against the reference');
  const status = run(node, ['harness/cli.ts', 'run']);
  const file = join(root, 'reports/conformance.json');
  if (!existsSync(file)) {
    totals.failed += 1;
    summary('conformance suite: FAILED (no report written)');
    return;
  }
  const overall = (JSON.parse(readFileSync(file, 'utf8')) as { summary: { overall: Record<string, number> } }).summary.overall;
  const [passed, failed, undetermined, notApplicable] = [overall.passed ?? 0, overall.failed ?? 0, overall.undetermined ?? 0, overall['not-applicable'] ?? 0];
  totals.passed += passed;
  totals.failed += failed + (status !== 0 && failed === 0 ? 1 : 0);
  totals.skipped += undetermined + notApplicable;
  summary(`conformance suite: ${passed} requirements passed, ${failed} failed, ${undetermined} undetermined, ${notApplicable} not-applicable${status !== 0 && failed === 0 ? ' (the run itself failed)' : ''}`);
}

function sensitivity(): void {
  banner('sensitivity run');
  // The conformance stage just ran the same code without faults: its results are the baseline.
  const baseline = join(root, 'reports/messages.ndjson');
  const status = run(node, ['harness/cli.ts', 'sensitivity', ...(existsSync(baseline) ? ['--baseline', baseline] : [])]);
  const file = join(root, 'reports/sensitivity.json');
  const result = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { total: { detected: number; total: number }; rules?: { notApplicable?: string }[]; not_run?: string[] }) : undefined;
  if (!result) {
    totals.failed += 1;
    summary('sensitivity run: FAILED (no result written)');
    return;
  }
  // Each Rule of a requirement that passed counts once: detected, or not (no recipe, a recipe missed, or only the set-up broke).
  const undetected = result.total.total - result.total.detected;
  totals.passed += result.total.detected;
  totals.failed += undetected + (status !== 0 && undetected === 0 ? 1 : 0);
  const notRun = result.not_run ?? [];
  // A Rule whose every scenario is about an undeclared implementation form is outside the total: skipped, neither detected nor failed.
  const formOnly = (result.rules ?? []).filter((rule) => rule.notApplicable !== undefined).length;
  totals.skipped += notRun.length + formOnly;
  summary(`sensitivity run: ${result.total.detected} of ${result.total.total} rules detected by a Then step of their rule, ${formOnly} rules not applicable by form, ${notRun.length} requirements not run (not passed without their faults)${status !== 0 && undetected === 0 ? ' (the run itself failed)' : ''}`);
}

/** Generated requests per endpoint in `npm test`; a release run uses 10,000 (docs/robustness.md). */
const ROBUSTNESS_RUNS = 2_000;

function robustness(): void {
  banner('robustness profile against the reference');
  const file = join(root, 'reports/robustness.json');
  rmSync(file, { force: true });
  const status = run(node, ['harness/cli.ts', 'fuzz', '--server', 'reference', '--runs', String(ROBUSTNESS_RUNS), '--out', 'reports']);
  if (!existsSync(file)) {
    totals.failed += 1;
    summary('robustness profile: FAILED (no report written)');
    return;
  }
  const report = JSON.parse(readFileSync(file, 'utf8')) as { seed: number; sent: number; parts: { part: string; findings: unknown[] }[] };
  // Each part (an endpoint or a probe group) counts once: passed when it gave no finding.
  const failedParts = report.parts.filter((p) => p.findings.length > 0);
  const broken = status !== 0 && failedParts.length === 0;
  totals.passed += report.parts.length - failedParts.length;
  totals.failed += failedParts.length + (broken ? 1 : 0);
  const findings = report.parts.reduce((n, p) => n + p.findings.length, 0);
  summary(
    `robustness profile: ${report.parts.length - failedParts.length} parts passed, ${failedParts.length} failed${failedParts.length > 0 ? ` (${failedParts.map((p) => p.part).join(', ')})` : ''}; ${report.sent.toLocaleString('en-US')} requests, ${findings} findings, seed ${report.seed}${broken ? ' (the run itself failed)' : ''}`,
  );
}

// The real catalog sits beside the checkout (../shared); without it only the
// self-contained stages can run, and the rest are reported as skipped.
const catalog = join(root, '../shared/seeds/invariants-catalog.md');
const haveCatalog = existsSync(catalog);

single('lint', 'node_modules/.bin/biome', ['lint']);
single('typecheck', 'node_modules/.bin/tsc', ['--noEmit', '-p', '.']);
if (haveCatalog) single('catalog mapping', node, ['harness/cli.ts', 'catalog', 'check']);
single('vector packs', node, ['harness/cli.ts', 'vectors', 'run']);
unitTests();
if (haveCatalog) {
  conformance();
  sensitivity();
} else {
  totals.skipped += 3;
  lines.push(`catalog mapping, conformance suite, sensitivity run: SKIPPED (no catalog at ${catalog})`);
}
robustness();

banner('summary');
for (const line of lines) console.log(line);
console.log(`whole run: ${seconds(runStarted)}`);
console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exitCode = totals.failed === 0 ? 0 : 1;
