/**
 * Progress for runs whose output is not a terminal (CI logs): one line each
 * time another tenth of the scenarios has finished, instead of a wall of dots
 * or a progress bar drawn with control characters.
 */
import type { FormatterPlugin } from '@cucumber/cucumber/api';
import type { Envelope } from '@cucumber/messages';

const progressLines: FormatterPlugin = {
  type: 'formatter',
  formatter({ on, write }) {
    let total = 0;
    let finished = 0;
    let failed = 0;
    let nextTenth = 1;
    const failedAttempts = new Set<string>();
    on('message', (envelope: Envelope) => {
      if (envelope.testCase) total += 1;
      if (envelope.testStepFinished?.testStepResult.status === 'FAILED') failedAttempts.add(envelope.testStepFinished.testCaseStartedId);
      const done = envelope.testCaseFinished;
      if (!done || done.willBeRetried) return;
      finished += 1;
      if (failedAttempts.has(done.testCaseStartedId)) failed += 1;
      if (finished * 10 >= nextTenth * total) {
        nextTenth = Math.floor((finished * 10) / total) + 1;
        write(`  ${finished}/${total} scenarios finished (${failed} failed so far)\n`);
      }
    });
  },
};

export default progressLines;
