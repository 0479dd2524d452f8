/**
 * Arming a named crash point of the client under test: the point must be one
 * the adapter lists, or the scenario cannot reach a verdict (undetermined,
 * never passed). The armed point is remembered so a restart can check the
 * process really died there.
 */
import { queueState } from '../mutations/state.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';

export async function armCrashPoint(world: SyncWorld, name: string, point: string): Promise<'skipped' | undefined> {
  const client = await world.process(name);
  const { points } = await client.call<{ points: string[] }>('crashPoints');
  if (!points.includes(point)) return undeterminedWithout(world, `client "${name}" offers no crash point "${point}" (it lists ${points.join(', ') || 'none'})`);
  await client.call('armCrash', { point });
  queueState(world).crashArmed.set(name, point);
  // A sync that ended before the point was armed (a background's) says nothing about where the process died.
  world.lastSync.delete(name);
  return undefined;
}
