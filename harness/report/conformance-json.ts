/**
 * Builds `conformance.json`: the machine-readable verdict of one run, and the
 * only input of the release gate. The object is validated against
 * `schemas/conformance-report.schema.json` before anything is written, so a
 * report on disk always has the shape the gate and the HTML page expect.
 */
import { readFileSync } from 'node:fs';
import type { Profile } from '../catalog/types.ts';
import { compileProjectSchema, type SchemaCheck } from '../json-schema.ts';
import type { Classification, NotSelected, RequirementOutcome, RunProblem, ScenarioOutcome, Status } from './classify.ts';
import type { MessageIndex } from './messages.ts';
import { toMillis } from './messages.ts';

export const REPORT_FORMAT = 'synchro-conformance-report/1';
export const PROFILES: readonly Profile[] = ['server', 'client', 'full'];

export interface AdapterInfo {
  id: string;
  description: string;
}

/** The implementation under test, as the run was configured. */
export interface ImplementationInfo {
  server: AdapterInfo | null;
  client: AdapterInfo | null;
}

export type Counts = { total: number } & Record<Status, number>;

export interface Detection {
  detected: number;
  total: number;
}

/** Counts are Rules (clauses) of requirements that passed without faults. */
export interface SensitivityResult {
  total: Detection;
  perSection: Record<string, Detection>;
  perRequirement: Record<string, Detection>;
  /**
   * Every Rule of every selected requirement, with how many recipes target it
   * and whether all were detected; `notApplicable` (left out of the counts)
   * says why a Rule has no subject in this implementation (all its scenarios
   * are about an implementation form the adapters do not declare).
   */
  rules: { id: string; rule: string; line: number; recipes: number; detected: boolean; notApplicable?: string }[];
  /** Every recipe run (or not run), with what its run showed. */
  results: { id: string; rule: string; fault: string; outcome: 'detected' | 'missed' | 'broke-setup' | 'not-run'; detected: boolean; detail: string }[];
}

export type ReportScenario = Omit<ScenarioOutcome, 'requirement'>;
export type ReportRequirement = Omit<RequirementOutcome, 'scenarios'> & { scenarios: ReportScenario[] };

export interface ConformanceReport {
  format: typeof REPORT_FORMAT;
  harness: { name: string; version: string };
  implementation: ImplementationInfo;
  catalog: { path: string; sha256: string };
  vector_set_hash: string | null;
  generated_at: string;
  run: {
    cucumber_version: string | null;
    started_at: string | null;
    finished_at: string | null;
    duration_ms: number | null;
    success: boolean | null;
  };
  summary: {
    overall: Counts;
    by_section: { section: string; counts: Counts }[];
    by_profile: Record<Profile, Counts>;
  };
  problems: RunProblem[];
  requirements: ReportRequirement[];
  /** Present when the run's selection left requirements out. */
  not_selected?: NotSelected[];
  sensitivity?: SensitivityResult;
}

export interface BuildInput {
  classification: Classification;
  index: MessageIndex;
  catalog: { path: string; sha256: string };
  implementation: ImplementationInfo;
  vectorSetHash?: string | undefined;
  sensitivity?: SensitivityResult | undefined;
  /** Fixed in tests; the current time otherwise. */
  generatedAt?: Date;
}

export function buildReport(input: BuildInput): ConformanceReport {
  const requirements = input.classification.requirements.map(toReportRequirement);
  const report: ConformanceReport = {
    format: REPORT_FORMAT,
    harness: harnessInfo(),
    implementation: input.implementation,
    catalog: input.catalog,
    vector_set_hash: input.vectorSetHash ?? null,
    generated_at: (input.generatedAt ?? new Date()).toISOString(),
    run: runInfo(input.index),
    summary: summarise(requirements),
    problems: input.classification.problems,
    requirements,
  };
  if (input.classification.notSelected.length > 0) report.not_selected = input.classification.notSelected;
  if (input.sensitivity !== undefined) report.sensitivity = input.sensitivity;
  return report;
}

function toReportRequirement(requirement: RequirementOutcome): ReportRequirement {
  const scenarios = requirement.scenarios.map(({ requirement: _id, ...rest }) => rest);
  return { ...requirement, scenarios };
}

function runInfo(index: MessageIndex): ConformanceReport['run'] {
  const started = index.testRunStarted?.timestamp;
  const finished = index.testRunFinished?.timestamp;
  const iso = (t: { seconds: number; nanos: number } | undefined) =>
    t === undefined ? null : new Date(toMillis(t)).toISOString();
  return {
    cucumber_version: index.meta?.implementation.version ?? null,
    started_at: iso(started),
    finished_at: iso(finished),
    duration_ms: started && finished ? Math.max(0, Math.round(toMillis(finished) - toMillis(started))) : null,
    success: index.testRunFinished?.success ?? null,
  };
}

export function emptyCounts(): Counts {
  return { total: 0, passed: 0, failed: 0, undetermined: 0, 'not-applicable': 0 };
}

export function countStatuses(requirements: readonly { status: Status }[]): Counts {
  const counts = emptyCounts();
  for (const r of requirements) {
    counts.total += 1;
    counts[r.status] += 1;
  }
  return counts;
}

function summarise(requirements: readonly ReportRequirement[]): ConformanceReport['summary'] {
  const sections: string[] = [];
  for (const r of requirements) if (!sections.includes(r.section)) sections.push(r.section);
  return {
    overall: countStatuses(requirements),
    by_section: sections.map((section) => ({
      section,
      counts: countStatuses(requirements.filter((r) => r.section === section)),
    })),
    by_profile: {
      server: countStatuses(requirements.filter((r) => r.profiles.includes('server'))),
      client: countStatuses(requirements.filter((r) => r.profiles.includes('client'))),
      full: countStatuses(requirements.filter((r) => r.profiles.includes('full'))),
    },
  };
}

let cachedHarness: { name: string; version: string } | undefined;

/** Name and version of this harness, from its package.json. */
export function harnessInfo(): { name: string; version: string } {
  if (cachedHarness === undefined) {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      name?: unknown;
      version?: unknown;
    };
    cachedHarness = {
      name: typeof pkg.name === 'string' ? pkg.name : 'synchro-conformance',
      version: typeof pkg.version === 'string' ? pkg.version : '0.0.0',
    };
  }
  return cachedHarness;
}


let reportValidator: SchemaCheck | undefined;

/** Checks a value against the report schema; returns readable problems, empty when valid. */
export function validateReport(value: unknown): string[] {
  reportValidator ??= compileProjectSchema('conformance-report.schema.json');
  return reportValidator(value).map((p) => `${p.pointer === '' ? '(top level)' : p.pointer}: ${p.message}`);
}

/** Validates, then serialises with a trailing newline; a report that breaks its schema is never written. */
export function renderReportJson(report: ConformanceReport): string {
  const problems = validateReport(report);
  if (problems.length > 0) {
    throw new Error(`conformance report does not match its schema:\n  ${problems.slice(0, 20).join('\n  ')}`);
  }
  return `${JSON.stringify(report, null, 2)}\n`;
}
