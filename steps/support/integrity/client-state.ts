/**
 * What a client adapter process reports after a verification failure or a
 * digest comparison: cursors and checksums per scope (inspectScopes), rebuild
 * attempts (inspectRebuilds), queued mutations (inspectMutations), and what
 * it sent on the wire afterwards (the proxy's records).
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import type { SyncWorld } from '../world.ts';
import { clientExchanges, integrity, scopeState } from './context.ts';
import { type Obj, requestOf } from './oracle.ts';
import { bodyOf, deliveredOf } from '../exchanges.ts';

/** The cursor the client presented for `scopeId` in its last pull request (null when it presented none). */
async function lastPresented(world: SyncWorld, name: string, scopeId: string): Promise<string | null> {
  const pulls = await clientExchanges(world, name, 'pull');
  const last = pulls[pulls.length - 1];
  if (last === undefined) throw new Error(`client "${name}" sent no pull request`);
  const cursor = ((requestOf(last).scopes as Obj | undefined)?.[scopeId] as Obj | undefined)?.cursor;
  return typeof cursor === 'string' ? cursor : null;
}

export async function assertCursorUnchanged(world: SyncWorld, name: string, scopeId: string): Promise<void> {
  const scope = await scopeState(world, name, scopeId);
  world.assert.ok(scope !== undefined, `client "${name}" still has scope ${scopeId}`);
  const presented = await lastPresented(world, name, scopeId);
  world.assert.equal(scope.cursor, presented, `client "${name}" still stores for ${scopeId} the cursor it presented in its last pull`);
  const before = integrity(world).scopesBefore.get(name)?.find((s) => s.scopeId === scopeId);
  if (before !== undefined) world.assert.equal(scope.cursor, before.cursor, `the cursor of ${scopeId} is the one held before the tampered answer`);
}

/** The JSON body a client was given in an exchange, when it was a 200. */
export function given(e: Exchange): Obj | undefined {
  const answer = deliveredOf(e);
  return answer?.status === 200 ? (bodyOf(answer.body) as Obj | undefined) : undefined;
}
