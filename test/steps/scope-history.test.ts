import assert from 'node:assert/strict';
import { test } from 'node:test';
import { historyProblems, problemsOfKind } from '../../steps/support/scopes/history.ts';
import type { History, HistoryStep } from '../../steps/support/scopes/state.ts';

const step = (label: string, set: string[], version: number, expected = set): HistoryStep => ({ label, expected, observed: set, version, status: 200 });

test('a history that steps by one on each change and stays flat otherwise has no problem', () => {
  const history: History = {
    start: { set: [], version: 0 },
    steps: [step('connect', ['user:a'], 1), step('none', ['user:a'], 1), step('grant p1', ['p1', 'user:a'], 2), step('revoke p1', ['user:a'], 3)],
  };
  assert.deepEqual(historyProblems(history), []);
});

test('a double step, a bump without change, a reused version and a step backward are each reported under their kind', () => {
  const doubled: History = { start: { set: ['user:a'], version: 1 }, steps: [step('grant p1', ['p1', 'user:a'], 3)] };
  assert.equal(problemsOfKind(doubled, 'step').length, 1);
  const bumped: History = { start: { set: ['user:a'], version: 1 }, steps: [step('none', ['user:a'], 2)] };
  assert.equal(problemsOfKind(bumped, 'step').length, 1);
  const reused: History = { start: { set: ['user:a'], version: 1 }, steps: [step('grant p1', ['p1', 'user:a'], 2), step('swap p1 for p2', ['p2', 'user:a'], 2)] };
  assert.equal(problemsOfKind(reused, 'reuse').length, 1);
  // Restoring an earlier set must not hand back the version that set had.
  const backward: History = { start: { set: ['user:a'], version: 1 }, steps: [step('grant p1', ['p1', 'user:a'], 2), step('revoke p1', ['user:a'], 1)] };
  assert.equal(problemsOfKind(backward, 'backward').length, 1);
});

test('a client set that differs from the expected one, or a failed pull, is a problem', () => {
  const wrong: History = { start: { set: ['user:a'], version: 1 }, steps: [step('grant p1', ['user:a'], 1, ['p1', 'user:a'])] };
  assert.match(historyProblems(wrong).join('\n'), /holds \[user:a\], expected \[p1, user:a\]/);
  const failed: History = { start: { set: ['user:a'], version: 1 }, steps: [{ ...step('none', ['user:a'], 1), status: 500 }] };
  assert.match(historyProblems(failed).join('\n'), /answered 500/);
});
