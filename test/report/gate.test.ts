import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, mock, test } from 'node:test';
import { InputError, UsageError } from '../../harness/errors.ts';
import type { SensitivityResult } from '../../harness/report/conformance-json.ts';
import { main, sensitivityBlockers } from '../../harness/report/gate.ts';
import { REPORT_FILES, writeReports } from '../../harness/report/write.ts';
import { fixtureRecords } from './fixtures/run-fixtures.ts';
import { fixtureRun, tempDir } from './helpers.ts';

let reportFile: string;

before(async () => {
  const fixture = await fixtureRun();
  const outDir = tempDir();
  writeReports({
    messagesFile: fixture.messagesFile,
    records: fixtureRecords(),
    catalogFile: fixture.catalogFile,
    implementation: { server: { id: 'reference', description: '' }, client: { id: 'reference', description: '' } },
    outDir,
  });
  reportFile = join(outDir, REPORT_FILES.json);
});

/** Runs the gate and returns its exit status and what it printed on stdout and stderr. */
async function gate(args: string[], file = reportFile): Promise<{ status: number; out: string; err: string }> {
  const lines: string[] = [];
  const errors: string[] = [];
  const log = mock.method(console, 'log', (line: string) => lines.push(line));
  const error = mock.method(console, 'error', (line: string) => errors.push(line));
  try {
    return { status: await main(['--report', file, ...args]), out: lines.join('\n'), err: errors.join('\n') };
  } finally {
    log.mock.restore();
    error.mock.restore();
  }
}

type EditableReport = {
  problems: { kind: string; message: string; uri: string | null; line: number | null }[];
  run: { finished_at: string | null };
  requirements: { id: string; status: string; reason: string | null; scenarios: { status: string; reason: string | null; assertions: number | null; steps: { status: string }[] }[] }[];
};

/** Writes a copy of the fixture report changed by `edit` and returns its path. */
function editedReport(edit: (report: EditableReport) => void): string {
  const report = JSON.parse(readFileSync(reportFile, 'utf8')) as EditableReport;
  edit(report);
  const file = join(tempDir(), 'conformance.json');
  writeFileSync(file, JSON.stringify(report));
  return file;
}

function requirement(report: EditableReport, id: string): EditableReport['requirements'][number] {
  const found = report.requirements.find((r) => r.id === id);
  assert.ok(found, id);
  return found;
}

/** The fixture run's features include an untagged scenario and one with an unknown id: two run problems. */
const FIXTURE_PROBLEMS = /\[missing-requirement-tag\] features\/missing-id\.feature:3: scenario "untagged"[^\n]*\n {2}\[unknown-requirement\] features\/unknown-id\.feature:3: /;

async function rejectsInput(args: string[], problem: RegExp): Promise<void> {
  await assert.rejects(gate(args), (error: unknown) => {
    assert.ok(error instanceof InputError, String(error));
    assert.match(error.problem, problem);
    return true;
  });
}

describe('gate', () => {
  test('blocks a profile with any requirement not passed and lists each blocker with status and reason', async () => {
    const { status, out } = await gate(['--profile', 'server', '--allow-run-problems']);
    assert.equal(status, 1);
    assert.match(out, /^gate blocked: 6 of 8 requirements of profile server did not pass$/m);
    assert.match(out, /SYNC-FIX-002 {2}Passes Without Checking\n {6}undetermined: 1 of 2 scenarios undetermined/);
    assert.match(out, /SYNC-FIX-007 {2}Needs A Capability\n {6}not-applicable: adapter lacks capability sourceSql/);
    assert.match(out, /SYNC-FIX-010 {2}A Hook Fails\n {6}failed: /);
    assert.match(out, /SYNC-FIX-009 {2}Never Written\n {6}undetermined: no scenario ran/);
    assert.doesNotMatch(out, /SYNC-FIX-001|SYNC-FIX-011|SYNC-FIX-003/, 'passed and client-only requirements are not blockers of the server profile');
  });

  test('selects only the requirements of the profile', async () => {
    const { status, out } = await gate(['--profile', 'client', '--allow-run-problems']);
    assert.equal(status, 1);
    assert.match(out, /3 of 3 requirements of profile client/);
    assert.doesNotMatch(out, /SYNC-FIX-00[1256790]|SYNC-FIX-01/);
  });

  test('opens when every selected requirement passed and the run had no problem', async () => {
    const clean = editedReport((report) => {
      report.problems = [];
    });
    const { status, out } = await gate(['--profile', 'full', '--ids', 'SYNC-FIX-001, SYNC-FIX-011'], clean);
    assert.equal(status, 0);
    assert.equal(out, 'gate passed: all 2 requirements of profile full, ids SYNC-FIX-001, SYNC-FIX-011 passed');
  });

  test('run problems block the gate, each printed, even when every selected requirement passed', async () => {
    const { status, out } = await gate(['--profile', 'full', '--ids', 'SYNC-FIX-001, SYNC-FIX-011']);
    assert.equal(status, 1);
    assert.match(out, /^gate blocked: the run had 2 problems, so its results may be incomplete \(--allow-run-problems gates on the requirements alone\)$/m);
    assert.match(out, FIXTURE_PROBLEMS);
    assert.match(out, /every selected requirement of profile full, ids SYNC-FIX-001, SYNC-FIX-011 passed, but the run problems above block the gate/);
    assert.doesNotMatch(out, /gate passed/);
  });

  test('--allow-run-problems turns run problems into warnings and gates on the requirements alone', async () => {
    const { status, out, err } = await gate(['--profile', 'full', '--ids', 'SYNC-FIX-001,SYNC-FIX-011', '--allow-run-problems']);
    assert.equal(status, 0);
    assert.match(out, /gate passed: all 2 requirements .* passed \(2 run problems allowed by --allow-run-problems\)/);
    assert.match(err, /^warning: \[missing-requirement-tag\] features\/missing-id\.feature:3: /m);
    assert.match(err, /^warning: \[unknown-requirement\] /m);
  });

  test('every kind of run problem blocks, and so does a run block without a finish time', async () => {
    const kinds = ['run-incomplete', 'run-hook-failed', 'run-failed', 'parse-error', 'several-requirement-tags', 'unknown-requirement', 'missing-requirement-tag'];
    for (const kind of kinds) {
      const file = editedReport((report) => {
        report.problems = [{ kind, message: `a ${kind} problem`, uri: kind === 'parse-error' ? 'features/broken.feature' : null, line: kind === 'parse-error' ? 7 : null }];
      });
      const { status, out } = await gate(['--profile', 'full', '--ids', 'SYNC-FIX-001'], file);
      assert.equal(status, 1, kind);
      assert.match(out, new RegExp(`^ {2}\\[${kind}\\] ${kind === 'parse-error' ? 'features/broken\\.feature:7: ' : ''}a ${kind} problem$`, 'm'));
    }
    const unfinished = editedReport((report) => {
      report.problems = [];
      report.run.finished_at = null;
    });
    const { status, out } = await gate(['--profile', 'full', '--ids', 'SYNC-FIX-001'], unfinished);
    assert.equal(status, 1);
    assert.match(out, /\[run-incomplete\] the report records no finish time for the run/);
  });

  test('recomputes each status from the scenarios and refuses a report whose stated status disagrees, naming the requirement', async () => {
    // A failed requirement rewritten as passed, scenarios and all, but with its failed step left in place.
    const forged = editedReport((report) => {
      report.problems = [];
      const failing = requirement(report, 'SYNC-FIX-003');
      failing.status = 'passed';
      failing.reason = null;
      for (const scenario of failing.scenarios) Object.assign(scenario, { status: 'passed', reason: null, assertions: 1 });
    });
    const refused = await gate(['--profile', 'client', '--ids', 'SYNC-FIX-003'], forged);
    assert.equal(refused.status, 1);
    assert.match(refused.out, /^gate refused: .*conformance\.json states verdicts its own evidence does not support \(1 requirement\)/);
    assert.match(refused.out, /SYNC-FIX-003 {2}scenario ".*" \(features\/failing\.feature:\d+\) is stated passed, but its steps and evidence make it failed/);
    assert.match(refused.out, /SYNC-FIX-003 {2}requirement is stated passed, but its scenarios make it failed/);
    assert.doesNotMatch(refused.out, /gate passed/);

    // Only the requirement's own status changed: its undetermined scenario still blocks it.
    const raised = editedReport((report) => {
      const undetermined = requirement(report, 'SYNC-FIX-002');
      undetermined.status = 'passed';
      undetermined.reason = null;
    });
    const second = await gate(['--profile', 'server', '--allow-run-problems'], raised);
    assert.equal(second.status, 1);
    assert.match(second.out, /SYNC-FIX-002 {2}requirement is stated passed, but its scenarios make it undetermined: 1 of 2 scenarios undetermined/);
  });

  test('a contradiction outside the selection still refuses the report', async () => {
    const forged = editedReport((report) => {
      report.problems = [];
      const failing = requirement(report, 'SYNC-FIX-010');
      failing.status = 'not-applicable';
    });
    const { status, out } = await gate(['--profile', 'full', '--ids', 'SYNC-FIX-001'], forged);
    assert.equal(status, 1);
    assert.match(out, /SYNC-FIX-010 {2}requirement is stated not-applicable, but its scenarios make it failed/);
  });

  test('narrows by section', async () => {
    const { status, out } = await gate(['--profile', 'full', '--section', 'Server Change Capture Invariants', '--allow-run-problems']);
    assert.equal(status, 1);
    assert.match(out, /2 of 2 requirements of profile full, section "Server Change Capture Invariants"/);
  });

  test('refuses an unknown id, an unknown section and a selection that matches nothing', async () => {
    await rejectsInput(['--profile', 'server', '--ids', 'SYNC-FIX-001,SYNC-NOPE-001'], /no requirement SYNC-NOPE-001 in the report/);
    await rejectsInput(['--profile', 'server', '--section', 'Nowhere'], /no section "Nowhere"/);
    await rejectsInput(['--profile', 'client', '--ids', 'SYNC-FIX-001'], /no requirement of profile client matches/);
  });

  test('refuses a bad command line', async () => {
    await assert.rejects(gate([]), UsageError);
    await assert.rejects(gate(['--profile', 'everything']), UsageError);
    await assert.rejects(gate(['--profile', 'server', '--verbose']), UsageError);
  });

  test('refuses a report that is missing, not JSON, or not a conformance report', async () => {
    const dir = tempDir();
    const missing = join(dir, 'absent.json');
    await assert.rejects(main(['--profile', 'server', '--report', missing]), (e: unknown) => e instanceof InputError && e.file === missing);

    const notJson = join(dir, 'broken.json');
    writeFileSync(notJson, '{\n  "format": "synchro-conformance-report/1",\n  oops\n}\n');
    await assert.rejects(main(['--profile', 'server', '--report', notJson]), (e: unknown) => {
      assert.ok(e instanceof InputError);
      assert.equal(e.line, 3);
      assert.match(e.problem, /not valid JSON/);
      return true;
    });

    const truncated = join(dir, 'truncated.json');
    writeFileSync(truncated, readFileSync(reportFile, 'utf8').slice(0, 200));
    await assert.rejects(main(['--profile', 'server', '--report', truncated]), (e: unknown) => {
      assert.ok(e instanceof InputError);
      assert.equal(e.line, readFileSync(truncated, 'utf8').split('\n').length);
      return true;
    });

    const tampered = join(dir, 'tampered.json');
    const report = JSON.parse(readFileSync(reportFile, 'utf8')) as { requirements: { status: string }[] };
    for (const r of report.requirements) r.status = 'passed';
    writeFileSync(tampered, JSON.stringify(report));
    await assert.rejects(main(['--profile', 'server', '--report', tampered]), (e: unknown) => {
      assert.ok(e instanceof InputError);
      assert.match(e.problem, /not a conformance report: \/requirements\/\d+\/reason/);
      return true;
    });
  });

  test('a requirement about an implementation form the adapters do not declare is listed and not counted; a missing capability still blocks', async () => {
    const reason = 'not for this implementation\'s form (form:pgrx-extension): the adapter does not declare it';
    const outsideForm = editedReport((report) => {
      const fix = requirement(report, 'SYNC-FIX-007') as EditableReport['requirements'][number] & { scenarios: { capabilities: string[] }[] };
      fix.reason = reason;
      for (const scenario of fix.scenarios) {
        // Its passed scenario becomes one for the form too: a requirement with any scenario inside the implementation is judged on those.
        if (scenario.status === 'passed') Object.assign(scenario, { status: 'not-applicable', steps: scenario.steps.map((step, i) => (i === 0 ? step : { ...step, status: 'skipped' })) });
        scenario.capabilities = ['form:pgrx-extension'];
        scenario.reason = reason;
      }
    });
    const { status, out } = await gate(['--profile', 'server', '--allow-run-problems'], outsideForm);
    assert.equal(status, 1, 'the other blockers still block');
    assert.match(out, /^not counted: 1 requirement is about an implementation form the adapters do not declare\n {2}SYNC-FIX-007 {2}Needs A Capability\n {6}not for this implementation's form \(form:pgrx-extension\)/m);
    assert.match(out, /^gate blocked: 5 of 7 requirements of profile server did not pass$/m);
    assert.doesNotMatch(out, /SYNC-FIX-007 {2}Needs A Capability\n {6}not-applicable/);
    const alone = await gate(['--profile', 'server', '--ids', 'SYNC-FIX-007', '--allow-run-problems'], outsideForm);
    assert.equal(alone.status, 1, 'a gate that counted nothing stays closed');
    assert.match(alone.out, /every selected requirement of profile server, ids SYNC-FIX-007 is about an implementation form/);
    const capability = await gate(['--profile', 'server', '--ids', 'SYNC-FIX-007', '--allow-run-problems']);
    assert.match(capability.out, /gate blocked: 1 of 1 requirements[^\n]*\n {2}SYNC-FIX-007 {2}Needs A Capability\n {6}not-applicable: adapter lacks capability sourceSql/);
  });
});

describe('sensitivityBlockers', () => {
  const requirement = { id: 'SYNC-GAMMA-001' } as Parameters<typeof sensitivityBlockers>[1][number];
  const result = (rules: SensitivityResult['rules']): SensitivityResult => {
    const applicable = rules.filter((rule) => rule.notApplicable === undefined);
    const counts = { detected: applicable.filter((rule) => rule.detected).length, total: applicable.length };
    return { total: counts, perSection: { Gamma: counts }, perRequirement: { 'SYNC-GAMMA-001': counts }, rules, results: [] };
  };

  test('a rule not applicable by form does not block; an applicable rule without a detecting recipe still does', () => {
    const formOnly = { id: 'SYNC-GAMMA-001', rule: 'a binding hands durable work over', line: 9, recipes: 0, detected: false, notApplicable: 'every scenario of the rule is about an implementation form the adapters do not declare (form:react-native-binding)' };
    const detected = { id: 'SYNC-GAMMA-001', rule: 'a sum is exact', line: 4, recipes: 1, detected: true };
    assert.deepEqual(sensitivityBlockers(result([detected, formOnly]), [requirement]), []);
    const undetected = { id: 'SYNC-GAMMA-001', rule: 'a greeting is polite', line: 14, recipes: 0, detected: false };
    const lines = sensitivityBlockers(result([detected, formOnly, undetected]), [requirement]);
    assert.equal(lines[0], '  SYNC-GAMMA-001  1 of 2 rules proven');
    assert.deepEqual(lines.slice(1), ['      "a greeting is polite": no fault recipe']);
  });
});
