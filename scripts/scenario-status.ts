/**
 * Prints, per scenario of a run's conformance.json, its outcome and the first
 * step that did not pass with its error: the quickest way to see why a
 * requirement is not green while writing steps.
 *
 *   node scripts/scenario-status.ts <report dir> [@SYNC-AREA-NNN ...]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Step {
  kind: string;
  keyword: string;
  text: string;
  status: string;
  error: string | null;
}
interface Scenario {
  name: string;
  line: number;
  outcome?: string;
  status?: string;
  steps: Step[];
}
interface Requirement {
  id: string;
  title: string;
  status?: string;
  outcome?: string;
  scenarios: Scenario[];
}

const [dir, ...ids] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node scripts/scenario-status.ts <report dir> [@SYNC-AREA-NNN ...]');
  process.exit(2);
}
const report = JSON.parse(readFileSync(join(dir, 'conformance.json'), 'utf8')) as { requirements: Requirement[] };
const wanted = new Set(ids.map((id) => id.replace(/^@/, '')));
const counts = new Map<string, number>();
for (const requirement of report.requirements) {
  if (wanted.size > 0 ? !wanted.has(requirement.id) : requirement.scenarios.every((s) => s.steps.every((step) => step.status === 'skipped' || step.kind === 'hook'))) continue;
  console.log(`\n${requirement.id} ${requirement.title}: ${requirement.status ?? requirement.outcome ?? ''}`);
  for (const scenario of requirement.scenarios) {
    const blocking = scenario.steps.find((step) => step.status !== 'passed');
    const state = blocking ? blocking.status : 'passed';
    counts.set(state, (counts.get(state) ?? 0) + 1);
    console.log(`  [${state}] ${scenario.name} (line ${scenario.line})`);
    if (blocking && blocking.status !== 'passed') {
      console.log(`      at ${blocking.kind === 'hook' ? 'hook' : blocking.keyword.trim()} ${blocking.text}`);
      if (blocking.error) console.log(`      ${blocking.error.split('\n').slice(0, 12).join('\n      ')}`);
    }
  }
}
console.log(`\n${[...counts].map(([state, n]) => `${n} ${state}`).join(', ')}`);
