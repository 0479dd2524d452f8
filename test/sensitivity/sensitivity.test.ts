/**
 * The sensitivity run judges each fault recipe by the Rule it targets: only
 * that Rule's scenarios run under the fault, and only a failing Then step of
 * the Rule counts as detection; a failing Given, When or hook is a broken
 * set-up. A Rule of a passed requirement without a recipe is unproven.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { FaultRecipe, LocatedRecord, RequirementRecord } from '../../harness/catalog/types.ts';
import { InputError } from '../../harness/errors.ts';
import { readMessages } from '../../harness/report/messages.ts';
import { runSensitivity } from '../../harness/sensitivity/run.ts';
import { scratchDir } from '../support/scratch-dir.ts';

const root = new URL('./fixture/', import.meta.url).pathname;
const EXACT = 'a sum is exact';
const WORKING = 'a sum is taken only from a working adder';

function record(id: string, anchor: string, section: string, faults: [name: string, rule: string][]): LocatedRecord {
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
    faults: faults.map(([name, rule]): FaultRecipe => ({ name, rule, description: 'fixture fault' })),
  };
  return { record: value, line: 1 };
}

const options = (records: LocatedRecord[], workDir = scratchDir('synchro-sensitivity-test-')) => ({
  root,
  recordsFile: 'invariants.yaml',
  records,
  knownFaults: new Set(['server:wrong-sum', 'server:rude-greeting', 'server:broken-adder']),
  worldParameters: {},
  imports: ['steps/**/*.ts'],
  parallel: 1,
  workDir,
});

test('a recipe is detected only by a Then step of its rule; a broken Given is not detection; a weak check misses', async () => {
  const outcome = await runSensitivity(
    options([
      record('SYNC-ALPHA-001', 'sum', 'Alpha', [
        ['server:wrong-sum', EXACT],
        ['server:broken-adder', WORKING],
      ]),
      record('SYNC-ALPHA-002', 'greeting', 'Alpha', [['server:rude-greeting', 'a greeting is polite']]),
      record('SYNC-BETA-001', 'unimplemented', 'Beta', [['server:wrong-sum', 'something is required']]),
    ]),
  );
  assert.deepEqual(
    outcome.requirements.map((r) => [r.id, r.baseline, r.rules.map((rule) => [rule.rule, rule.recipes.map((f) => [f.fault, f.outcome]), rule.detected]), r.proven]),
    [
      [
        'SYNC-ALPHA-001',
        'passed',
        [
          [EXACT, [['server:wrong-sum', 'detected']], true],
          [WORKING, [['server:broken-adder', 'broke-setup']], false],
        ],
        false,
      ],
      ['SYNC-ALPHA-002', 'passed', [['a greeting is polite', [['server:rude-greeting', 'missed']], false]], false],
      // An undetermined baseline proves nothing, so its fault is not run.
      ['SYNC-BETA-001', 'undetermined', [['something is required', [['server:wrong-sum', 'not-run']], false]], false],
    ],
  );
  assert.match(outcome.requirements[0]?.rules[0]?.recipes[0]?.detail ?? '', /Then step "the sum is 4" failed/);
  assert.match(outcome.requirements[0]?.rules[1]?.recipes[0]?.detail ?? '', /broke the set-up.*the adder has started/);
  assert.deepEqual(outcome.notRun, ['SYNC-BETA-001']);
  // Counts are rules of the requirements that passed without faults.
  assert.deepEqual(outcome.result.total, { detected: 1, total: 3 });
  assert.deepEqual(outcome.result.perRequirement, { 'SYNC-ALPHA-001': { detected: 1, total: 2 }, 'SYNC-ALPHA-002': { detected: 0, total: 1 } });
  assert.deepEqual(outcome.result.perSection, { Alpha: { detected: 1, total: 3 } });
});

test('a fault run executes only the scenarios of the rule it targets', async () => {
  const workDir = scratchDir('synchro-sensitivity-rule-');
  await runSensitivity(options([record('SYNC-ALPHA-001', 'sum', 'Alpha', [['server:broken-adder', WORKING]])], workDir));
  const [stream] = readdirSync(workDir).filter((name) => name.startsWith('SYNC-ALPHA-001'));
  const index = readMessages(join(workDir, stream as string));
  assert.deepEqual(
    index.pickles.filter((pickle) => index.testCaseByPickle.has(pickle.id)).map((pickle) => pickle.name),
    ['the adder starts before it adds'],
  );
});

test('a rule of a passing requirement without a recipe leaves the requirement unproven', async () => {
  const outcome = await runSensitivity(options([record('SYNC-ALPHA-001', 'sum', 'Alpha', [['server:wrong-sum', EXACT]]), record('SYNC-BETA-001', 'unimplemented', 'Beta', [])]));
  assert.deepEqual(outcome.unproven, ['SYNC-ALPHA-001']);
  assert.deepEqual(outcome.withoutRecipe, ['SYNC-BETA-001']);
  assert.deepEqual(
    outcome.result.rules.map((rule) => [rule.rule, rule.recipes, rule.detected]),
    [
      [EXACT, 1, true],
      [WORKING, 0, false],
    ],
  );
});

test('a fault name the registry does not know, or a rule the feature does not have, is an input error', async () => {
  await assert.rejects(runSensitivity(options([record('SYNC-ALPHA-001', 'sum', 'Alpha', [['server:typo', EXACT]])])), (error: unknown) => error instanceof InputError && /server:typo/.test(error.message));
  await assert.rejects(runSensitivity(options([record('SYNC-ALPHA-001', 'sum', 'Alpha', [['server:wrong-sum', 'a sum is roughly right']])])), (error: unknown) => error instanceof InputError && /a sum is roughly right/.test(error.message));
});

test('a baseline taken from an earlier run of the same code is not run again', async () => {
  const { runFeatures } = await import('../../harness/run/cucumber.ts');
  const workDir = scratchDir('synchro-sensitivity-baseline-');
  const baselineMessages = join(workDir, 'main-run.ndjson');
  await runFeatures({ cwd: root, paths: ['features/sum.feature', 'features/greeting.feature'], imports: ['steps/**/*.ts'], parallel: 1, worldParameters: {}, messagesFile: baselineMessages, progress: 'none' });
  const records = [record('SYNC-ALPHA-001', 'sum', 'Alpha', [['server:wrong-sum', EXACT], ['server:wrong-sum', WORKING]]), record('SYNC-ALPHA-002', 'greeting', 'Alpha', [])];
  const faultRuns = scratchDir('synchro-sensitivity-faults-');
  const outcome = await runSensitivity({ ...options(records), workDir: faultRuns, baselineMessages });
  assert.deepEqual(
    outcome.requirements.map((r) => [r.id, r.baseline, r.proven]),
    [
      ['SYNC-ALPHA-001', 'passed', true],
      ['SYNC-ALPHA-002', 'passed', false],
    ],
  );
  assert.deepEqual(outcome.unproven, ['SYNC-ALPHA-002']);
  // Only the two fault runs wrote message streams: the baseline was read, not run again.
  assert.equal(readdirSync(faultRuns).length, 2);
});

test('fault runs spread over worker threads give the results of one after another, in report order', async () => {
  const records = () => [
    record('SYNC-ALPHA-001', 'sum', 'Alpha', [
      ['server:wrong-sum', EXACT],
      ['server:broken-adder', WORKING],
    ]),
    record('SYNC-ALPHA-002', 'greeting', 'Alpha', [['server:rude-greeting', 'a greeting is polite']]),
  ];
  const serial = await runSensitivity(options(records()));
  const lines: string[] = [];
  const spread = await runSensitivity({ ...options(records()), parallel: 3, onResult: (line) => lines.push(line) });
  const shape = (outcome: typeof serial) => outcome.requirements.map((r) => [r.id, r.rules.map((rule) => rule.recipes.map((f) => [f.fault, f.outcome, f.detail]))]);
  assert.deepEqual(shape(spread), shape(serial));
  assert.deepEqual(spread.result, serial.result);
  // Each fault run reported once, as it finished.
  assert.equal(lines.length, 3);
});

test('a rule whose every scenario is about an undeclared implementation form is not applicable, not counted and not run; one applicable scenario keeps a rule held to a recipe', async () => {
  const binding = (faults: [name: string, rule: string][]) => {
    const located = record('SYNC-GAMMA-001', 'binding', 'Gamma', faults);
    located.record.applies_to = ['client'];
    return located;
  };
  const BINDING = 'a binding hands durable work to the native client';
  const workDir = scratchDir('synchro-sensitivity-form-');
  // A recipe aimed at the form-only rule is listed as not run; no fault run is made for it.
  const outcome = await runSensitivity(options([binding([['server:wrong-sum', 'a sum is exact in the client'], ['server:wrong-sum', BINDING]])], workDir));
  const [requirement] = outcome.requirements;
  assert.equal(requirement?.baseline, 'passed');
  assert.deepEqual(
    requirement?.rules.map((rule) => [rule.rule, rule.recipes.map((f) => f.outcome), rule.detected, rule.notApplicable === null ? null : 'not applicable']),
    [
      ['a sum is exact in the client', ['detected'], true, null],
      [BINDING, ['not-run'], false, 'not applicable'],
      // One of its two scenarios applies, so the rule still needs a detecting recipe.
      ['a greeting is polite in every form', [], false, null],
    ],
  );
  assert.match(requirement?.rules[1]?.notApplicable ?? '', /form:react-native-binding/);
  assert.match(requirement?.rules[1]?.recipes[0]?.detail ?? '', /not applicable/);
  assert.equal(readdirSync(workDir).filter((name) => name.startsWith('SYNC-GAMMA-001')).length, 1);
  // Only the two applicable rules count; the greeting rule without a recipe keeps the requirement unproven.
  assert.deepEqual(outcome.result.perRequirement, { 'SYNC-GAMMA-001': { detected: 1, total: 2 } });
  assert.deepEqual(outcome.result.total, { detected: 1, total: 2 });
  assert.equal(requirement?.proven, false);
  assert.deepEqual(outcome.unproven, ['SYNC-GAMMA-001']);
  assert.deepEqual(
    outcome.result.rules.map((rule) => [rule.rule, rule.detected, rule.notApplicable !== undefined]),
    [
      ['a sum is exact in the client', true, false],
      [BINDING, false, true],
      ['a greeting is polite in every form', false, false],
    ],
  );
  // With a recipe for every applicable rule, the form-only rule does not stand in the way of proof.
  const proven = await runSensitivity(options([binding([['server:wrong-sum', 'a sum is exact in the client'], ['server:rude-greeting', 'a greeting is polite in every form']])]));
  assert.deepEqual(proven.result.perRequirement, { 'SYNC-GAMMA-001': { detected: 1, total: 2 } });
  assert.deepEqual(proven.unproven, []);
});
