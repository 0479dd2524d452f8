/**
 * What a client sees of a membership change: pulls presenting cursors taken
 * before it, rebuild sessions opened before it and continued after it, the
 * "rebuild" list, the changes and cursors of pull answers, and the contents
 * and checksums of rebuilds.
 */
import type { Reply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';
import { generationsState, labelled } from './state.ts';

/** One pull page of `name` presenting exactly the cursors recorded under `label`. */
export async function pullPresenting(world: SyncWorld, name: string, label: string): Promise<Reply> {
  const cursors = labelled(generationsState(world).cursors, label, 'set of cursors');
  const scopes = Object.fromEntries([...cursors].map(([scope, cursor]) => [scope, { cursor }]));
  return world.wire(name).pull({ scopes });
}

export function lastPull(world: SyncWorld): Reply {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'pull');
  if (!reply) throw new Error('no pull response has been received in this scenario');
  world.assert.equal(reply.status, 200, `the last pull was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  return reply;
}

export function listed(world: SyncWorld, member: string): unknown[] {
  const reply = lastPull(world);
  const list = reply.json?.[member];
  world.assert.ok(Array.isArray(list), `the pull response has no list "${member}": ${reply.text.slice(0, 500)}`);
  return list as unknown[];
}
