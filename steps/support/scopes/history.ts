/**
 * Judging a walked history of assignment changes: after each step the client
 * holds the set the harness expects, and scope_set_version moved up by one
 * exactly when that set changed, never went down, and never named two sets.
 * Pure functions, so the property scenario and the scripted table share them.
 */
import type { History } from './state.ts';

const key = (set: readonly string[]) => [...set].sort().join('\u0000');

/** Every way `history` breaks the version rules, as readable lines (empty when it keeps them). */
export function historyProblems(history: History): string[] {
  const problems: string[] = [];
  let previous = history.start;
  const setOfVersion = new Map<number, string>([[history.start.version, key(history.start.set)]]);
  history.steps.forEach((step, index) => {
    const where = `step ${index + 1} (${step.label})`;
    if (step.status !== 200) {
      problems.push(`${where}: the pull answered ${step.status}`);
      return;
    }
    if (key(step.observed) !== key(step.expected)) problems.push(`${where}: the client holds [${step.observed.join(', ')}], expected [${step.expected.join(', ')}]`);
    const changed = key(step.observed) !== key(previous.set);
    const want = changed ? previous.version + 1 : previous.version;
    if (step.version !== want) problems.push(`${where}: version ${step.version} after ${changed ? 'a change' : 'no change'} of the set, expected ${want}`);
    if (step.version < previous.version) problems.push(`${where}: version went down from ${previous.version} to ${step.version}`);
    const named = setOfVersion.get(step.version);
    if (named !== undefined && named !== key(step.observed)) problems.push(`${where}: version ${step.version} already named another set`);
    setOfVersion.set(step.version, key(step.observed));
    previous = { set: step.observed, version: step.version };
  });
  return problems;
}

/** The problems of one kind only, for the three separate property assertions. */
export function problemsOfKind(history: History, kind: 'step' | 'reuse' | 'backward'): string[] {
  const pattern = kind === 'reuse' ? /already named another set/ : kind === 'backward' ? /went down/ : /version \d+ after|holds|answered/;
  return historyProblems(history).filter((line) => pattern.test(line));
}
