/**
 * Scenarios with a step lacking exactly one definition are found before the
 * run, one key per outline row, the same key the Before hook computes.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { incompleteScenarios, scenarioKey } from '../../harness/run/incomplete.ts';
import { scratchDir } from '../support/scratch-dir.ts';

test('lists exactly the scenarios with an undefined or ambiguous step, naming that step', () => {
  const cwd = scratchDir('synchro-incomplete-');
  mkdirSync(join(cwd, 'features'));
  writeFileSync(
    join(cwd, 'features/a.feature'),
    `Feature: a
  Background:
    Given a known step
  Scenario: complete
    Then another known step
  Scenario: missing
    Then a step nobody wrote
  Scenario Outline: per row
    Then <what>
    Examples:
      | what              |
      | another known step |
      | twice defined     |
`,
  );
  const definitions = ['a known step', 'another known step', 'twice defined', 'twice defined'].map((phrase) => ({ matchesStepName: (text: string) => text === phrase }));
  const found = incompleteScenarios(cwd, ['features/**/*.feature'], definitions);
  assert.deepEqual(found, {
    [scenarioKey('features/a.feature', ['a known step', 'a step nobody wrote'])]: 'a step nobody wrote',
    [scenarioKey('features/a.feature', ['a known step', 'twice defined'])]: 'twice defined',
  });
});
