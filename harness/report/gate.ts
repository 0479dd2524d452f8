/**
 * `synchro-conformance gate`: the release gate. Reads conformance.json and
 * exits 0 only when every selected requirement passed. Undetermined and
 * not-applicable requirements block the gate just as failed ones do: a
 * release is gated on what was shown to hold, not on what was not disproved.
 * The one exception is a requirement about an implementation form the
 * implementation does not declare (a pgrx extension, a PostgreSQL extension,
 * a React Native binding: harness/adapters/forms.ts): it is outside the
 * implementation, so in every profile it is listed and not counted.
 *
 * The gate trusts no verdict in the file: it recomputes each scenario's and
 * requirement's status from the steps and evidence the report keeps, with the
 * classifier's rules, and refuses a report whose stated verdicts disagree.
 * Problems with the run as a whole (cut short, a failed run hook, scenarios no
 * requirement counts) block it too unless --allow-run-problems is given.
 */
import { readFileSync } from 'node:fs';
import type { Profile } from '../catalog/types.ts';
import { parseCommandLine } from '../cli-args.ts';
import { EXIT_FINDINGS, EXIT_OK, InputError, UsageError } from '../errors.ts';
import type { NotSelected, RunProblem } from './classify.ts';
import type { ConformanceReport, ReportRequirement, SensitivityResult } from './conformance-json.ts';
import { PROFILES, validateReport } from './conformance-json.ts';
import { onlyForms } from '../adapters/forms.ts';
import { describeContradiction, recomputeReport, runProblems, type Verdict } from './recompute.ts';

export const USAGE = `gate --profile server|client|full [--report reports/conformance.json]
     [--ids SYNC-A-001,SYNC-B-002] [--section "<section name>"] [--allow-run-problems]
     [--require-sensitivity [--sensitivity reports/sensitivity.json]]
  Exits 0 only when every requirement of the profile (narrowed by --ids and
  --section) passed; otherwise lists each blocking requirement and exits 1.
  In every profile, a requirement that is not-applicable only because it is
  about an implementation form the adapter config does not declare ("forms":
  pgrx-extension, postgresql-extension, react-native-binding) is listed and
  not counted; any other not-applicable requirement blocks.
  Statuses are recomputed from the scenarios in the report; a report whose
  stated statuses disagree with them is refused (exit 1). Run-level problems
  (an incomplete run, a failed run hook, scenarios no requirement counts)
  block the gate unless --allow-run-problems turns them into warnings.
  --require-sensitivity also requires, for every selected requirement, that
  each of its Rules was proven by the sensitivity run (a fault recipe per
  Rule, each caught by a Then step of that Rule).`;

const OPTIONS = {
  profile: { type: 'string' },
  report: { type: 'string', default: 'reports/conformance.json' },
  ids: { type: 'string' },
  section: { type: 'string' },
  'allow-run-problems': { type: 'boolean', default: false },
  'require-sensitivity': { type: 'boolean', default: false },
  sensitivity: { type: 'string', default: 'reports/sensitivity.json' },
  help: { type: 'boolean', default: false },
} as const;

const REGENERATE = 'pass the conformance.json written by `synchro-conformance run` or `synchro-conformance report`';

/** Reads and validates a conformance report; any problem is an InputError naming the file. */
export function readReport(file: string): ConformanceReport {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(file, undefined, `cannot read the report (${(error as Error).message})`, `${REGENERATE}, or run the suite first`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    throw new InputError(file, jsonErrorLine(text, message), `not valid JSON (${message})`, REGENERATE);
  }
  const problems = validateReport(value);
  if (problems.length > 0) {
    const shown = problems.slice(0, 5).join('; ');
    throw new InputError(file, undefined, `not a conformance report: ${shown}${problems.length > 5 ? ` (and ${problems.length - 5} more)` : ''}`, REGENERATE);
  }
  return value as ConformanceReport;
}

/** Line of a JSON.parse error, from the position V8 puts in its message. */
function jsonErrorLine(text: string, message: string): number | undefined {
  const line = /line (\d+)/.exec(message);
  if (line?.[1] !== undefined) return Number(line[1]);
  const position = /position (\d+)/.exec(message);
  if (position?.[1] === undefined) {
    // A truncated file ends too early: the problem is at its last line.
    return /end of JSON input/.test(message) ? Math.max(1, text.trimEnd().split('\n').length) : undefined;
  }
  return text.slice(0, Number(position[1])).split('\n').length;
}

export interface Selection {
  profile: Profile;
  ids?: string[] | undefined;
  section?: string | undefined;
}

/**
 * Requirements of the profile, narrowed by the optional id list and section,
 * split into those the run selected and those its --tags or --profile left
 * out (which block the gate: nothing was shown of them). Unknown ids or
 * sections are input errors.
 */
export function selectRequirements(report: ConformanceReport, file: string, selection: Selection): { selected: ReportRequirement[]; notRun: NotSelected[] } {
  const notSelected = report.not_selected ?? [];
  const known = new Set([...report.requirements, ...notSelected].map((r) => r.id));
  const unknownIds = (selection.ids ?? []).filter((id) => !known.has(id));
  if (unknownIds.length > 0) {
    throw new InputError(file, undefined, `no requirement ${unknownIds.join(', ')} in the report`, 'check the ids given to --ids against invariants.yaml');
  }
  const sections = new Set([...report.requirements, ...notSelected].map((r) => r.section));
  if (selection.section !== undefined && !sections.has(selection.section)) {
    throw new InputError(file, undefined, `no section "${selection.section}" in the report`, `use one of: ${[...sections].map((s) => `"${s}"`).join(', ')}`);
  }
  const wanted = (r: { id: string; section: string; profiles: readonly Profile[] }) =>
    r.profiles.includes(selection.profile) && (selection.ids === undefined || selection.ids.includes(r.id)) && (selection.section === undefined || r.section === selection.section);
  const selected = report.requirements.filter(wanted);
  const notRun = notSelected.filter(wanted);
  if (selected.length + notRun.length === 0) {
    // An empty selection would pass vacuously; a gate that checks nothing must not open.
    throw new InputError(file, undefined, `no requirement of profile ${selection.profile} matches the selection`, 'widen --ids or --section, or pick the profile the requirements belong to');
  }
  return { selected, notRun };
}

/**
 * Whether a requirement is outside the implementation: not-applicable, and
 * every scenario not-applicable only for implementation forms the adapters
 * do not declare. (A requirement with only some such scenarios is judged on
 * the others: see requirementVerdict.)
 */
export function outsideForm(requirement: ReportRequirement, verdict: Verdict | undefined): boolean {
  if (verdict?.status !== 'not-applicable' || requirement.scenarios.length === 0) return false;
  return requirement.scenarios.every((scenario) => scenario.status === 'not-applicable' && onlyForms(scenario.capabilities));
}

export function describeBlocker(r: ReportRequirement, verdict: Verdict = r): string {
  return `  ${r.id}  ${r.title}\n      ${verdict.status}: ${verdict.reason ?? 'no reason given'}`;
}

export function describeProblem(problem: RunProblem): string {
  const where = problem.uri === null ? '' : `${problem.uri}${problem.line === null ? '' : `:${problem.line}`}: `;
  return `[${problem.kind}] ${where}${problem.message}`;
}

function parseProfile(value: string | undefined): Profile {
  if (value === undefined) throw new UsageError(`--profile is required\n${USAGE}`);
  const profile = PROFILES.find((p) => p === value);
  if (profile === undefined) throw new UsageError(`--profile must be server, client or full, not "${value}"\n${USAGE}`);
  return profile;
}

function parseIds(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const ids = value
    .split(',')
    .map((id) => id.trim())
    .filter((id) => id !== '');
  if (ids.length === 0) throw new UsageError(`--ids needs at least one requirement id\n${USAGE}`);
  return ids;
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseCommandLine({ args, options: OPTIONS, allowPositionals: false }, USAGE);
  if (values.help) {
    console.log(USAGE);
    return EXIT_OK;
  }
  const profile = parseProfile(values.profile);
  const ids = parseIds(values.ids);
  const report = readReport(values.report);
  const { selected, notRun } = selectRequirements(report, values.report, { profile, ids, section: values.section });

  const scope = [`profile ${profile}`, values.section ? `section "${values.section}"` : '', ids ? `ids ${ids.join(', ')}` : '']
    .filter((s) => s !== '')
    .join(', ');

  // A report that contradicts its own evidence decides nothing: refuse it before judging any requirement.
  const { verdicts, contradictions } = recomputeReport(report);
  if (contradictions.length > 0) {
    const requirements = new Set(contradictions.map((c) => c.requirement)).size;
    console.log(`gate refused: ${values.report} states verdicts its own evidence does not support (${requirements === 1 ? '1 requirement' : `${requirements} requirements`}); it was edited or not written by this harness. Run the suite again, or render the report again from its message stream with \`synchro-conformance report\``);
    for (const contradiction of contradictions) console.log(describeContradiction(contradiction));
    return EXIT_FINDINGS;
  }

  // Requirements about a form the implementation is not built as are listed, never counted.
  const outside = selected.filter((r) => outsideForm(r, verdicts.get(r.id)));
  const counted = selected.filter((r) => !outside.includes(r));
  if (outside.length > 0) {
    console.log(`not counted: ${outside.length} requirement${outside.length === 1 ? ' is' : 's are'} about an implementation form the adapters do not declare`);
    for (const r of outside) console.log(`  ${r.id}  ${r.title}\n      ${verdicts.get(r.id)?.reason ?? 'not applicable to this implementation'}`);
  }
  const unproven = values['require-sensitivity'] ? sensitivityBlockers(readSensitivity(values.sensitivity), counted) : [];
  const problems = runProblems(report);
  const allowProblems = values['allow-run-problems'];
  if (allowProblems) for (const problem of problems) console.error(`warning: ${describeProblem(problem)}`);
  const blockingProblems = allowProblems ? [] : problems;
  const blockers = counted.filter((r) => verdicts.get(r.id)?.status !== 'passed');
  const total = counted.length + notRun.length;
  if (unproven.length > 0) {
    console.log(`gate blocked: ${unproven.length} selected requirement${unproven.length === 1 ? ' is' : 's are'} not proven by the sensitivity run (${values.sensitivity})`);
    for (const line of unproven) console.log(line);
  }
  if (total === 0) {
    console.log(`gate blocked: every selected requirement of ${scope} is about an implementation form the adapters do not declare, so nothing was shown`);
    return EXIT_FINDINGS;
  }
  if (blockers.length === 0 && notRun.length === 0 && blockingProblems.length === 0 && unproven.length === 0) {
    const what = total === 1 ? 'the 1 requirement' : `all ${total} requirements`;
    const allowed = problems.length === 0 ? '' : ` (${problems.length === 1 ? '1 run problem' : `${problems.length} run problems`} allowed by --allow-run-problems)`;
    console.log(`gate passed: ${what} of ${scope} passed${allowed}`);
    return EXIT_OK;
  }
  if (blockingProblems.length > 0) {
    const count = blockingProblems.length === 1 ? '1 problem' : `${blockingProblems.length} problems`;
    console.log(`gate blocked: the run had ${count}, so its results may be incomplete (--allow-run-problems gates on the requirements alone)`);
    for (const problem of blockingProblems) console.log(`  ${describeProblem(problem)}`);
  }
  if (blockers.length > 0 || notRun.length > 0) {
    console.log(`gate blocked: ${blockers.length + notRun.length} of ${total} requirements of ${scope} did not pass`);
    for (const blocker of blockers) console.log(describeBlocker(blocker, verdicts.get(blocker.id)));
    for (const left of notRun) console.log(`  ${left.id}  ${left.title}\n      not selected: the run's --tags or --profile left it out, so nothing was shown of it`);
  } else if (blockingProblems.length > 0) {
    console.log(`every selected requirement of ${scope} passed, but the run problems above block the gate`);
  }
  return EXIT_FINDINGS;
}

/** Reads the sensitivity run's result file; a missing or malformed one is an input error naming it. */
export function readSensitivity(file: string): SensitivityResult {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new InputError(file, undefined, `cannot read the sensitivity result (${(error as Error).message})`, 'run `synchro-conformance sensitivity` first, or point --sensitivity at the file it wrote');
  }
  const result = value as Partial<SensitivityResult>;
  if (typeof result !== 'object' || result === null || !Array.isArray(result.rules) || typeof result.perRequirement !== 'object' || result.perRequirement === null) {
    throw new InputError(file, undefined, 'not a sensitivity result per rule (no "rules" or "perRequirement")', 'run `synchro-conformance sensitivity` again with this version of the harness');
  }
  return result as SensitivityResult;
}

/** One line per selected requirement whose Rules were not all proven (or that the sensitivity run did not cover). */
export function sensitivityBlockers(result: SensitivityResult, selected: readonly ReportRequirement[]): string[] {
  const lines: string[] = [];
  for (const requirement of selected) {
    const counts = result.perRequirement[requirement.id];
    if (counts === undefined) {
      lines.push(`  ${requirement.id}  not covered by the sensitivity run (it did not pass without faults there, or was not selected)`);
      continue;
    }
    // A Rule without a subject in this implementation (not applicable by form) is not a gap.
    const missing = result.rules.filter((rule) => rule.id === requirement.id && !rule.detected && rule.notApplicable === undefined);
    if (counts.total > 0 && missing.length === 0) continue;
    lines.push(`  ${requirement.id}  ${counts.detected} of ${counts.total} rules proven`);
    for (const rule of missing) lines.push(`      "${rule.rule}": ${rule.recipes === 0 ? 'no fault recipe' : 'a recipe was not caught by a Then step of the rule'}`);
  }
  return lines;
}
