/**
 * "No pull of client X names scope S", as a check over the pulls the proxy
 * recorded: it needs at least one pull to judge (over no pull at all it
 * would hold for a client that never asked), and then no pull request may
 * name the scope in its `scopes` member.
 */
import type { CountingAssert } from '../assertions.ts';

/** One recorded pull request: its sequence number in the proxy's log and the scopes its body names. */
export interface RecordedPull {
  seq: number;
  scopes: readonly string[];
}

export function assertNoPullNamesScope(assert: CountingAssert, pulls: readonly RecordedPull[], scope: string, client: string): void {
  assert.ok(pulls.length > 0, `the proxy recorded no pull from client "${client}", so nothing shows its pulls leave out ${scope}`);
  assert.equal(
    pulls.filter((pull) => pull.scopes.includes(scope)).map((pull) => `pull #${pull.seq}`),
    [],
    `pulls of client "${client}" naming ${scope}`,
  );
}
