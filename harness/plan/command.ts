/**
 * `synchro-conformance plan [--tags <expr>] [--records invariants.yaml] [--json]`
 *
 * Shows, per requirement, the step files that define its steps and every step
 * text with no definition or with several, without running a scenario or
 * starting a database, server or client. Exit 0 when every listed requirement
 * is fully defined, 1 otherwise, 2 for bad input.
 */
import { dirname, resolve } from 'node:path';
import { loadRecords } from '../catalog/records.ts';
import { parseCommandLine } from '../cli-args.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError } from '../errors.ts';
import { FEATURE_PATHS, STEP_IMPORTS } from '../run/cucumber.ts';
import { type Plan, planRequirements, type RequirementPlan, type StepGap } from './definitions.ts';

export const USAGE = `plan [--tags <expression>] [--records invariants.yaml] [--json]
  Lists, per requirement, the step files defining its steps and each step text
  that no step definition matches (undefined) or several match (ambiguous),
  without running anything. --tags selects scenarios as \`run --tags\` does.
  Exits 0 when every listed requirement has scenarios and all their steps are
  defined exactly once, 1 otherwise.`;

const OPTIONS = {
  tags: { type: 'string' },
  records: { type: 'string', default: 'invariants.yaml' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const;


export async function main(args: string[]): Promise<number> {
  const { values } = parseCommandLine({ args, options: OPTIONS, allowPositionals: false }, USAGE);
  if (values.help) {
    console.log(USAGE);
    return EXIT_OK;
  }
  const recordsPath = resolve(values.records);
  const records = loadRecords(recordsPath).records.map((located) => located.record);
  const plan = await planRequirements({ root: dirname(recordsPath), records, paths: [...FEATURE_PATHS], imports: [...STEP_IMPORTS], tags: values.tags });
  if (plan.requirements.length === 0) {
    throw new UsageError(`--tags "${values.tags}" selects no scenario of any requirement in ${values.records}`);
  }
  console.log(values.json ? JSON.stringify({ ...plan, summary: summary(plan) }, null, 2) : formatPlan(plan));
  return plan.requirements.every((r) => r.defined) ? EXIT_OK : EXIT_FINDINGS;
}

export function summary(plan: Plan): { requirements: number; defined: number; undefinedTexts: number; ambiguousTexts: number } {
  return {
    requirements: plan.requirements.length,
    defined: plan.requirements.filter((r) => r.defined).length,
    undefinedTexts: plan.undefinedTexts,
    ambiguousTexts: plan.ambiguousTexts,
  };
}

export function formatPlan(plan: Plan): string {
  const lines = plan.requirements.flatMap(formatRequirement);
  const { requirements, defined, undefinedTexts, ambiguousTexts } = summary(plan);
  lines.push(
    '',
    `${defined} of ${requirements} requirements fully defined; ${plural(undefinedTexts, 'step text')} undefined, ${plural(ambiguousTexts, 'step text')} ambiguous`,
  );
  return lines.join('\n');
}

function formatRequirement(r: RequirementPlan): string[] {
  const heading = `${r.id}  ${r.title} (${r.feature})`;
  if (r.scenarios === 0) return [`${heading}: no scenario`];
  const state = r.defined ? 'defined' : [gapCount(r.undefined, 'undefined'), gapCount(r.ambiguous, 'ambiguous')].filter((s) => s !== '').join(', ');
  const lines = [`${heading}: ${state}; ${plural(r.scenarios, 'scenario')}, ${plural(r.steps, 'step')}`];
  for (const file of r.files) lines.push(`    ${file}`);
  for (const gap of r.undefined) lines.push(`    undefined: "${gap.text}" (${where(gap)})`);
  for (const gap of r.ambiguous) lines.push(`    ambiguous: "${gap.text}" (${where(gap)}) matches ${gap.definitions.map((d) => `${d.uri}:${d.line}`).join(', ')}`);
  return lines;
}

function gapCount(gaps: readonly StepGap[], word: string): string {
  return gaps.length === 0 ? '' : `${plural(gaps.length, 'step text')} ${word}`;
}

function where(gap: StepGap): string {
  return `${gap.uri}:${gap.line}${gap.occurrences > 1 ? `, ${gap.occurrences} steps` : ''}`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
