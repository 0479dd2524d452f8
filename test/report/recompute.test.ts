// The gate's recomputation of verdicts from the evidence a report keeps.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import fc from 'fast-check';
import { requirementVerdict, STATUSES, type Status, type StepOutcome, type StepStatus, scenarioVerdict } from '../../harness/report/classify.ts';
import { buildReport, type ConformanceReport, type ReportRequirement, type ReportScenario } from '../../harness/report/conformance-json.ts';
import { describeContradiction, recomputeReport, recomputeRequirement, recomputeScenario, runProblems } from '../../harness/report/recompute.ts';
import { fixtureRun } from './helpers.ts';

const STEP_STATUSES: StepStatus[] = ['passed', 'failed', 'skipped', 'pending', 'undefined', 'ambiguous', 'unknown'];

let report: ConformanceReport;

before(async () => {
  const fixture = await fixtureRun();
  report = buildReport({
    classification: fixture.classification,
    index: fixture.index,
    catalog: { path: fixture.catalogFile, sha256: '0'.repeat(64) },
    implementation: { server: null, client: null },
  });
});

function step(status: StepStatus, index: number): StepOutcome {
  return { kind: 'step', keyword: 'Then', text: `step ${index}`, status, duration_ms: 0, error: status === 'failed' ? 'boom' : null };
}

/** A scenario as the classifier writes it: the verdict computed from the evidence, capabilities only when not applicable. */
const classifiedScenario = fc
  .record({
    steps: fc.array(fc.constantFrom(...STEP_STATUSES), { maxLength: 5 }),
    finished: fc.boolean(),
    assertions: fc.option(fc.nat(3), { nil: null }),
    notApplicable: fc.array(fc.constantFrom('sourceSql', 'crash'), { maxLength: 2 }),
    undetermined: fc.array(fc.constant('adapter unavailable'), { maxLength: 1 }),
  })
  .map(({ steps, finished, assertions, notApplicable, undetermined }): ReportScenario => {
    const outcomes = steps.map(step);
    const verdict = scenarioVerdict(outcomes, finished, assertions, notApplicable.map((c) => `adapter lacks capability ${c}`), undetermined);
    return {
      name: 'generated',
      uri: 'features/generated.feature',
      line: 3,
      tags: ['@SYNC-GEN-001'],
      ...verdict,
      capabilities: verdict.status === 'not-applicable' ? notApplicable : [],
      assertions,
      unasserted_steps: [],
      attempts: 1,
      steps: outcomes,
    };
  });

function requirementOf(scenarios: ReportScenario[], stated = requirementVerdict(scenarios)): ReportRequirement {
  return {
    id: 'SYNC-GEN-001',
    title: 'Generated',
    anchor: 'generated',
    section: 'Generated Invariants',
    profiles: ['server', 'full'],
    applies_to: ['server'],
    internal: false,
    feature: 'features/generated.feature',
    ...stated,
    scenarios,
  };
}

describe('recomputing verdicts', () => {
  test('a report the harness wrote recomputes to exactly its stated verdicts and reasons', () => {
    const { verdicts, contradictions } = recomputeReport(report);
    assert.deepEqual(contradictions, []);
    for (const requirement of report.requirements) {
      assert.deepEqual(verdicts.get(requirement.id), { status: requirement.status, reason: requirement.reason }, requirement.id);
    }
    // The fixture covers every status, so agreement is not the trivial all-passed case.
    assert.deepEqual(new Set(report.requirements.map((r) => r.status)), new Set(STATUSES));
  });

  test('every verdict the classifier computes is recomputed the same (property)', () => {
    fc.assert(
      fc.property(fc.array(classifiedScenario, { maxLength: 4 }), (scenarios) => {
        for (const scenario of scenarios) assert.equal(recomputeScenario(scenario).status, scenario.status);
        assert.deepEqual(recomputeRequirement(requirementOf(scenarios)).contradictions, []);
      }),
    );
  });

  test('a scenario is recomputed passed only when every step passed and an assertion executed, whatever it states (property)', () => {
    fc.assert(
      fc.property(classifiedScenario, fc.constantFrom(...STATUSES), (scenario, stated) => {
        const tampered = { ...scenario, status: stated };
        const recomputed = recomputeScenario(tampered).status;
        if (recomputed === 'passed') {
          assert.ok(tampered.steps.every((s) => s.status === 'passed'));
          assert.ok((tampered.assertions ?? 0) >= 1);
        }
        if (tampered.steps.some((s) => s.status === 'failed')) assert.equal(recomputed, 'failed');
      }),
    );
  });

  test('a scenario stated passed whose step failed is a contradiction, and so is the requirement built on it', () => {
    const failing = report.requirements.find((r) => r.id === 'SYNC-FIX-003');
    assert.ok(failing);
    const scenarios = failing.scenarios.map((s) => ({ ...s, status: 'passed' as Status, reason: null, assertions: 1 }));
    const { verdict, contradictions } = recomputeRequirement({ ...failing, status: 'passed', reason: null, scenarios });
    assert.equal(verdict.status, 'failed');
    assert.deepEqual(
      contradictions.map((c) => [c.scenario?.line ?? null, c.stated, c.recomputed]),
      [
        [failing.scenarios.find((s) => s.status === 'failed')?.line, 'passed', 'failed'],
        [null, 'passed', 'failed'],
      ],
    );
    const lines = contradictions.map(describeContradiction);
    assert.match(lines[0] ?? '', /SYNC-FIX-003 {2}scenario ".*" \(features\/failing\.feature:\d+\) is stated passed, but its steps and evidence make it failed: step "Then .*" failed: /);
    assert.match(lines[1] ?? '', /SYNC-FIX-003 {2}requirement is stated passed, but its scenarios make it failed/);
  });

  test('a requirement status that its scenarios do not support is a contradiction in either direction', () => {
    const passes = report.requirements.find((r) => r.id === 'SYNC-FIX-001');
    const undetermined = report.requirements.find((r) => r.id === 'SYNC-FIX-002');
    assert.ok(passes && undetermined);
    const raised = recomputeRequirement({ ...undetermined, status: 'passed', reason: null });
    assert.deepEqual(raised.contradictions.map((c) => [c.scenario, c.stated, c.recomputed]), [[null, 'passed', 'undetermined']]);
    const lowered = recomputeRequirement({ ...passes, status: 'failed', reason: 'said so' });
    assert.deepEqual(lowered.contradictions.map((c) => [c.stated, c.recomputed]), [['failed', 'passed']]);
    const empty = recomputeRequirement(requirementOf([], { status: 'passed', reason: null }));
    assert.deepEqual(empty.contradictions.map((c) => [c.stated, c.recomputed, c.reason]), [['passed', 'undetermined', 'no scenario ran']]);
  });

  test('a run with no finish time is incomplete even when the report lists no such problem', () => {
    assert.deepEqual(runProblems(report), report.problems);
    const cut = { ...report, problems: [], run: { ...report.run, finished_at: null } };
    assert.deepEqual(runProblems(cut).map((p) => p.kind), ['run-incomplete']);
    const listed = { ...cut, problems: [{ kind: 'run-incomplete' as const, message: 'stream ends early', uri: null, line: null }] };
    assert.deepEqual(runProblems(listed).map((p) => p.message), ['stream ends early']);
  });
});

test('scenarios about an undeclared implementation form are left out of their requirement, unless nothing else is left', () => {
  const scenario = (name: string, status: Status, capabilities: string[] = []) => ({ name, uri: 'features/x.feature', line: 1, status, reason: status === 'passed' ? null : `${name} reason`, capabilities });
  const passed = scenario('runs', 'passed');
  const binding = scenario('binding only', 'not-applicable', ['form:react-native-binding']);
  const control = scenario('needs a control', 'not-applicable', ['crash']);
  assert.deepEqual(requirementVerdict([passed, binding]), { status: 'passed', reason: null });
  assert.equal(requirementVerdict([binding]).status, 'not-applicable');
  assert.match(requirementVerdict([binding]).reason ?? '', /binding only reason/);
  // A missing capability is still a gap in what was shown, never left out.
  assert.equal(requirementVerdict([passed, control]).status, 'not-applicable');
  assert.equal(requirementVerdict([passed, binding, control]).status, 'not-applicable');
});
