import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { LocatedRecord, RequirementRecord } from '../../harness/catalog/types.ts';
import { InputError } from '../../harness/errors.ts';
import { runSensitivity } from '../../harness/sensitivity/run.ts';

const root = new URL('./fixture/', import.meta.url).pathname;

function record(id: string, anchor: string, section: string, faults: string[]): LocatedRecord {
  const value: RequirementRecord = {
    id,
    title: anchor,
    anchor,
    section,
    summary: 'A fixture requirement for the sensitivity run.',
    applies_to: ['server'],
    profiles: ['server', 'full'],
    feature: `features/${anchor}.feature`,
    references: [{ type: 'normative', anchor }],
    faults: faults.map((name) => ({ name, description: 'fixture fault' })),
  };
  return { record: value, line: 1 };
}

const options = (records: LocatedRecord[]) => ({
  root,
  recordsFile: 'invariants.yaml',
  records,
  knownFaults: new Set(['server:wrong-sum', 'server:rude-greeting']),
  worldParameters: {},
  imports: ['steps/**/*.ts'],
  parallel: 1,
  workDir: mkdtempSync(join(tmpdir(), 'synchro-sensitivity-test-')),
});

test('a fault the feature notices is detected; one it cannot notice is not', async () => {
  const outcome = await runSensitivity(
    options([record('SYNC-ALPHA-001', 'sum', 'Alpha', ['server:wrong-sum']), record('SYNC-ALPHA-002', 'greeting', 'Alpha', ['server:rude-greeting']), record('SYNC-BETA-001', 'unimplemented', 'Beta', ['server:wrong-sum'])]),
  );
  assert.deepEqual(
    outcome.requirements.map((r) => [r.id, r.baseline, r.faults.map((f) => [f.fault, f.status, f.detected]), r.proven]),
    [
      ['SYNC-ALPHA-001', 'passed', [['server:wrong-sum', 'failed', true]], true],
      ['SYNC-ALPHA-002', 'passed', [['server:rude-greeting', 'passed', false]], false],
      // An undetermined baseline proves nothing, so its fault is not counted as detected.
      ['SYNC-BETA-001', 'undetermined', [['server:wrong-sum', 'undetermined', false]], false],
    ],
  );
  // The undetermined requirement is listed as not run and left out of the score.
  assert.deepEqual(outcome.notRun, ['SYNC-BETA-001']);
  assert.deepEqual(outcome.result.total, { detected: 1, total: 2 });
  assert.deepEqual(outcome.result.perSection, { Alpha: { detected: 1, total: 2 } });
});

test('a passing requirement without a fault recipe is unproven', async () => {
  const outcome = await runSensitivity(options([record('SYNC-ALPHA-001', 'sum', 'Alpha', []), record('SYNC-BETA-001', 'unimplemented', 'Beta', [])]));
  assert.deepEqual(outcome.unproven, ['SYNC-ALPHA-001']);
  assert.deepEqual(outcome.withoutRecipe, ['SYNC-BETA-001']);
  assert.deepEqual(outcome.result.total, { detected: 0, total: 0 });
});

test('a fault name the registry does not know is an input error', async () => {
  await assert.rejects(runSensitivity(options([record('SYNC-ALPHA-001', 'sum', 'Alpha', ['server:typo'])])), (error: unknown) => error instanceof InputError && /server:typo/.test(error.message));
});

test('a baseline taken from an earlier run of the same code is not run again', async () => {
  const { runFeatures } = await import('../../harness/run/cucumber.ts');
  const workDir = mkdtempSync(join(tmpdir(), 'synchro-sensitivity-baseline-'));
  const baselineMessages = join(workDir, 'main-run.ndjson');
  await runFeatures({ cwd: root, paths: ['features/sum.feature', 'features/greeting.feature'], imports: ['steps/**/*.ts'], parallel: 1, worldParameters: {}, messagesFile: baselineMessages, progress: 'none' });
  const records = [record('SYNC-ALPHA-001', 'sum', 'Alpha', ['server:wrong-sum']), record('SYNC-ALPHA-002', 'greeting', 'Alpha', [])];
  const faultRuns = mkdtempSync(join(tmpdir(), 'synchro-sensitivity-faults-'));
  const outcome = await runSensitivity({ ...options(records), workDir: faultRuns, baselineMessages });
  assert.deepEqual(
    outcome.requirements.map((r) => [r.id, r.baseline, r.proven]),
    [['SYNC-ALPHA-001', 'passed', true]],
  );
  assert.deepEqual(outcome.unproven, ['SYNC-ALPHA-002']);
  // Only the fault run wrote a message stream: the baseline was read, not run again.
  assert.deepEqual(readdirSync(faultRuns), ['SYNC-ALPHA-001-server-wrong-sum.ndjson']);
});
