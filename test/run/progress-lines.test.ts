/**
 * A failed scenario is named in the CI log with its feature file, failing
 * step and the first lines of its error; progress lines never stop for
 * longer than the interval while the run goes on.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Envelope, Pickle, TestStepResult } from '@cucumber/messages';
import progressLines, { describeFailure, PROGRESS_INTERVAL_MS } from '../../harness/run/progress-lines.ts';

const pickle = { id: 'p', uri: 'features/x/y.feature', name: 'a row digest is checked', steps: [] } as unknown as Pickle;

test('names the feature, scenario, step and keeps only the first error lines', () => {
  const message = ['AssertionError: digests differ', '', ...Array.from({ length: 20 }, (_, i) => `  at frame ${i}`)].join('\n');
  const result = { status: 'FAILED', message, duration: { seconds: 0, nanos: 0 } } as unknown as TestStepResult;
  const text = describeFailure(pickle, 'the client pulls', result);
  assert.match(text, /FAILED features\/x\/y\.feature: a row digest is checked/);
  assert.match(text, /step: the client pulls/);
  assert.match(text, /AssertionError: digests differ/);
  assert.match(text, /frame 4/);
  assert.doesNotMatch(text, /frame 5/);
});

test('a failing hook and a missing message are still described', () => {
  const result = { status: 'FAILED', duration: { seconds: 0, nanos: 0 } } as unknown as TestStepResult;
  const text = describeFailure(undefined, undefined, result);
  assert.match(text, /unknown scenario/);
  assert.match(text, /step: a hook/);
  assert.match(text, /no error message/);
});

test('a run whose scenarios are slow still prints a line at least every interval', (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'] });
  const written: string[] = [];
  let listener: ((envelope: Envelope) => void) | undefined;
  const formatter = progressLines.formatter as unknown as (options: { on: (event: string, fn: (envelope: Envelope) => void) => void; write: (text: string) => void }) => void;
  formatter({ on: (_event, fn) => (listener = fn), write: (text) => written.push(text) });
  assert.ok(listener);
  for (let i = 0; i < 20; i += 1) listener({ testCase: { id: `c${i}`, pickleId: `p${i}`, testSteps: [] } } as unknown as Envelope);
  t.mock.timers.tick(PROGRESS_INTERVAL_MS - 1000);
  assert.deepEqual(written, [], 'nothing before the interval');
  t.mock.timers.tick(1000);
  assert.deepEqual(written, ['  0/20 scenarios finished (0 failed so far)\n']);
  t.mock.timers.tick(PROGRESS_INTERVAL_MS);
  assert.equal(written.length, 2);
  listener({ testRunFinished: { success: true } } as unknown as Envelope);
  t.mock.timers.tick(PROGRESS_INTERVAL_MS * 3);
  assert.equal(written.length, 2, 'no line after the run finished');
});
