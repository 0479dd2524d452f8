/**
 * Checks on the scope sets the server reports: what a connect added, what a
 * harness client holds after applying a pull, and how scope_updates, rebuild
 * and checksums of one pull answer agree with each other.
 */
import { member, type Reply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';
import type { Loose } from './exchanges.ts';

export function addedIds(world: SyncWorld, reply: Reply): string[] {
  world.assert.equal(reply.status, 200, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const add = member(reply.json, reply.endpoint === 'pull' ? '/scope_updates/add' : '/scopes/add');
  if (!Array.isArray(add)) throw new Error(`the ${reply.endpoint} answer has no scope additions: ${reply.text.slice(0, 500)}`);
  return add.map((entry: Loose) => entry.id);
}
