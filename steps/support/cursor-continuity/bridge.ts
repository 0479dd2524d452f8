/**
 * What a schema-changing connect of the harness client bridged: the
 * replacement map (`scope_cursor_updates`) of the last connect answer, the
 * cursors recorded before it, and pulls that present a chosen mix of both.
 */
import type { Reply } from '../reply.ts';
import { recordedCursors } from '../scope-cursors/cursors.ts';
import type { Obj } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

/** The last connect answer of the scenario, which must be a 200. */
export function lastConnect(world: SyncWorld): Reply {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'connect');
  if (reply === undefined) throw new Error('no connect was answered in this scenario');
  world.assert.equal(reply.status, 200, `the last connect was answered ${reply.status}: ${reply.text.slice(0, 400)}`);
  return reply;
}

/** The replacement map of the last connect answer. */
export function replacements(world: SyncWorld): Obj {
  const map = lastConnect(world).json?.scope_cursor_updates;
  world.assert.ok(map !== null && typeof map === 'object' && !Array.isArray(map), `the last connect has an object "scope_cursor_updates": ${lastConnect(world).text.slice(0, 400)}`);
  return map as Obj;
}

/** The quoted names of a step's text, in order. */
export const quotedNames = (text: string): string[] => [...text.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);

/**
 * One pull page of harness client `name` under its installed schema (which
 * must be `version`), presenting for each scope the cursor `choose` picks, or
 * the one the client holds (after a connect: its replacement) where it picks none.
 */
export async function pullPresenting(world: SyncWorld, name: string, version: number, choose: (scope: string) => string | null | undefined): Promise<Reply> {
  const client = world.wire(name);
  if (client.schema.version !== version) throw new Error(`client "${name}" has schema version ${client.schema.version} installed, not ${version}`);
  const scopes: Obj = {};
  for (const [scope, held] of client.cursors) {
    const picked = choose(scope);
    scopes[scope] = { cursor: picked === undefined ? held : picked };
  }
  return client.pull({ '/scopes': scopes });
}

/** The cursor recorded for `scope` under `label`. */
export function recordedCursor(world: SyncWorld, label: string, scope: string): string {
  const cursor = recordedCursors(world, label).get(scope);
  if (typeof cursor !== 'string') throw new Error(`no cursor of scope ${scope} was recorded as "${label}"`);
  return cursor;
}
