/**
 * The project's own step library: no feature step may match two step
 * definitions (Cucumber would make every scenario using it undetermined), and
 * no step file imports another (shared code lives in steps/support/). Both
 * are easy to break when sections are written in parallel; this fails the
 * unit stage at once instead of leaving it to the plan report.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { loadRecords } from '../../harness/catalog/records.ts';
import { planRequirements } from '../../harness/plan/definitions.ts';
import { FEATURE_PATHS, STEP_IMPORTS } from '../../harness/run/cucumber.ts';

const root = new URL('../../', import.meta.url).pathname;

test('no step text of any feature matches more than one step definition', async () => {
  const records = loadRecords(join(root, 'invariants.yaml')).records.map((located) => located.record);
  const plan = await planRequirements({ root, records, paths: FEATURE_PATHS, imports: STEP_IMPORTS });
  const ambiguous = plan.requirements.flatMap((requirement) => requirement.ambiguous.map((gap) => `${gap.uri}:${gap.line} "${gap.text}" matches ${gap.definitions.map((d) => `${d.uri}:${d.line}`).join(' and ')}`));
  assert.deepEqual([...new Set(ambiguous)], [], 'define each step text once (steps/common/ for texts several sections use)');
});

function stepFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'support' ? [] : stepFiles(path);
    return entry.name.endsWith('.steps.ts') ? [path] : [];
  });
}

test('no step file imports another step file', () => {
  const offenders: string[] = [];
  for (const file of stepFiles(join(root, 'steps'))) {
    for (const [, target] of readFileSync(file, 'utf8').matchAll(/from\s+'([^']+)'/g)) {
      if (target?.endsWith('.steps.ts')) offenders.push(`${relative(root, file)} imports ${target}`);
    }
  }
  assert.deepEqual(offenders, [], 'move the shared code to steps/support/');
});
