/**
 * A failed scenario is named in the CI log with its feature file, failing
 * step and the first lines of its error.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pickle, TestStepResult } from '@cucumber/messages';
import { describeFailure } from '../../harness/run/progress-lines.ts';

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
