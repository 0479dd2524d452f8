/**
 * One fault run: the scenarios of one Rule with one fault switched on, judged
 * by whether a Then step of that Rule failed. Runs in the sensitivity
 * command's thread or in one of its worker threads (./worker.ts).
 */
import { join } from 'node:path';
import { type MessageIndex, readMessages } from '../report/messages.ts';
import { type JsonObject, runFeatures } from '../run/cucumber.ts';

/** What one fault run showed about its Rule. */
export type RecipeOutcome = 'detected' | 'missed' | 'broke-setup' | 'not-run';

export interface RecipeResult {
  fault: string;
  outcome: RecipeOutcome;
  /** The Then step that failed, or why the recipe is not detected. */
  detail: string;
}

/** A fault run to do, in terms a worker thread can receive (plain data). */
export interface RecipeJob {
  requirement: string;
  feature: string;
  /** Line of the Rule's `Rule:` keyword, for naming the run's message file. */
  ruleLine: number;
  scenarioLines: number[];
  fault: string;
}

/** What every fault run of one sensitivity run shares. */
export interface RecipeContext {
  root: string;
  imports: string[];
  /** Prepared world parameters (adapters resolved once for the whole run); the fault is added per run. */
  worldParameters: JsonObject;
  workDir: string;
}

/**
 * Judges a fault run of one Rule from its message stream: detected when a
 * Then step (a pickle step of type Outcome) failed; broke-setup when only
 * Given or When steps or hooks failed; missed when nothing failed.
 */
export function judgeFaultRun(index: MessageIndex): { outcome: Exclude<RecipeOutcome, 'not-run'>; detail: string } {
  const setupBreaks: string[] = [];
  for (const pickle of index.pickles) {
    const testCase = index.testCaseByPickle.get(pickle.id);
    const attempts = testCase === undefined ? [] : (index.attempts.get(testCase.id) ?? []);
    const last = attempts[attempts.length - 1];
    if (testCase === undefined || last === undefined) continue;
    const results = index.stepResults.get(last.id);
    for (const testStep of testCase.testSteps) {
      const result = results?.get(testStep.id);
      if (result === undefined || String(result.status) !== 'FAILED') continue;
      const error = (result.exception?.message ?? result.message ?? '').split('\n')[0] ?? '';
      const pickleStep = testStep.pickleStepId === undefined ? undefined : pickle.steps.find((step) => step.id === testStep.pickleStepId);
      if (pickleStep !== undefined && String(pickleStep.type) === 'Outcome') {
        return { outcome: 'detected', detail: `scenario "${pickle.name}": Then step "${pickleStep.text}" failed: ${error}` };
      }
      const what = pickleStep === undefined ? 'a hook' : `step "${pickleStep.text}"`;
      setupBreaks.push(`scenario "${pickle.name}": ${what} failed: ${error}`);
    }
  }
  if (setupBreaks.length > 0) return { outcome: 'broke-setup', detail: `no Then step of the rule failed; the fault broke the set-up instead (${setupBreaks[0]})` };
  return { outcome: 'missed', detail: 'every scenario of the rule still passed under the fault' };
}

/**
 * Runs the job's scenarios in this thread (Cucumber's in-process runtime:
 * the step definitions are loaded once per thread, not once per fault run)
 * and stops at the first detection.
 */
export async function runRecipe(context: RecipeContext, job: RecipeJob): Promise<RecipeResult> {
  const { fault } = job;
  if (job.scenarioLines.length === 0) return { fault, outcome: 'missed', detail: 'the rule has no scenario to run' };
  const messagesFile = join(context.workDir, `${job.requirement}-${job.ruleLine}-${fault.replace(/\W/g, '-')}.ndjson`);
  await runFeatures({
    cwd: context.root,
    paths: [`${job.feature}:${job.scenarioLines.join(':')}`],
    imports: context.imports,
    parallel: 0,
    worldParameters: { ...context.worldParameters, fault, stopAtDetection: true },
    messagesFile,
    progress: 'none',
  });
  return { fault, ...judgeFaultRun(readMessages(messagesFile)) };
}
