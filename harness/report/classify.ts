/**
 * Turns Cucumber results into requirement verdicts.
 *
 * The rule is deliberately one-sided: a requirement is `passed` only when
 * every one of its scenarios ran, every step passed and at least one
 * assertion executed. Anything the run could not establish is `undetermined`
 * (never quietly passed), and a missing adapter capability is
 * `not-applicable` with the capability named.
 */
import { FORM_EVIDENCE_PREFIX, onlyForms } from '../adapters/forms.ts';
import type { Pickle, TestStep, TestStepResult } from '@cucumber/messages';
import type { Applicability, Profile, RequirementRecord } from '../catalog/types.ts';
import {
  ASSERTIONS_MEDIA_TYPE,
  NOT_APPLICABLE_MEDIA_TYPE,
  parseAssertions,
  parseNotApplicable,
  parseUndetermined,
  UNDETERMINED_MEDIA_TYPE,
} from './evidence.ts';
import type { MessageIndex } from './messages.ts';
import { toMillis } from './messages.ts';

export type Status = 'passed' | 'failed' | 'undetermined' | 'not-applicable';
export const STATUSES: readonly Status[] = ['passed', 'failed', 'undetermined', 'not-applicable'];

/** Cucumber's step statuses in lower case. */
export type StepStatus = 'passed' | 'failed' | 'skipped' | 'pending' | 'undefined' | 'ambiguous' | 'unknown';

export interface StepOutcome {
  kind: 'step' | 'hook';
  keyword: string;
  text: string;
  status: StepStatus;
  duration_ms: number;
  error: string | null;
}

export interface ScenarioOutcome {
  /** The requirement id from the scenario's tag, or null when it carries none. */
  requirement: string | null;
  name: string;
  uri: string;
  line: number;
  tags: string[];
  status: Status;
  reason: string | null;
  /** Capabilities the adapter lacks, for a not-applicable scenario. */
  capabilities: string[];
  /** Assertions executed in the last attempt, or null when none were reported. */
  assertions: number | null;
  /** Then steps of the last attempt that passed without executing an assertion. */
  unasserted_steps: string[];
  attempts: number;
  steps: StepOutcome[];
}

export interface RequirementOutcome {
  id: string;
  title: string;
  anchor: string;
  section: string;
  profiles: Profile[];
  applies_to: Applicability[];
  internal: boolean;
  feature: string;
  status: Status;
  reason: string | null;
  scenarios: ScenarioOutcome[];
}

export type ProblemKind =
  | 'unknown-requirement'
  | 'missing-requirement-tag'
  | 'several-requirement-tags'
  | 'parse-error'
  | 'run-hook-failed'
  | 'run-failed'
  | 'run-incomplete';

/** Something wrong with the run as a whole, shown in the report instead of being dropped. */
export interface RunProblem {
  kind: ProblemKind;
  message: string;
  uri: string | null;
  line: number | null;
}

/** A requirement the run's --tags or --profile left out: listed, never counted. */
export interface NotSelected {
  id: string;
  title: string;
  section: string;
  profiles: Profile[];
}

export interface Classification {
  requirements: RequirementOutcome[];
  /** Requirements with scenarios of which none was selected to run. */
  notSelected: NotSelected[];
  problems: RunProblem[];
}

const ID_TAG = /^@(SYNC-[A-Z][A-Z0-9]*-\d+)$/;
/** Longest error text kept per step: enough for a stack trace, not a log dump. */
const MAX_ERROR_LENGTH = 8000;

/** Requirement ids named by the tags of a pickle (features carry exactly one). */
export function requirementTags(tags: readonly string[]): string[] {
  const ids: string[] = [];
  for (const tag of tags) {
    const match = ID_TAG.exec(tag);
    if (match?.[1] !== undefined && !ids.includes(match[1])) ids.push(match[1]);
  }
  return ids;
}

export function classifyRun(index: MessageIndex, records: readonly RequirementRecord[]): Classification {
  const problems: RunProblem[] = [];
  const known = new Set(records.map((r) => r.id));
  const byRequirement = new Map<string, ScenarioOutcome[]>();
  // Cucumber announces every pickle but makes test cases only of those the tag expression selects.
  const selectedIds = new Set<string>();
  const unknown = new Map<string, { uri: string; line: number; id: string; count: number }>();

  for (const pickle of index.pickles) {
    const scenario = classifyScenario(index, pickle);
    const ids = requirementTags(scenario.tags);
    if (index.testCaseByPickle.has(pickle.id)) for (const id of ids) selectedIds.add(id);
    if (ids.length === 0) {
      problems.push({
        kind: 'missing-requirement-tag',
        message: `scenario "${scenario.name}" carries no requirement id tag (@SYNC-<AREA>-NNN), so no requirement counts its result`,
        uri: scenario.uri,
        line: scenario.line,
      });
      continue;
    }
    if (ids.length > 1) {
      problems.push({
        kind: 'several-requirement-tags',
        message: `scenario "${scenario.name}" carries several requirement id tags (${ids.join(', ')}); a feature belongs to exactly one requirement`,
        uri: scenario.uri,
        line: scenario.line,
      });
    }
    for (const id of ids) {
      if (!known.has(id)) {
        const key = `${scenario.uri}\u0000${id}`;
        const entry = unknown.get(key);
        if (entry) entry.count += 1;
        else unknown.set(key, { uri: scenario.uri, line: scenario.line, id, count: 1 });
        continue;
      }
      const list = byRequirement.get(id);
      if (list) list.push(scenario);
      else byRequirement.set(id, [scenario]);
    }
  }
  for (const entry of unknown.values()) {
    problems.push({
      kind: 'unknown-requirement',
      message: `${plural(entry.count, 'scenario')} tagged @${entry.id}, an id that is not in the requirement records; ${entry.count === 1 ? 'its result is' : 'their results are'} not counted`,
      uri: entry.uri,
      line: entry.line,
    });
  }
  problems.push(...runProblems(index));

  const requirements: RequirementOutcome[] = [];
  const notSelected: NotSelected[] = [];
  for (const record of records) {
    const scenarios = byRequirement.get(record.id) ?? [];
    // A requirement without scenarios stays in the verdicts (undetermined): nothing could have selected it.
    if (scenarios.length > 0 && !selectedIds.has(record.id)) notSelected.push({ id: record.id, title: record.title, section: record.section, profiles: [...record.profiles] });
    else requirements.push(classifyRequirement(record, scenarios));
  }
  return { requirements, notSelected, problems };
}

function runProblems(index: MessageIndex): RunProblem[] {
  const problems: RunProblem[] = [];
  for (const error of index.parseErrors) {
    problems.push({
      kind: 'parse-error',
      message: `feature file could not be parsed: ${error.message}`,
      uri: error.source.uri ?? null,
      line: error.source.location?.line ?? null,
    });
  }
  for (const finished of index.runHooksFinished) {
    if (String(finished.result.status) !== 'FAILED') continue;
    const started = index.runHooksStarted.get(finished.testRunHookStartedId);
    const hook = started ? index.hooks.get(started.hookId) : undefined;
    const ref = hook?.sourceReference;
    const name = hook?.name ?? (String(hook?.type) === 'AFTER_TEST_RUN' ? 'AfterAll' : 'BeforeAll');
    problems.push({
      kind: 'run-hook-failed',
      message: `run hook ${name} failed: ${firstLine(errorText(finished.result) ?? 'no error message')}`,
      uri: ref?.uri ?? null,
      line: ref?.location?.line ?? null,
    });
  }
  const finished = index.testRunFinished;
  if (finished === undefined) {
    problems.push({
      kind: 'run-incomplete',
      message: 'the message stream ends before the test run finished; results after that point are missing',
      uri: null,
      line: null,
    });
  } else if (!finished.success && (finished.exception || finished.message)) {
    const text = finished.exception?.message ?? finished.message ?? '';
    problems.push({ kind: 'run-failed', message: `the test run failed: ${firstLine(text)}`, uri: null, line: null });
  }
  return problems;
}

/** Classifies one scenario from the last attempt of its test case. */
export function classifyScenario(index: MessageIndex, pickle: Pickle): ScenarioOutcome {
  const tags = pickle.tags.map((t) => t.name);
  const ids = requirementTags(tags);
  const base = {
    requirement: ids[0] ?? null,
    name: pickle.name,
    uri: pickle.uri,
    line: pickle.location?.line ?? scenarioLine(index, pickle),
    tags,
    capabilities: [] as string[],
  };
  const testCase = index.testCaseByPickle.get(pickle.id);
  const attempts = testCase ? (index.attempts.get(testCase.id) ?? []) : [];
  const last = attempts[attempts.length - 1];
  if (testCase === undefined || last === undefined) {
    const steps = pickle.steps.map((s) => pickleStepOutcome(index, s.astNodeIds, s.text, undefined));
    return { ...base, status: 'undetermined', reason: 'scenario did not run', assertions: null, unasserted_steps: [], attempts: 0, steps };
  }
  const results = index.stepResults.get(last.id) ?? new Map<string, TestStepResult>();
  const steps = testCase.testSteps.map((testStep) => stepOutcome(index, pickle, testCase.testSteps, testStep, results.get(testStep.id)));
  const attachments = index.attachments.get(last.id) ?? [];

  let assertions: number | null = null;
  const unasserted: string[] = [];
  const capabilities: string[] = [];
  const notApplicableReasons: string[] = [];
  const undeterminedReasons: string[] = [];
  for (const attachment of attachments) {
    if (attachment.mediaType === ASSERTIONS_MEDIA_TYPE) {
      const evidence = parseAssertions(attachment.body);
      if (evidence) {
        assertions = (assertions ?? 0) + evidence.count;
        unasserted.push(...evidence.unasserted);
      }
    } else if (attachment.mediaType === NOT_APPLICABLE_MEDIA_TYPE) {
      const evidence = parseNotApplicable(attachment.body);
      if (evidence) {
        if (!capabilities.includes(evidence.capability)) capabilities.push(evidence.capability);
        notApplicableReasons.push(describeCapability(evidence.capability, evidence.reason));
      }
    } else if (attachment.mediaType === UNDETERMINED_MEDIA_TYPE) {
      const evidence = parseUndetermined(attachment.body);
      if (evidence) undeterminedReasons.push(evidence.reason || 'the harness could not run the scenario');
    }
  }
  const common = { ...base, assertions, unasserted_steps: unasserted, attempts: attempts.length, steps };
  const verdict = scenarioVerdict(steps, index.finished.has(last.id), assertions, notApplicableReasons, undeterminedReasons, unasserted);
  return { ...common, ...verdict, capabilities: verdict.status === 'not-applicable' ? capabilities : [] };
}

/**
 * A scenario's verdict from its step results, the assertions it executed and
 * the evidence its hooks attached. Exported so the gate can recompute a
 * report's verdicts with the same rules instead of trusting them.
 */
export function scenarioVerdict(
  steps: readonly Pick<StepOutcome, 'kind' | 'keyword' | 'text' | 'status' | 'error'>[],
  finished: boolean,
  assertions: number | null,
  notApplicable: readonly string[],
  undetermined: readonly string[],
  unasserted: readonly string[] = [],
): { status: Status; reason: string | null } {
  const failed = steps.find((s) => s.status === 'failed');
  if (failed) return { status: 'failed', reason: `${describeStep(failed)} failed: ${firstLine(failed.error ?? 'no error message')}` };
  const blocked = steps.find((s) => s.status !== 'passed');
  // Evidence only explains a scenario that did not run to the end: a Before
  // hook attaches it and then skips.
  if (blocked && notApplicable.length > 0) return { status: 'not-applicable', reason: notApplicable.join('; ') };
  if (blocked && undetermined.length > 0) return { status: 'undetermined', reason: undetermined.join('; ') };
  if (blocked) return { status: 'undetermined', reason: blockedReason(blocked) };
  if (!finished) return { status: 'undetermined', reason: 'scenario did not finish' };
  if (assertions === null || assertions < 1) return { status: 'undetermined', reason: 'no assertion executed' };
  if (unasserted.length > 0) return { status: 'undetermined', reason: `${unasserted.map((text) => `Then step "${text}"`).join(', ')} passed without executing an assertion on the implementation's output` };
  return { status: 'passed', reason: null };
}

function blockedReason(step: Pick<StepOutcome, 'kind' | 'keyword' | 'text' | 'status'>): string {
  switch (step.status) {
    case 'undefined':
      return `${describeStep(step)} is undefined (no step definition matches it)`;
    case 'pending':
      return `${describeStep(step)} is pending (its definition is not finished)`;
    case 'ambiguous':
      return `${describeStep(step)} is ambiguous (several step definitions match it)`;
    case 'skipped':
      return `${describeStep(step)} was skipped without a not-applicable reason`;
    default:
      return `${describeStep(step)} has no result`;
  }
}

function describeStep(step: Pick<StepOutcome, 'kind' | 'keyword' | 'text'>): string {
  return step.kind === 'hook' ? `${step.keyword} hook ${step.text}` : `step "${step.keyword} ${step.text}"`;
}

function describeCapability(capability: string, reason: string): string {
  if (capability.startsWith(FORM_EVIDENCE_PREFIX)) return `not for this implementation's form (${capability}): ${reason || 'the adapter does not declare it'}`;
  return reason === '' ? `adapter lacks capability ${capability}` : `adapter lacks capability ${capability}: ${reason}`;
}

function stepOutcome(
  index: MessageIndex,
  pickle: Pickle,
  all: readonly TestStep[],
  testStep: TestStep,
  result: TestStepResult | undefined,
): StepOutcome {
  if (testStep.pickleStepId !== undefined) {
    const pickleStep = pickle.steps.find((s) => s.id === testStep.pickleStepId);
    return pickleStepOutcome(index, pickleStep?.astNodeIds ?? [], pickleStep?.text ?? '', result);
  }
  const hook = testStep.hookId === undefined ? undefined : index.hooks.get(testStep.hookId);
  const firstPickleStep = all.findIndex((s) => s.pickleStepId !== undefined);
  const position = all.indexOf(testStep);
  const type = hook?.type === undefined ? undefined : String(hook.type);
  const before = type === undefined ? firstPickleStep === -1 || position < firstPickleStep : type.startsWith('BEFORE');
  const ref = hook?.sourceReference;
  const where = ref?.uri ? `(${ref.uri}${ref.location ? `:${ref.location.line}` : ''})` : '';
  const text = [hook?.name, where].filter((s) => s !== undefined && s !== '').join(' ');
  return { kind: 'hook', keyword: before ? 'Before' : 'After', text, ...resultFields(result) };
}

function pickleStepOutcome(
  index: MessageIndex,
  astNodeIds: readonly string[],
  text: string,
  result: TestStepResult | undefined,
): StepOutcome {
  const step = astNodeIds[0] === undefined ? undefined : index.steps.get(astNodeIds[0]);
  return { kind: 'step', keyword: step?.keyword.trim() ?? '*', text, ...resultFields(result) };
}

function resultFields(result: TestStepResult | undefined): Pick<StepOutcome, 'status' | 'duration_ms' | 'error'> {
  if (result === undefined) return { status: 'unknown', duration_ms: 0, error: null };
  const text = errorText(result);
  return {
    status: result.status.toLowerCase() as StepStatus,
    duration_ms: Math.round(toMillis(result.duration) * 1000) / 1000,
    error: text === undefined ? null : text.slice(0, MAX_ERROR_LENGTH),
  };
}

function errorText(result: TestStepResult): string | undefined {
  return result.message ?? result.exception?.message ?? undefined;
}

function scenarioLine(index: MessageIndex, pickle: Pickle): number {
  const id = pickle.astNodeIds[0];
  return (id === undefined ? undefined : index.scenarios.get(id)?.scenario.location.line) ?? 0;
}

/** Joins a requirement's scenarios into its verdict; every verdict but passed has a reason. */
export function classifyRequirement(record: RequirementRecord, scenarios: ScenarioOutcome[]): RequirementOutcome {
  const base = {
    id: record.id,
    title: record.title,
    anchor: record.anchor,
    section: record.section,
    profiles: [...record.profiles],
    applies_to: [...record.applies_to],
    internal: record.internal === true,
    feature: record.feature,
    scenarios,
  };
  return { ...base, ...requirementVerdict(scenarios) };
}

/** What requirementVerdict reads of a scenario: the report keeps all of it. */
export type ScenarioVerdictInput = Pick<ScenarioOutcome, 'name' | 'uri' | 'line' | 'status' | 'reason' | 'capabilities'>;

/**
 * A requirement's verdict from its scenarios' verdicts: failed beats
 * undetermined beats not-applicable beats passed, and no scenario at all is
 * undetermined. Scenarios about an implementation form the adapters do not
 * declare are outside the implementation and left out, unless nothing else
 * is left (then the requirement is not-applicable for that form). Shared by
 * the classifier and the gate's recomputation.
 */
export function requirementVerdict(all: readonly ScenarioVerdictInput[]): { status: Status; reason: string | null } {
  const inside = all.filter((s) => !(s.status === 'not-applicable' && onlyForms(s.capabilities)));
  const scenarios = inside.length > 0 ? inside : all;
  const total = scenarios.length;
  if (total === 0) return { status: 'undetermined', reason: 'no scenario ran' };
  const failed = scenarios.filter((s) => s.status === 'failed');
  if (failed.length > 0) return { status: 'failed', reason: summarise(failed, total, 'failed') };
  const undetermined = scenarios.filter((s) => s.status === 'undetermined');
  if (undetermined.length > 0) {
    return { status: 'undetermined', reason: summarise(undetermined, total, 'undetermined') };
  }
  const notApplicable = scenarios.filter((s) => s.status === 'not-applicable');
  if (notApplicable.length > 0) {
    // Scenario reasons written from the evidence already name the capability
    // and why; any capability they do not mention is listed up front.
    const reasons = [...new Set(notApplicable.map((s) => s.reason ?? ''))].filter((r) => r !== '').join('; ');
    const capabilities = [...new Set(notApplicable.flatMap((s) => s.capabilities))];
    const unnamed = capabilities.filter((c) => !reasons.includes(c));
    const head = unnamed.length === 0 ? '' : `adapter lacks ${unnamed.length === 1 ? 'capability' : 'capabilities'} ${unnamed.join(', ')}`;
    const reason = [head, reasons].filter((r) => r !== '').join(': ') || `${plural(notApplicable.length, 'scenario')} not applicable`;
    return { status: 'not-applicable', reason };
  }
  return { status: 'passed', reason: null };
}

function summarise(scenarios: readonly ScenarioVerdictInput[], total: number, word: string): string {
  const first = scenarios[0];
  if (first === undefined) return `no scenario ${word}`;
  const detail = `"${first.name}" (${first.uri}:${first.line}): ${first.reason ?? ''}`;
  return total === 1 ? `scenario ${detail}` : `${scenarios.length} of ${total} scenarios ${word}; first: ${detail}`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0]?.trim() ?? '';
}
