/**
 * "The response member /x contains y": the member a JSON pointer names in an
 * answer holds the item, as an element when the member is a list (the scopes
 * of "/rebuild") or as a key when it is an object (the scopes of
 * "/scope_cursors"). A missing member, or one that is neither, fails the check.
 */
import type { CountingAssert } from '../assertions.ts';
import { member, type Reply } from '../reply.ts';

export function assertMemberContains(assert: CountingAssert, reply: Pick<Reply, 'endpoint' | 'json' | 'text'>, pointer: string, item: string): void {
  const at = member(reply.json, pointer);
  const where = `member ${pointer} of the ${reply.endpoint} response`;
  if (Array.isArray(at)) {
    assert.ok(at.includes(item), `${where} lists ${JSON.stringify(at)}, without ${JSON.stringify(item)}`);
    return;
  }
  assert.ok(at !== null && typeof at === 'object', `${where} is neither a list nor an object: ${reply.text.slice(0, 400)}`);
  assert.ok(Object.hasOwn(at, item), `${where} has the keys ${JSON.stringify(Object.keys(at))}, without ${JSON.stringify(item)}`);
}
