// `synchro-conformance plan` as a user runs it, on a small fixture project,
// checked against what Cucumber's own dry run finds undefined and ambiguous.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, test } from 'node:test';
import { loadConfiguration, runCucumber } from '@cucumber/cucumber/api';
import type { Envelope } from '@cucumber/messages';
import { featureText, makeProject, RECORDS } from './project-fixture.ts';

const cli = new URL('../../harness/cli.ts', import.meta.url).pathname;
const bin = new URL('../../bin/synchro-conformance.js', import.meta.url).pathname;
const project = new URL('./fixtures/plan-project/', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'synchro-plan-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

let markers = 0;
/** Runs the command in `cwd`; any hook or step body of the fixture that runs leaves a marker file behind. */
function plan(args: string[], cwd = project, entry = cli) {
  markers += 1;
  const marker = join(scratch, `ran-${markers}.txt`);
  const result = spawnSync(process.execPath, [entry, 'plan', ...args], { cwd, encoding: 'utf8', env: { ...process.env, PLAN_FIXTURE_MARKER: marker } });
  return { status: result.status, out: result.stdout, err: result.stderr, ran: existsSync(marker) ? readFileSync(marker, 'utf8') : '' };
}

interface JsonPlan {
  requirements: { id: string; defined: boolean; files: string[]; undefined: { text: string }[]; ambiguous: { text: string; definitions: { uri: string }[] }[] }[];
  summary: { requirements: number; defined: number; undefinedTexts: number; ambiguousTexts: number };
}

test('plan lists, per requirement, its step files and every undefined or ambiguous step text, running nothing', () => {
  const result = plan([]);
  assert.equal(result.status, 1, result.err);
  assert.equal(result.ran, '', 'no hook or step body ran');
  assert.equal(
    result.out,
    [
      'SYNC-ALPHA-001  First Rule (features/first-rule.feature): defined; 3 scenarios, 9 steps',
      '    steps/client.steps.ts',
      '    steps/server.steps.ts',
      'SYNC-ALPHA-002  Second Rule (features/second-rule.feature): 1 step text undefined, 1 step text ambiguous; 2 scenarios, 5 steps',
      '    steps/server.steps.ts',
      '    undefined: "the client does something nobody defined" (features/second-rule.feature:6, 2 steps)',
      '    ambiguous: "the answer is ambiguous" (features/second-rule.feature:11) matches steps/server.steps.ts:18, steps/client.steps.ts:10',
      'SYNC-BETA-001  Third Rule (features/third-rule.feature): no scenario',
      '',
      '1 of 3 requirements fully defined; 1 step text undefined, 1 step text ambiguous',
      '',
    ].join('\n'),
  );
});

test('the fixture\'s marker records a real run, so its absence above means nothing ran', () => {
  const marker = join(scratch, 'real-run.txt');
  const script = `import { loadConfiguration, runCucumber } from '@cucumber/cucumber/api';
const { runConfiguration } = await loadConfiguration({ file: false, provided: { paths: ['features/first-rule.feature'], import: ['steps/**/*.ts'] } });
await runCucumber(runConfiguration);`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8', env: { ...process.env, PLAN_FIXTURE_MARKER: marker } });
  assert.equal(result.status, 0, result.stderr);
  assert.match(readFileSync(marker, 'utf8'), /^BeforeAll\nserver with 2 tables\nclient pulls\nanswer holds 2 rows\n/);
});

test('plan --tags lists only the requirements it selects, and exits 0 when they are fully defined', () => {
  const result = plan(['--tags', '@SYNC-ALPHA-001']);
  assert.equal(result.status, 0, result.err);
  assert.match(result.out, /^SYNC-ALPHA-001 /);
  assert.doesNotMatch(result.out, /SYNC-ALPHA-002|SYNC-BETA-001/);
  assert.match(result.out, /1 of 1 requirements fully defined; 0 step texts undefined, 0 step texts ambiguous\n$/);
  const client = plan(['--tags', '@client']);
  assert.equal(client.status, 1);
  assert.match(client.out, /0 of 1 requirements fully defined/);
});

test('plan --json carries the same findings for machines', () => {
  const result = plan(['--json']);
  assert.equal(result.status, 1, result.err);
  const json = JSON.parse(result.out) as JsonPlan;
  assert.deepEqual(json.summary, { requirements: 3, defined: 1, undefinedTexts: 1, ambiguousTexts: 1 });
  assert.deepEqual(
    json.requirements.map((r) => [r.id, r.defined, r.undefined.map((g) => g.text), r.ambiguous.map((g) => g.definitions.map((d) => d.uri))]),
    [
      ['SYNC-ALPHA-001', true, [], []],
      ['SYNC-ALPHA-002', false, ['the client does something nobody defined'], [['steps/server.steps.ts', 'steps/client.steps.ts']]],
      ['SYNC-BETA-001', false, [], []],
    ],
  );
});

test('plan agrees with Cucumber\'s dry run on which step texts are undefined and which are ambiguous', async () => {
  const messagesFile = join(scratch, 'dry-run.ndjson');
  const { runConfiguration } = await loadConfiguration(
    { file: false, provided: { paths: ['features/**/*.feature'], import: ['steps/**/*.ts'], format: [`message:${messagesFile}`], dryRun: true } },
    { cwd: project },
  );
  const silent = new PassThrough().resume();
  await runCucumber(runConfiguration, { cwd: project, stdout: silent, stderr: silent });
  const envelopes = readFileSync(messagesFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Envelope);
  const stepTexts = new Map(envelopes.flatMap((e) => e.pickle?.steps.map((s) => [s.id, s.text] as const) ?? []));
  const found = { undefined: new Set<string>(), ambiguous: new Set<string>() };
  for (const testStep of envelopes.flatMap((e) => e.testCase?.testSteps ?? [])) {
    if (testStep.pickleStepId === undefined) continue;
    const count = testStep.stepDefinitionIds?.length ?? 0;
    if (count === 0) found.undefined.add(stepTexts.get(testStep.pickleStepId) ?? '');
    if (count > 1) found.ambiguous.add(stepTexts.get(testStep.pickleStepId) ?? '');
  }
  const json = JSON.parse(plan(['--json']).out) as JsonPlan;
  assert.deepEqual(new Set(json.requirements.flatMap((r) => r.undefined.map((g) => g.text))), found.undefined);
  assert.deepEqual(new Set(json.requirements.flatMap((r) => r.ambiguous.map((g) => g.text))), found.ambiguous);
  assert.equal(found.undefined.size + found.ambiguous.size, 2, 'the fixture has one of each');
});

test('the installed command exits with the plan\'s status too', () => {
  assert.equal(plan([], project, bin).status, 1);
  assert.equal(plan(['--tags', '@SYNC-ALPHA-001'], project, bin).status, 0);
});

test('bad input exits 2: a tag expression that does not parse or selects nothing, and a feature that does not parse', () => {
  const broken = plan(['--tags', 'not']);
  assert.equal(broken.status, 2);
  assert.match(broken.err, /--tags is not a valid tag expression/);
  const nothing = plan(['--tags', '@SYNC-NOPE-001']);
  assert.equal(nothing.status, 2);
  assert.match(nothing.err, /--tags "@SYNC-NOPE-001" selects no scenario of any requirement in invariants\.yaml/);
  assert.equal(plan(['--bogus']).status, 2);

  const root = makeProject({
    features: {
      'features/first-rule.feature': featureText('SYNC-ALPHA-001', 'First Rule'),
      'features/second-rule.feature': '@SYNC-ALPHA-002\nFeature: Second Rule\n\n  Scenario: fine\n    Given a step\n  Oops this is not Gherkin\n',
      'features/third-rule.feature': featureText(RECORDS[2]?.id ?? '', 'Third Rule'),
    },
  });
  const unparsable = plan([], root);
  assert.equal(unparsable.status, 2);
  assert.match(unparsable.err, /features\/second-rule\.feature:6: the feature does not parse: .*Fix: correct the Gherkin/);
  rmSync(root, { recursive: true, force: true });
});
