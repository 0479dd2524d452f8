/**
 * Progress for runs whose output is not a terminal (CI logs): one line each
 * time another tenth of the scenarios has finished, and at least one every
 * PROGRESS_INTERVAL_MS while scenarios run (so a long stretch of slow
 * scenarios does not look like a hang), instead of a wall of dots or a
 * progress bar drawn with control characters.
 *
 * A failed scenario is also printed as it finishes (feature file and line,
 * scenario, failing step and the first lines of its error), because a CI log
 * is often all there is to diagnose a failure that does not repeat locally.
 */
import type { FormatterPlugin } from '@cucumber/cucumber/api';
import type { Envelope, Pickle, TestStepResult } from '@cucumber/messages';

/** Lines of a failing step's error kept in the log; the reports have the rest. */
const ERROR_LINES = 6;
/** Longest silence between two progress lines while the run goes on. */
export const PROGRESS_INTERVAL_MS = 15_000;

interface FailedStep {
  testStepId: string;
  result: TestStepResult;
}

/** The lines printed for one failed scenario. */
export function describeFailure(pickle: Pickle | undefined, stepText: string | undefined, result: TestStepResult): string {
  const where = pickle ? `${pickle.uri}: ${pickle.name}` : 'unknown scenario';
  const error = (result.message ?? result.exception?.message ?? 'no error message')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(0, ERROR_LINES)
    .map((line) => `      ${line}`)
    .join('\n');
  return `  FAILED ${where}\n    step: ${stepText ?? 'a hook'}\n${error}\n`;
}

const progressLines: FormatterPlugin = {
  type: 'formatter',
  formatter({ on, write }) {
    let total = 0;
    let finished = 0;
    let failed = 0;
    let nextTenth = 1;
    const pickles = new Map<string, Pickle>();
    const stepTexts = new Map<string, string>();
    const casePickle = new Map<string, string>();
    const stepOfCase = new Map<string, string>();
    const startedCase = new Map<string, string>();
    const firstFailure = new Map<string, FailedStep>();
    let lastLineAt = Date.now();
    const line = () => {
      lastLineAt = Date.now();
      write(`  ${finished}/${total} scenarios finished (${failed} failed so far)\n`);
    };
    // A timer, not a check on each message: a single slow scenario sends nothing for a long time.
    const ticker = setInterval(() => {
      if (total > 0 && Date.now() - lastLineAt >= PROGRESS_INTERVAL_MS) line();
    }, 1000);
    ticker.unref();
    on('message', (envelope: Envelope) => {
      if (envelope.testRunFinished) clearInterval(ticker);
      if (envelope.pickle) {
        pickles.set(envelope.pickle.id, envelope.pickle);
        for (const step of envelope.pickle.steps) stepTexts.set(step.id, step.text);
      }
      if (envelope.testCase) {
        total += 1;
        casePickle.set(envelope.testCase.id, envelope.testCase.pickleId);
        for (const step of envelope.testCase.testSteps) if (step.pickleStepId) stepOfCase.set(step.id, step.pickleStepId);
      }
      if (envelope.testCaseStarted) startedCase.set(envelope.testCaseStarted.id, envelope.testCaseStarted.testCaseId);
      const stepDone = envelope.testStepFinished;
      if (stepDone?.testStepResult.status === 'FAILED' && !firstFailure.has(stepDone.testCaseStartedId)) {
        firstFailure.set(stepDone.testCaseStartedId, { testStepId: stepDone.testStepId, result: stepDone.testStepResult });
      }
      const done = envelope.testCaseFinished;
      if (!done || done.willBeRetried) return;
      finished += 1;
      const failure = firstFailure.get(done.testCaseStartedId);
      if (failure) {
        failed += 1;
        const pickleId = casePickle.get(startedCase.get(done.testCaseStartedId) ?? '');
        const pickleStepId = stepOfCase.get(failure.testStepId);
        write(describeFailure(pickles.get(pickleId ?? ''), pickleStepId ? stepTexts.get(pickleStepId) : undefined, failure.result));
      }
      if (finished * 10 >= nextTenth * total) {
        nextTenth = Math.floor((finished * 10) / total) + 1;
        line();
      }
    });
  },
};

export default progressLines;
