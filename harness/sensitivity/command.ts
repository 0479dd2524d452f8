/**
 * `synchro-conformance sensitivity [--tags <expression>] [--records invariants.yaml] [--out reports]`
 *
 * Runs, for each selected requirement that passes without faults, each fault
 * recipe against the scenarios of the Rule it targets, and requires a Then
 * step of that Rule to fail; prints detected / total Rules per requirement,
 * per section and in total, writes reports/sensitivity.json and adds the
 * score to the HTML report when the main run's messages are there. Exit
 * status 1 when a recipe went undetected or broke only the set-up, or a Rule
 * of a passed requirement has no recipe.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import parseTagExpression from '@cucumber/tag-expressions';
import { loadRecords } from '../catalog/records.ts';
import { parseCommandLine } from '../cli-args.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError } from '../errors.ts';
import { knownFaultNames } from '../faults/registry.ts';
import { writeAllOrNothing, writeReports } from '../report/write.ts';
import { parallelism, profileTags } from '../run/command.ts';
import { STEP_IMPORTS } from '../run/cucumber.ts';
import { runSensitivity, type SensitivityOutcome } from './run.ts';

export const USAGE = `sensitivity [--tags <expression>] [--profile server|client|full] [--server <adapter>] [--client <adapter>]
    [--parallel N] [--baseline <messages.ndjson>] [--records invariants.yaml] [--out reports]
  Runs each fault recipe of each selected invariant against the scenarios of the Rule it
  targets and requires a Then step of that Rule to fail (a failing Given, When or hook
  counts as "broke setup", not as detected). --parallel N runs N fault runs at once, each
  in a worker thread of its own (default: as for "run", up to 2); a fault run stops at its
  first detection, so its own scenarios run one after another.
  --tags selects invariants by their feature tags (e.g. "@SYNC-PROTO-001 or @SYNC-INTEG-002").
  --baseline takes the fault-free results from the message stream of a run of the same code
  (reports/messages.ndjson after "run") instead of running every feature once more.`;

const OPTIONS = {
  tags: { type: 'string' },
  profile: { type: 'string', default: 'full' },
  server: { type: 'string', default: 'reference' },
  client: { type: 'string', default: 'reference' },
  parallel: { type: 'string' },
  baseline: { type: 'string' },
  records: { type: 'string', default: 'invariants.yaml' },
  out: { type: 'string', default: 'reports' },
  help: { type: 'boolean', default: false },
} as const;

export async function main(args: string[]): Promise<number> {
  const { values } = parseCommandLine({ args, options: OPTIONS }, USAGE);
  if (values.help) {
    console.log(USAGE);
    return EXIT_OK;
  }
  const recordsPath = resolve(values.records);
  const root = dirname(recordsPath);
  const selector = selectRecords(values.profile, values.tags);
  const records = loadRecords(recordsPath).records.filter(({ record }) => selector(featureTags(record)));
  // Fault runs overlap, one per worker thread; each runs its own scenarios one after another.
  const parallel = parallelism(values.parallel, undefined);
  const baselineMessages = values.baseline === undefined ? undefined : resolve(values.baseline);
  if (baselineMessages !== undefined && !existsSync(baselineMessages)) throw new UsageError(`--baseline ${values.baseline}: no such file; run "synchro-conformance run" first or leave --baseline out`);

  const workDir = mkdtempSync(join(tmpdir(), 'synchro-sensitivity-'));
  let outcome: SensitivityOutcome;
  try {
    outcome = await runSensitivity({
      root,
      recordsFile: values.records,
      records,
      knownFaults: knownFaultNames(),
      worldParameters: { server: values.server, client: values.client, root },
      imports: [...STEP_IMPORTS],
      parallel,
      workDir,
      ...(baselineMessages === undefined ? {} : { baselineMessages }),
      onResult: (line) => console.log(line),
    });
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }

  console.log(formatSensitivity(outcome, records.length));
  const outDir = resolve(values.out);
  writeAllOrNothing(outDir, [['sensitivity.json', `${JSON.stringify({ ...outcome.result, unproven: outcome.unproven, without_recipe: outcome.withoutRecipe, not_run: outcome.notRun }, null, 2)}\n`]]);
  rerenderWithSensitivity(outDir, recordsPath, outcome);
  // A requirement whose baseline did not pass is undetermined, not insensitive: the main run reports it.
  const ok = outcome.requirements.every((r) => r.proven || r.baseline !== 'passed');
  return ok ? EXIT_OK : EXIT_FINDINGS;
}

/** Tags a record's feature carries at feature level, for --tags and --profile selection. */
function featureTags(record: { id: string; applies_to: string[]; internal?: boolean }): string[] {
  return [`@${record.id}`, ...record.applies_to.map((who) => `@${who}`), ...(record.internal ? ['@internal'] : [])];
}

function selectRecords(profile: string, tags: string | undefined): (tags: string[]) => boolean {
  const expression = [profileTags(profile), tags ? `(${tags})` : undefined].filter(Boolean).join(' and ');
  if (!expression) return () => true;
  try {
    const node = parseTagExpression(expression);
    return (featureTagList) => node.evaluate(featureTagList);
  } catch (error) {
    throw new UsageError(`--tags is not a valid tag expression: ${(error as Error).message}`);
  }
}

export function formatSensitivity(outcome: SensitivityOutcome, selected: number): string {
  const lines = ['', 'Sensitivity per rule (a rule counts as detected when it has a fault recipe and a Then step of the rule fails under each):'];
  const formOnly = outcome.result.rules.filter((rule) => rule.notApplicable !== undefined && outcome.result.perRequirement[rule.id] !== undefined);
  for (const [id, detection] of Object.entries(outcome.result.perRequirement)) {
    const outside = formOnly.filter((rule) => rule.id === id).length;
    lines.push(`  ${id}: ${detection.detected} of ${detection.total} rules detected${outside === 0 ? '' : ` (${outside} not applicable by form, not counted)`}`);
  }
  for (const [section, detection] of Object.entries(outcome.result.perSection)) lines.push(`  ${section}: ${detection.detected} of ${detection.total} rules detected`);
  const { detected, total } = outcome.result.total;
  const requirements = outcome.requirements.filter((r) => r.baseline === 'passed');
  lines.push(`  total: ${detected} of ${total} rules detected, over ${requirements.length} requirements that passed without faults (${requirements.filter((r) => r.proven).length} with every rule detected; ${selected} selected)`);
  const undetected = outcome.result.rules.filter((rule) => !rule.detected && rule.notApplicable === undefined && outcome.result.perRequirement[rule.id] !== undefined);
  if (undetected.length > 0) {
    lines.push('  rules not proven:');
    for (const rule of undetected) lines.push(`    ${rule.id} "${rule.rule}": ${rule.recipes === 0 ? 'no fault recipe' : 'a recipe was not detected by a Then step of the rule'}`);
  }
  if (formOnly.length > 0) {
    lines.push('  rules not applicable to this implementation (not counted):');
    for (const rule of formOnly) lines.push(`    ${rule.id} "${rule.rule}": ${rule.notApplicable}`);
  }
  if (outcome.notRun.length > 0) lines.push(`  faults not run because the requirement did not pass without them: ${outcome.notRun.join(', ')}`);
  return lines.join('\n');
}

/** Adds the score to the HTML report of the last main run, when its messages are there. */
function rerenderWithSensitivity(outDir: string, recordsPath: string, outcome: SensitivityOutcome): void {
  const messagesFile = join(outDir, 'messages.ndjson');
  const previous = join(outDir, 'conformance.json');
  if (!existsSync(messagesFile) || !existsSync(previous)) return;
  const recordsFile = loadRecords(recordsPath);
  const report = JSON.parse(readFileSync(previous, 'utf8')) as { implementation: Parameters<typeof writeReports>[0]['implementation']; vector_set_hash: string | null };
  writeReports({
    messagesFile,
    records: recordsFile.records.map((located) => located.record),
    catalogFile: recordsFile.catalog,
    implementation: report.implementation,
    vectorSetHash: report.vector_set_hash ?? undefined,
    sensitivity: outcome.result,
    outDir,
  });
}
