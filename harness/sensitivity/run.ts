/**
 * The sensitivity run: proof that every check can fail.
 *
 * For each selected requirement it first runs the feature without a fault
 * (the baseline must pass, or detection means nothing), then once per fault
 * recipe with that fault applied, and counts the fault as detected only when
 * the requirement comes out `failed`. A requirement that passes its baseline
 * but has no fault recipe is listed as unproven.
 */
import { join } from 'node:path';
import type { LocatedRecord, RequirementRecord } from '../catalog/types.ts';
import { InputError } from '../errors.ts';
import { classifyRun, type Status } from '../report/classify.ts';
import type { Detection, SensitivityResult } from '../report/conformance-json.ts';
import { readMessages } from '../report/messages.ts';
import { type JsonObject, runFeatures } from '../run/cucumber.ts';

export interface SensitivityOptions {
  root: string;
  recordsFile: string;
  records: LocatedRecord[];
  /** Names the fault registry knows; a record naming another is an input error. */
  knownFaults: Set<string>;
  /** Base world parameters (adapters, root); the fault is added per run. */
  worldParameters: JsonObject;
  imports: string[];
  parallel: number;
  workDir: string;
  /**
   * Message stream of a run of the same code that already covered these
   * requirements (the main conformance run); its results serve as the
   * baseline instead of running every feature a second time.
   */
  baselineMessages?: string;
  /** Called after each run, for progress output. */
  onResult?: (line: string) => void;
}

export interface RequirementSensitivity {
  id: string;
  section: string;
  baseline: Status;
  faults: { fault: string; status: Status; detected: boolean }[];
  /** Every fault detected on a passing baseline. */
  proven: boolean;
}

export interface SensitivityOutcome {
  requirements: RequirementSensitivity[];
  /** Passed their baseline but have no fault recipe: green without proof that they can fail. */
  unproven: string[];
  /** Selected requirements with no fault recipe and no passing baseline. */
  withoutRecipe: string[];
  /** Requirements with fault recipes whose baseline did not pass: their faults prove nothing and are not counted. */
  notRun: string[];
  result: SensitivityResult;
}

function validateFaults(options: SensitivityOptions): void {
  for (const { record, line } of options.records) {
    for (const fault of record.faults ?? []) {
      if (!options.knownFaults.has(fault.name)) {
        throw new InputError(options.recordsFile, line, `record ${record.id} names fault "${fault.name}", which the fault registry does not know`, 'use a fault name from harness/faults/registry.ts');
      }
    }
  }
}

function statusesIn(messagesFile: string, records: RequirementRecord[]): Map<string, Status> {
  const classification = classifyRun(readMessages(messagesFile), records);
  return new Map(classification.requirements.map((requirement) => [requirement.id, requirement.status]));
}

async function statusesOf(options: SensitivityOptions, records: RequirementRecord[], name: string, fault?: string): Promise<Map<string, Status>> {
  const messagesFile = join(options.workDir, `${name}.ndjson`);
  await runFeatures({
    cwd: options.root,
    paths: records.map((record) => record.feature),
    imports: options.imports,
    parallel: options.parallel,
    worldParameters: { ...options.worldParameters, ...(fault ? { fault } : {}) },
    messagesFile,
    progress: 'none',
    // Under a fault one failing scenario decides the outcome: the rest need not run.
    failFast: fault !== undefined,
  });
  return statusesIn(messagesFile, records);
}

export async function runSensitivity(options: SensitivityOptions): Promise<SensitivityOutcome> {
  validateFaults(options);
  const records = options.records.map((located) => located.record);
  const baseline =
    records.length === 0 ? new Map<string, Status>() : options.baselineMessages !== undefined ? statusesIn(options.baselineMessages, records) : await statusesOf(options, records, 'baseline');
  const requirements: RequirementSensitivity[] = [];
  const unproven: string[] = [];
  const withoutRecipe: string[] = [];

  for (const record of records) {
    const base = baseline.get(record.id) ?? 'undetermined';
    const recipes = record.faults ?? [];
    if (recipes.length === 0) {
      (base === 'passed' ? unproven : withoutRecipe).push(record.id);
      continue;
    }
    const faults: RequirementSensitivity['faults'] = [];
    for (const recipe of recipes) {
      // Without a passing baseline a failure under the fault proves nothing, so the fault run is not counted.
      const status = base === 'passed' ? ((await statusesOf(options, [record], `${record.id}-${recipe.name.replace(/\W/g, '-')}`, recipe.name)).get(record.id) ?? 'undetermined') : 'undetermined';
      faults.push({ fault: recipe.name, status, detected: base === 'passed' && status === 'failed' });
      options.onResult?.(`${record.id} ${recipe.name}: ${base !== 'passed' ? `not run (baseline ${base})` : status === 'failed' ? 'detected' : `NOT detected (feature ${status} under the fault)`}`);
    }
    requirements.push({ id: record.id, section: record.section, baseline: base, faults, proven: base === 'passed' && faults.every((f) => f.detected) });
  }
  const notRun = requirements.filter((r) => r.baseline !== 'passed').map((r) => r.id);
  return { requirements, unproven, withoutRecipe, notRun, result: summarize(requirements) };
}

function summarize(requirements: RequirementSensitivity[]): SensitivityResult {
  const total: Detection = { detected: 0, total: 0 };
  const perSection: Record<string, Detection> = {};
  const results: SensitivityResult['results'] = [];
  for (const requirement of requirements) {
    for (const fault of requirement.faults) {
      const detail = requirement.baseline !== 'passed' ? `baseline ${requirement.baseline}: fault not run` : `feature ${fault.status} under the fault`;
      results.push({ id: requirement.id, fault: fault.fault, detected: fault.detected, detail });
    }
    // Only a requirement that passed without faults can show that its faults are noticed.
    if (requirement.baseline !== 'passed') continue;
    const section = perSection[requirement.section] ?? { detected: 0, total: 0 };
    perSection[requirement.section] = section;
    section.total += 1;
    total.total += 1;
    if (requirement.proven) {
      section.detected += 1;
      total.detected += 1;
    }
  }
  return { total, perSection, results };
}
