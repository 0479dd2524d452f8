import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { RequirementRecord } from '../../harness/catalog/types.ts';
import type { Classification, RequirementOutcome, ScenarioOutcome, Status } from '../../harness/report/classify.ts';
import { classifyRequirement, requirementTags, STATUSES } from '../../harness/report/classify.ts';
import { fixtureRun } from './helpers.ts';

let classification: Classification;
const requirement = (id: string): RequirementOutcome => {
  const found = classification.requirements.find((r) => r.id === id);
  assert.ok(found, `requirement ${id} is in the classification`);
  return found;
};

before(async () => {
  classification = (await fixtureRun()).classification;
});

describe('classification of a real Cucumber run', () => {
  test('every scenario passed with assertions: passed, without a reason', () => {
    const r = requirement('SYNC-FIX-001');
    assert.equal(r.status, 'passed');
    assert.equal(r.reason, null);
    assert.deepEqual(
      r.scenarios.map((s) => [s.name, s.status, s.assertions]),
      [
        ['first check', 'passed', 1],
        ['table of checks', 'passed', 1],
      ],
    );
    // The outline's example row is the scenario's line, not the outline's.
    assert.equal(r.scenarios[1]?.line, 13);
  });

  test('a scenario whose steps passed without any assertion is undetermined', () => {
    const r = requirement('SYNC-FIX-002');
    assert.equal(r.status, 'undetermined');
    const silent = r.scenarios.find((s) => s.name === 'a check that checks nothing');
    assert.equal(silent?.status, 'undetermined');
    assert.equal(silent?.reason, 'no assertion executed');
    assert.equal(silent?.assertions, 0);
    assert.match(r.reason ?? '', /1 of 2 scenarios undetermined.*no assertion executed/);
  });

  test('a failing step fails the requirement and carries the error message', () => {
    const r = requirement('SYNC-FIX-003');
    assert.equal(r.status, 'failed');
    assert.match(r.reason ?? '', /1 of 2 scenarios failed/);
    assert.match(r.reason ?? '', /step "Then the answer is 41" failed: Error: expected 42, got 41/);
    const failing = r.scenarios.find((s) => s.status === 'failed');
    assert.deepEqual(
      failing?.steps.map((s) => [s.kind, s.keyword, s.text, s.status]),
      [
        ['step', 'Given', 'a working system', 'passed'],
        ['step', 'Then', 'the answer is 41', 'failed'],
        ['step', 'And', 'the answer is 42', 'skipped'],
        ['hook', 'After', '(steps/steps.ts:32)', 'passed'],
      ],
    );
    assert.match(failing?.steps[1]?.error ?? '', /expected 42, got 41 <not & "escaped">/);
  });

  test('undefined, pending and ambiguous steps leave the requirement undetermined with the step named', () => {
    assert.equal(requirement('SYNC-FIX-004').status, 'undetermined');
    assert.match(requirement('SYNC-FIX-004').reason ?? '', /step "When a step nobody wrote" is undefined/);
    assert.equal(requirement('SYNC-FIX-005').status, 'undetermined');
    assert.match(requirement('SYNC-FIX-005').reason ?? '', /step "When a step is pending" is pending/);
    assert.equal(requirement('SYNC-FIX-006').status, 'undetermined');
    assert.match(requirement('SYNC-FIX-006').reason ?? '', /step "Given an ambiguous step" is ambiguous/);
  });

  test('a scenario skipped with the not-applicable evidence makes the requirement not-applicable, naming the capability', () => {
    const r = requirement('SYNC-FIX-007');
    assert.equal(r.status, 'not-applicable');
    assert.equal(r.reason, 'adapter lacks capability sourceSql: the adapter offers no direct source SQL');
    const skipped = r.scenarios.find((s) => s.status === 'not-applicable');
    assert.deepEqual(skipped?.capabilities, ['sourceSql']);
    assert.equal(r.scenarios.find((s) => s.name === 'black-box part')?.status, 'passed');
  });

  test('a scenario skipped with the undetermined evidence is undetermined with the harness reason', () => {
    const r = requirement('SYNC-FIX-008');
    assert.equal(r.status, 'undetermined');
    assert.equal(r.scenarios[0]?.reason, 'the client adapter process did not start');
  });

  test('a requirement with no scenario in the run is undetermined: no scenario ran', () => {
    const r = requirement('SYNC-FIX-009');
    assert.equal(r.status, 'undetermined');
    assert.equal(r.reason, 'no scenario ran');
    assert.deepEqual(r.scenarios, []);
  });

  test('a failing Before hook fails the scenario', () => {
    const r = requirement('SYNC-FIX-010');
    assert.equal(r.status, 'failed');
    assert.match(r.reason ?? '', /Before hook \(steps\/steps\.ts:28\) failed: Error: the fixture Before hook broke/);
  });

  test('only the last attempt of a retried scenario counts', () => {
    const r = requirement('SYNC-FIX-011');
    assert.equal(r.status, 'passed');
    assert.equal(r.scenarios[0]?.attempts, 2);
  });

  test('scenarios with an unknown id tag or without an id tag are reported as problems, not dropped', () => {
    const kinds = classification.problems.map((p) => [p.kind, p.uri]);
    assert.deepEqual(
      kinds.filter(([kind]) => kind !== 'run-failed'),
      [
        ['missing-requirement-tag', 'features/missing-id.feature'],
        ['unknown-requirement', 'features/unknown-id.feature'],
      ],
    );
    const unknown = classification.problems.find((p) => p.kind === 'unknown-requirement');
    assert.match(unknown?.message ?? '', /@SYNC-ZZZ-999/);
    assert.equal(unknown?.line, 3);
    assert.ok(!classification.requirements.some((r) => r.id === 'SYNC-ZZZ-999'));
  });

  test('every requirement that did not pass carries a reason', () => {
    for (const r of classification.requirements) {
      assert.equal(r.reason === null, r.status === 'passed', `${r.id} ${r.status} reason ${r.reason}`);
      for (const s of r.scenarios) assert.equal(s.reason === null, s.status === 'passed', `${r.id} "${s.name}"`);
    }
  });
});

describe('requirement id tags', () => {
  test('read the SYNC id from the tags, once', () => {
    assert.deepEqual(requirementTags(['@SYNC-PROTO-001', '@server', '@cap:sourceSql', '@SYNC-PROTO-001']), ['SYNC-PROTO-001']);
    assert.deepEqual(requirementTags(['@server', '@SYNC-lower-001', '@SYNC-A-']), []);
  });
});

const record: RequirementRecord = {
  id: 'SYNC-PROP-001',
  title: 'Property',
  anchor: 'property',
  section: 'Protocol Invariants',
  summary: 'A generated requirement.',
  applies_to: ['server'],
  profiles: ['server', 'full'],
  feature: 'features/protocol/property.feature',
  references: [{ type: 'normative', anchor: 'property' }],
};

function scenario(status: Status, index: number): ScenarioOutcome {
  return {
    requirement: record.id,
    name: `scenario ${index}`,
    uri: record.feature,
    line: index + 3,
    tags: [`@${record.id}`],
    status,
    reason: status === 'passed' ? null : `${status} because of case ${index}`,
    capabilities: status === 'not-applicable' ? ['clock'] : [],
    assertions: status === 'passed' ? 1 : 0,
    unasserted_steps: [],
    attempts: 1,
    steps: [],
  };
}

describe('requirement verdict from scenario verdicts', () => {
  test('failed beats undetermined beats not-applicable beats passed, and only passed has no reason', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...STATUSES), { maxLength: 8 }), (statuses) => {
        const outcome = classifyRequirement(record, statuses.map(scenario));
        const expected: Status = statuses.includes('failed')
          ? 'failed'
          : statuses.length === 0 || statuses.includes('undetermined')
            ? 'undetermined'
            : statuses.includes('not-applicable')
              ? 'not-applicable'
              : 'passed';
        assert.equal(outcome.status, expected);
        assert.equal(outcome.reason === null, expected === 'passed');
        if (expected === 'not-applicable') assert.match(outcome.reason ?? '', /clock/);
      }),
    );
  });
});
