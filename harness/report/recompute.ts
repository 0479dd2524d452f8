/**
 * Recomputes the verdicts of a conformance report from the evidence it keeps,
 * so the release gate never opens on a `status` field alone.
 *
 * The rules are the classifier's own (scenarioVerdict and requirementVerdict
 * in classify.ts): each scenario's verdict from its step results, assertion
 * count and capability evidence, then each requirement's from its scenarios.
 * A report written by the harness always agrees with itself; one that does
 * not was edited by hand or produced by something else, and is refused.
 */
import { type RunProblem, requirementVerdict, type Status, scenarioVerdict } from './classify.ts';
import type { ConformanceReport, ReportRequirement, ReportScenario } from './conformance-json.ts';

export interface Verdict {
  status: Status;
  reason: string | null;
}

/** A verdict in the report that its own evidence does not support. */
export interface Contradiction {
  requirement: string;
  /** The scenario whose stated status is wrong, or null when the requirement's is. */
  scenario: { name: string; uri: string; line: number } | null;
  stated: Status;
  recomputed: Status;
  /** Why the evidence gives the recomputed status. */
  reason: string | null;
}

export interface Recomputation {
  /** Recomputed verdict per requirement id. */
  verdicts: Map<string, Verdict>;
  contradictions: Contradiction[];
}

/**
 * The verdict a scenario's evidence supports. The report keeps the steps with
 * their results, the assertion count and, for a not-applicable scenario, the
 * capabilities its evidence named. It does not keep whether the last attempt
 * ran to its end, which can only turn a verdict into undetermined: a stated
 * undetermined is taken as "did not finish", which can block the gate but
 * never open it.
 */
export function recomputeScenario(scenario: ReportScenario): Verdict {
  const finished = scenario.status !== 'undetermined';
  const notApplicable = scenario.capabilities.length > 0 ? [scenario.reason ?? scenario.capabilities.join(', ')] : [];
  return scenarioVerdict(scenario.steps, finished, scenario.assertions, notApplicable, [], scenario.unasserted_steps);
}

export function recomputeRequirement(requirement: ReportRequirement): { verdict: Verdict; contradictions: Contradiction[] } {
  const contradictions: Contradiction[] = [];
  const scenarios = requirement.scenarios.map((scenario) => {
    const verdict = recomputeScenario(scenario);
    if (verdict.status !== scenario.status) {
      contradictions.push({
        requirement: requirement.id,
        scenario: { name: scenario.name, uri: scenario.uri, line: scenario.line },
        stated: scenario.status,
        recomputed: verdict.status,
        reason: verdict.reason,
      });
      return { ...scenario, ...verdict };
    }
    return scenario;
  });
  const verdict = requirementVerdict(scenarios);
  if (verdict.status !== requirement.status) {
    contradictions.push({ requirement: requirement.id, scenario: null, stated: requirement.status, recomputed: verdict.status, reason: verdict.reason });
  }
  return { verdict, contradictions };
}

/** Recomputes every requirement of the report and lists where the stated verdicts disagree with the evidence. */
export function recomputeReport(report: ConformanceReport): Recomputation {
  const verdicts = new Map<string, Verdict>();
  const contradictions: Contradiction[] = [];
  for (const requirement of report.requirements) {
    const result = recomputeRequirement(requirement);
    verdicts.set(requirement.id, result.verdict);
    contradictions.push(...result.contradictions);
  }
  return { verdicts, contradictions };
}

export function describeContradiction(c: Contradiction): string {
  const what = c.scenario === null ? 'requirement' : `scenario "${c.scenario.name}" (${c.scenario.uri}:${c.scenario.line})`;
  const from = c.scenario === null ? 'its scenarios make it' : 'its steps and evidence make it';
  return `  ${c.requirement}  ${what} is stated ${c.stated}, but ${from} ${c.recomputed}${c.reason === null ? '' : `: ${c.reason}`}`;
}

/**
 * The report's run-level problems, plus the one its run block implies: a run
 * with no finish time was cut short, whether or not a run-incomplete problem
 * says so.
 */
export function runProblems(report: ConformanceReport): RunProblem[] {
  const problems = [...report.problems];
  if (report.run.finished_at === null && !problems.some((p) => p.kind === 'run-incomplete')) {
    problems.push({ kind: 'run-incomplete', message: 'the report records no finish time for the run, so results after some point may be missing', uri: null, line: null });
  }
  return problems;
}
