/**
 * The sensitivity run: proof, clause by clause, that every check can fail.
 *
 * Each Rule of a feature is one MUST or MUST NOT clause, and each fault recipe
 * in invariants.yaml names the Rule whose clause it breaks. For a requirement
 * that passed without faults, every recipe runs only the scenarios of its
 * Rule with the fault switched on, and counts as detected only when a Then
 * step of that Rule fails: a failure in a Given or When step or in a hook
 * shows the fault broke the set-up, not that the clause's check noticed it.
 * The run of a recipe stops at its first detection.
 *
 * A Rule is detected when it has at least one recipe and every one of its
 * recipes is detected; a Rule of a passed requirement without a recipe is a
 * finding (nothing shows its checks can fail). A Rule whose every scenario
 * the baseline reported not-applicable for an implementation form the
 * adapters do not declare (decision 239) has no subject in this
 * implementation: no fault can be noticed there, so it is reported as not
 * applicable and left out of the counts, like such scenarios are left out of
 * the requirement's verdict. One applicable scenario is enough to hold the
 * Rule to a detecting recipe.
 */
import { join } from 'node:path';
import { onlyForms } from '../adapters/forms.ts';
import { type FeatureRule, readFeature } from '../catalog/features.ts';
import type { LocatedRecord, RequirementRecord } from '../catalog/types.ts';
import { InputError } from '../errors.ts';
import { classifyRun, type ScenarioVerdictInput, type Status } from '../report/classify.ts';
import type { Detection, SensitivityResult } from '../report/conformance-json.ts';
import { readMessages } from '../report/messages.ts';
import { type JsonObject, runFeatures } from '../run/cucumber.ts';
import { withPreparedParameters } from '../run/session.ts';
import { runJobs } from './pool.ts';
import type { RecipeContext, RecipeJob, RecipeResult } from './recipe.ts';

export type { RecipeOutcome, RecipeResult } from './recipe.ts';

export interface SensitivityOptions {
  root: string;
  recordsFile: string;
  records: LocatedRecord[];
  /** Names the fault registry knows; a record naming another is an input error. */
  knownFaults: Set<string>;
  /** Base world parameters (adapters, root); the fault is added per run. */
  worldParameters: JsonObject;
  imports: string[];
  /** Fault runs at once, each in a worker thread of its own (1: one after another in this thread); also the baseline run's Cucumber workers. */
  parallel: number;
  workDir: string;
  /**
   * Message stream of a run of the same code that already covered these
   * requirements (the main conformance run); its results serve as the
   * baseline instead of running every feature a second time.
   */
  baselineMessages?: string;
  /** Called after each recipe, for progress output. */
  onResult?: (line: string) => void;
}

export interface RuleSensitivity {
  requirement: string;
  section: string;
  rule: string;
  /** Line of the `Rule:` keyword in the feature. */
  line: number;
  recipes: RecipeResult[];
  /** At least one recipe, and every recipe detected. */
  detected: boolean;
  /** Why the Rule has no subject in this implementation (every scenario not-applicable by an undeclared form), or null. */
  notApplicable: string | null;
}

export interface RequirementSensitivity {
  id: string;
  section: string;
  baseline: Status;
  rules: RuleSensitivity[];
  /** Every Rule detected, or not applicable by form, on a passing baseline. */
  proven: boolean;
}

export interface SensitivityOutcome {
  requirements: RequirementSensitivity[];
  /** Passed their baseline with at least one applicable Rule lacking a recipe: green without proof that those clauses can fail. */
  unproven: string[];
  /** Selected requirements with no fault recipe and no passing baseline. */
  withoutRecipe: string[];
  /** Requirements with fault recipes whose baseline did not pass: their faults prove nothing and are not run. */
  notRun: string[];
  result: SensitivityResult;
}

function validateFaults(options: SensitivityOptions, rulesOf: (record: RequirementRecord) => FeatureRule[]): void {
  for (const { record, line } of options.records) {
    const titles = new Set(rulesOf(record).map((rule) => rule.title));
    for (const fault of record.faults ?? []) {
      if (!options.knownFaults.has(fault.name)) {
        throw new InputError(options.recordsFile, line, `record ${record.id} names fault "${fault.name}", which the fault registry does not know`, 'use a fault name from harness/faults/registry.ts or a switch marked in reference/');
      }
      if (!titles.has(fault.rule)) {
        throw new InputError(options.recordsFile, line, `record ${record.id}: fault ${fault.name} targets the rule "${fault.rule}", which ${record.feature} does not have`, 'copy the title of the Rule the fault breaks exactly as the feature writes it after "Rule:"');
      }
    }
  }
}

/** A requirement's fault-free verdict, with its scenarios' verdicts to tell which Rules have a subject. */
interface Baseline {
  status: Status;
  scenarios: readonly ScenarioVerdictInput[];
}

function baselinesIn(messagesFile: string, records: RequirementRecord[]): Map<string, Baseline> {
  const classification = classifyRun(readMessages(messagesFile), records);
  return new Map(classification.requirements.map((requirement) => [requirement.id, { status: requirement.status, scenarios: requirement.scenarios }]));
}

/**
 * Why a Rule has no subject in this implementation, or null: every scenario
 * of the Rule that the baseline ran was not-applicable for implementation
 * forms the adapters do not declare. A scenario belongs to the Rule whose
 * `Rule:` line is the last one before it (an Examples row lies below its
 * outline, inside the same Rule).
 */
export function formOnlyRule(rule: FeatureRule, rules: readonly FeatureRule[], feature: string, scenarios: readonly ScenarioVerdictInput[]): string | null {
  const next = rules.map((other) => other.line).filter((line) => line > rule.line);
  const end = next.length === 0 ? Number.POSITIVE_INFINITY : Math.min(...next);
  const own = scenarios.filter((scenario) => scenario.uri === feature && scenario.line > rule.line && scenario.line < end);
  if (own.length === 0 || !own.every((scenario) => scenario.status === 'not-applicable' && onlyForms(scenario.capabilities))) return null;
  const forms = [...new Set(own.flatMap((scenario) => scenario.capabilities))].join(', ');
  return `every scenario of the rule is about an implementation form the adapters do not declare (${forms})`;
}

export async function runSensitivity(options: SensitivityOptions): Promise<SensitivityOutcome> {
  const rulesByFeature = new Map<string, FeatureRule[]>();
  const rulesOf = (record: RequirementRecord): FeatureRule[] => {
    let rules = rulesByFeature.get(record.feature);
    if (rules === undefined) {
      const read = readFeature(options.root, record.feature);
      if (!read.ok) throw new InputError(record.feature, read.error.line, `the feature of ${record.id} is not valid Gherkin: ${read.error.message}`, 'run "synchro-conformance catalog check" and correct the feature');
      rules = read.feature.rules;
      rulesByFeature.set(record.feature, rules);
    }
    return rules;
  };
  validateFaults(options, rulesOf);
  const records = options.records.map((located) => located.record);
  const baseline = records.length === 0 ? new Map<string, Baseline>() : options.baselineMessages !== undefined ? baselinesIn(options.baselineMessages, records) : await baselineRun(options, records);
  const requirements: RequirementSensitivity[] = [];
  const unproven: string[] = [];
  const withoutRecipe: string[] = [];

  // Every fault run to do, in report order; they may finish in any order.
  type Planned = { record: RequirementRecord; base: Status; rules: { rule: FeatureRule; notApplicable: string | null; recipes: { name: string; job?: number }[] }[] };
  const planned: Planned[] = [];
  const jobs: RecipeJob[] = [];
  for (const record of records) {
    const base = baseline.get(record.id)?.status ?? 'undetermined';
    const scenarios = baseline.get(record.id)?.scenarios ?? [];
    const recipes = record.faults ?? [];
    if (recipes.length === 0 && base !== 'passed') {
      withoutRecipe.push(record.id);
      continue;
    }
    const featureRules = rulesOf(record);
    const rules = featureRules.map((rule) => {
      const notApplicable = base === 'passed' ? formOnlyRule(rule, featureRules, record.feature, scenarios) : null;
      return {
        rule,
        notApplicable,
        recipes: recipes
          .filter((recipe) => recipe.rule === rule.title)
          // Without a passing baseline a failure under the fault proves nothing, and a Rule without a subject here has nothing to fail: the fault is not run.
          .map((recipe) => ({ name: recipe.name, ...(base === 'passed' && notApplicable === null ? { job: jobs.push({ requirement: record.id, feature: record.feature, ruleLine: rule.line, scenarioLines: rule.scenarioLines, fault: recipe.name }) - 1 } : {}) })),
      };
    });
    planned.push({ record, base, rules });
  }
  const describe = (id: string, rule: string, fault: string, result: RecipeResult) =>
    `${id} rule "${rule}" ${fault}: ${result.outcome === 'detected' ? 'detected' : result.outcome === 'not-run' ? result.detail : `NOT detected (${result.detail})`}`;
  const results = await withSession(options, (context) =>
    runJobs(context, jobs, options.parallel, (index, result) => {
      const job = jobs[index] as RecipeJob;
      const rule = rulesOf(records.find((record) => record.id === job.requirement) as RequirementRecord).find((r) => r.line === job.ruleLine);
      options.onResult?.(describe(job.requirement, rule?.title ?? `line ${job.ruleLine}`, job.fault, result));
    }),
  );

  for (const { record, base, rules: plannedRules } of planned) {
    const rules: RuleSensitivity[] = [];
    for (const { rule, notApplicable, recipes } of plannedRules) {
      const notRunDetail = base !== 'passed' ? `baseline ${base}: fault not run` : `not applicable: ${notApplicable}; fault not run`;
      const outcomes: RecipeResult[] = recipes.map((recipe) => (recipe.job === undefined ? { fault: recipe.name, outcome: 'not-run' as const, detail: notRunDetail } : (results[recipe.job] as RecipeResult)));
      for (const outcome of outcomes) if (outcome.outcome === 'not-run') options.onResult?.(describe(record.id, rule.title, outcome.fault, outcome));
      if (base === 'passed' && notApplicable !== null) options.onResult?.(`${record.id} rule "${rule.title}": not applicable (${notApplicable})`);
      else if (outcomes.length === 0 && base === 'passed') options.onResult?.(`${record.id} rule "${rule.title}": NO fault recipe`);
      rules.push({ requirement: record.id, section: record.section, rule: rule.title, line: rule.line, recipes: outcomes, detected: notApplicable === null && outcomes.length > 0 && outcomes.every((r) => r.outcome === 'detected'), notApplicable });
    }
    const applicable = rules.filter((rule) => rule.notApplicable === null);
    const proven = base === 'passed' && applicable.every((rule) => rule.detected);
    if (base === 'passed' && applicable.some((rule) => rule.recipes.length === 0)) unproven.push(record.id);
    requirements.push({ id: record.id, section: record.section, baseline: base, rules, proven });
  }
  const notRun = requirements.filter((r) => r.baseline !== 'passed').map((r) => r.id);
  return { requirements, unproven, withoutRecipe, notRun, result: summarize(requirements) };
}

/**
 * Resolves adapters named by id once for every fault run (the fault runs in
 * worker threads receive the prepared setups, as Cucumber's own workers do),
 * and keeps the session's database cluster up until the last one finished.
 */
async function withSession<T>(options: SensitivityOptions, body: (context: RecipeContext) => Promise<T>): Promise<T> {
  return withPreparedParameters(options.worldParameters, options.root, (worldParameters) => body({ root: options.root, imports: options.imports, workDir: options.workDir, worldParameters }));
}

async function baselineRun(options: SensitivityOptions, records: RequirementRecord[]): Promise<Map<string, Baseline>> {
  const messagesFile = join(options.workDir, 'baseline.ndjson');
  await runFeatures({ cwd: options.root, paths: records.map((record) => record.feature), imports: options.imports, parallel: options.parallel, worldParameters: options.worldParameters, messagesFile, progress: 'none' });
  return baselinesIn(messagesFile, records);
}

function summarize(requirements: RequirementSensitivity[]): SensitivityResult {
  const total: Detection = { detected: 0, total: 0 };
  const perSection: Record<string, Detection> = {};
  const perRequirement: Record<string, Detection> = {};
  const rules: SensitivityResult['rules'] = [];
  const results: SensitivityResult['results'] = [];
  for (const requirement of requirements) {
    for (const rule of requirement.rules) {
      for (const recipe of rule.recipes) results.push({ id: requirement.id, rule: rule.rule, fault: recipe.fault, outcome: recipe.outcome, detected: recipe.outcome === 'detected', detail: recipe.detail });
      rules.push({ id: requirement.id, rule: rule.rule, line: rule.line, recipes: rule.recipes.length, detected: rule.detected, ...(rule.notApplicable === null ? {} : { notApplicable: rule.notApplicable }) });
    }
    // Only a requirement that passed without faults can show that its faults are noticed.
    if (requirement.baseline !== 'passed') continue;
    const section = perSection[requirement.section] ?? { detected: 0, total: 0 };
    perSection[requirement.section] = section;
    // A Rule without a subject in this implementation is neither detected nor a gap: it is not counted.
    const applicable = requirement.rules.filter((rule) => rule.notApplicable === null);
    const own: Detection = { detected: applicable.filter((rule) => rule.detected).length, total: applicable.length };
    perRequirement[requirement.id] = own;
    for (const counts of [section, total]) {
      counts.detected += own.detected;
      counts.total += own.total;
    }
  }
  return { total, perSection, perRequirement, rules, results };
}
