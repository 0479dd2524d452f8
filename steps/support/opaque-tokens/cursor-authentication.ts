/**
 * The server side of opaque cursors: the harness, acting as the protocol
 * client, presents altered, foreign and wrong-kind tokens and checks that
 * each is refused as a whole request, with a generic error, before any scope
 * is served; and that refusing it cost the rightful holder nothing.
 */
import type { SyncWorld } from '../world.ts';

interface HeldCursor {
  client: string;
  scope: string;
  token: string;
}

export interface HeldContinuation {
  client: string;
  scope: string;
  rebuildId: string;
  token: string;
  limit: number;
}

interface CursorState {
  cursor?: HeldCursor;
  continuation?: HeldContinuation;
  /** What the last step presented, so the error body can be checked for it. */
  presented?: { original: string; value: string };
}

const states = new WeakMap<SyncWorld, CursorState>();

export function state(world: SyncWorld): CursorState {
  let s = states.get(world);
  if (!s) {
    s = {};
    states.set(world, s);
  }
  return s;
}

/** Pulls until the client holds a pull-issued cursor for every scope it knows; scopes waiting for a rebuild are rebuilt first. */
export async function pullUntilHeld(world: SyncWorld, name: string, scopes: string[]): Promise<void> {
  const client = world.wire(name);
  for (let round = 0; round < 3; round += 1) {
    const pages = await client.pullAll();
    const last = pages[pages.length - 1];
    if (last?.status !== 200) throw new Error(`client "${name}" could not pull: ${last?.status} ${last?.text}`);
    const missing = scopes.filter((s) => typeof client.cursors.get(s) !== 'string');
    if (missing.length === 0) return;
    for (const scope of missing) {
      if (!client.cursors.has(scope)) continue;
      const run = await client.rebuildAll(scope);
      const end = run.pages[run.pages.length - 1];
      if (end?.status !== 200) throw new Error(`client "${name}" could not rebuild ${scope}: ${end?.status} ${end?.text}`);
    }
  }
  const lacking = scopes.filter((s) => typeof client.cursors.get(s) !== 'string');
  if (lacking.length > 0) throw new Error(`client "${name}" holds no cursor for ${lacking.join(', ')} after pulling and rebuilding`);
}

/** The cursors a wire client holds, as a plain object for comparison. */
export function heldCursors(world: SyncWorld, name: string): Record<string, string | null> {
  return Object.fromEntries(world.wire(name).cursors);
}

export const snapshots = new WeakMap<SyncWorld, Map<string, Record<string, string | null>>>();

export function snapshotCursors(world: SyncWorld, name: string): void {
  if (!snapshots.has(world)) snapshots.set(world, new Map());
  snapshots.get(world)?.set(name, heldCursors(world, name));
}

export async function pullPresenting(world: SyncWorld, presenter: string, scope: string, value: string, invalid: boolean, original: string): Promise<void> {
  state(world).presented = { original, value };
  await world.wire(presenter).pull({ [`/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}/cursor`]: value }, { invalid });
}
