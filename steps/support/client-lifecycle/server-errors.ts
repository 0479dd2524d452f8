/**
 * The server's side of failure reporting: a failed request is answered with
 * the error envelope alone, says whether retrying can help, carries only the
 * context members its code allows, and serves no part of a success body.
 */
import type { SyncWorld } from '../world.ts';

export function errorOf(world: SyncWorld): Record<string, unknown> {
  const body = world.lastReply().json;
  world.assert.ok(body !== null && typeof body === 'object' && typeof body.error === 'object' && body.error !== null, `the answer carries no error object: ${world.lastReply().text}`);
  return body.error as Record<string, unknown>;
}
