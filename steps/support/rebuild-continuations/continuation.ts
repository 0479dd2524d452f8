/**
 * The continuation of "that rebuild" (the attempt a harness client started
 * last) presented altered, carried into another context or with another page
 * limit. These requests never join the attempt's pages, so the genuine
 * continuation can still be followed afterwards; the token each one presented
 * is kept for the checks on what the refusal repeats.
 */
import { alteredBase64url } from '../opaque-tokens/alteration.ts';
import { latestPagedRebuild, type PagedRebuild, pagedRebuild } from '../rebuild-runs/paged.ts';
import type { Reply } from '../reply.ts';
import type { Json } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

interface ContinuationState {
  /** Error bodies recorded under a label, as the server sent them. */
  errorBodies: Map<string, string>;
  /** The cursor text the last tampered request presented. */
  presented: string | undefined;
}

const states = new WeakMap<SyncWorld, ContinuationState>();

export function continuationState(world: SyncWorld): ContinuationState {
  let state = states.get(world);
  if (state === undefined) {
    state = { errorBodies: new Map(), presented: undefined };
    states.set(world, state);
  }
  return state;
}

/** The continuation of the newest 200 page that has more to come: the genuine token the next request would present. */
export function genuineContinuation(attempt: PagedRebuild): string {
  const page = [...attempt.pages].reverse().find((p) => p.status === 200 && p.json?.has_more === true);
  const cursor = page?.json?.cursor;
  if (typeof cursor !== 'string') throw new Error(`the rebuild of ${attempt.scope} by client "${attempt.client}" has no page with a continuation to present`);
  return cursor;
}

/** The continuation altered as the feature's Examples name it. */
export function alteredContinuation(world: SyncWorld, name: string, token: string, alteration: string): string {
  const altered = alteredBase64url(token, alteration);
  if (altered !== undefined) return altered;
  const incremental = /^replaced by the incremental cursor "([^"]+)" holds for scope "([^"]+)"$/.exec(alteration);
  if (incremental !== null) {
    const [, holder, scope] = incremental as unknown as [string, string, string];
    const cursor = world.wire(holder).cursors.get(scope);
    if (typeof cursor !== 'string') throw new Error(`harness client "${holder}" holds no incremental cursor for ${scope}`);
    return cursor;
  }
  throw new Error(`"${alteration}" is no alteration of a continuation these steps know (client "${name}")`);
}

/** Sends the next request of that rebuild of client `name` with `cursor` in place of the genuine continuation; the answer is the scenario's latest reply. */
export async function presentContinuation(world: SyncWorld, name: string, cursor: string): Promise<Reply> {
  const attempt = latestPagedRebuild(world, name);
  continuationState(world).presented = cursor;
  return world.wire(name).rebuildPage(attempt.scope, attempt.rebuildId, cursor, attempt.limit, undefined, { invalid: true });
}

/** Asks for the page after the newest one of that rebuild with another page limit; only a 200 answer joins the attempt's pages. */
export async function requestNextPageWithLimit(world: SyncWorld, name: string, limit: number): Promise<Reply> {
  const attempt = latestPagedRebuild(world, name);
  const reply = await world.wire(name).rebuildPage(attempt.scope, attempt.rebuildId, genuineContinuation(attempt), limit, undefined, { invalid: limit !== attempt.limit });
  if (reply.status === 200) attempt.pages.push(reply);
  return reply;
}

/**
 * Client `sender` sends the next request of client `owner`'s rebuild of
 * `scope` (its rebuild ID, its genuine continuation, its limit) in its own
 * name, with the members the feature changes.
 */
export async function carryContinuation(world: SyncWorld, sender: string, owner: string, scope: string, change: string): Promise<Reply> {
  const attempt = pagedRebuild(world, owner, scope);
  const patch: Json = {};
  const setId = /^"rebuild_id" set to "([^"]+)"$/.exec(change);
  const otherScope = /^"scope" set to "([^"]+)" and "rebuild_id" of the "([^"]+)" rebuild$/.exec(change);
  if (setId !== null) patch.rebuild_id = setId[1];
  else if (otherScope !== null) {
    if (otherScope[1] !== otherScope[2]) throw new Error(`the scope and the rebuild_id come from the same rebuild here, not ${otherScope[1]} and ${otherScope[2]}`);
    patch.scope = otherScope[1];
    patch.rebuild_id = pagedRebuild(world, owner, otherScope[1] as string).rebuildId;
  } else if (change !== 'no other change') throw new Error(`"${change}" is no change to a carried continuation these steps know`);
  continuationState(world).presented = genuineContinuation(attempt);
  return world.wire(sender).rebuildPage(attempt.scope, attempt.rebuildId, genuineContinuation(attempt), attempt.limit, patch, { invalid: true });
}
