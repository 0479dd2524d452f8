/**
 * `synchro-conformance gate`: the release gate. Reads conformance.json and
 * exits 0 only when every selected requirement passed. Undetermined and
 * not-applicable requirements block the gate just as failed ones do: a
 * release is gated on what was shown to hold, not on what was not disproved.
 */
import { readFileSync } from 'node:fs';
import type { Profile } from '../catalog/types.ts';
import { parseCommandLine } from '../cli-args.ts';
import { EXIT_FINDINGS, EXIT_OK, InputError, UsageError } from '../errors.ts';
import type { ConformanceReport, ReportRequirement } from './conformance-json.ts';
import { PROFILES, validateReport } from './conformance-json.ts';

export const USAGE = `gate --profile server|client|full [--report reports/conformance.json]
     [--ids SYNC-A-001,SYNC-B-002] [--section "<section name>"]
  Exits 0 only when every requirement of the profile (narrowed by --ids and
  --section) passed; otherwise lists each blocking requirement and exits 1.`;

const OPTIONS = {
  profile: { type: 'string' },
  report: { type: 'string', default: 'reports/conformance.json' },
  ids: { type: 'string' },
  section: { type: 'string' },
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

/** Requirements of the profile, narrowed by the optional id list and section. Unknown ids or sections are input errors. */
export function selectRequirements(report: ConformanceReport, file: string, selection: Selection): ReportRequirement[] {
  const known = new Set(report.requirements.map((r) => r.id));
  const unknownIds = (selection.ids ?? []).filter((id) => !known.has(id));
  if (unknownIds.length > 0) {
    throw new InputError(file, undefined, `no requirement ${unknownIds.join(', ')} in the report`, 'check the ids given to --ids against invariants.yaml');
  }
  const sections = new Set(report.requirements.map((r) => r.section));
  if (selection.section !== undefined && !sections.has(selection.section)) {
    throw new InputError(file, undefined, `no section "${selection.section}" in the report`, `use one of: ${[...sections].map((s) => `"${s}"`).join(', ')}`);
  }
  const selected = report.requirements.filter(
    (r) =>
      r.profiles.includes(selection.profile) &&
      (selection.ids === undefined || selection.ids.includes(r.id)) &&
      (selection.section === undefined || r.section === selection.section),
  );
  if (selected.length === 0) {
    // An empty selection would pass vacuously; a gate that checks nothing must not open.
    throw new InputError(file, undefined, `no requirement of profile ${selection.profile} matches the selection`, 'widen --ids or --section, or pick the profile the requirements belong to');
  }
  return selected;
}

export function describeBlocker(r: ReportRequirement): string {
  return `  ${r.id}  ${r.title}\n      ${r.status}: ${r.reason ?? 'no reason given'}`;
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
  const selected = selectRequirements(report, values.report, { profile, ids, section: values.section });

  for (const problem of report.problems) {
    const where = problem.uri === null ? '' : `${problem.uri}${problem.line === null ? '' : `:${problem.line}`}: `;
    console.error(`warning: ${where}${problem.message}`);
  }
  const scope = [`profile ${profile}`, values.section ? `section "${values.section}"` : '', ids ? `ids ${ids.join(', ')}` : '']
    .filter((s) => s !== '')
    .join(', ');
  const blockers = selected.filter((r) => r.status !== 'passed');
  if (blockers.length === 0) {
    const what = selected.length === 1 ? 'the 1 requirement' : `all ${selected.length} requirements`;
    console.log(`gate passed: ${what} of ${scope} passed`);
    return EXIT_OK;
  }
  console.log(`gate blocked: ${blockers.length} of ${selected.length} requirements of ${scope} did not pass`);
  for (const blocker of blockers) console.log(describeBlocker(blocker));
  return EXIT_FINDINGS;
}
