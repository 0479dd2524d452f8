/**
 * The requests of "that rebuild" (the attempt the harness client started
 * last) sent again: the next page from the last page's continuation, or the
 * exact bytes of an earlier page's request, as a client whose answer was
 * lost repeats it.
 */

import { latestPagedRebuild } from '../rebuild-runs/paged.ts';
import type { Reply } from '../reply.ts';
import type { SyncWorld } from '../world.ts';

/** Asks for the page after the last one of that rebuild; the answer joins the attempt's pages. */
export async function requestNextPage(world: SyncWorld, name: string): Promise<Reply> {
  const attempt = latestPagedRebuild(world, name);
  const last = attempt.pages[attempt.pages.length - 1] as Reply;
  if (last.status !== 200 || last.json?.has_more !== true) throw new Error(`the last page of the rebuild of ${attempt.scope} (${last.status}) has no continuation to follow: ${last.text.slice(0, 300)}`);
  const reply = await world.wire(name).rebuildPage(attempt.scope, attempt.rebuildId, last.json.cursor, attempt.limit);
  attempt.pages.push(reply);
  return reply;
}

/** The request that fetched page `page` (1-based) of that rebuild, and the answer it got then. */
export function pageExchange(world: SyncWorld, name: string, page: number): Reply {
  const attempt = latestPagedRebuild(world, name);
  const first = attempt.pages[page - 1];
  if (first === undefined) throw new Error(`the rebuild of ${attempt.scope} by client "${name}" has ${attempt.pages.length} pages so far, no page ${page}`);
  return first;
}

/** Sends the exact bytes of the request for page `page` again; the answer is the scenario's latest reply. */
export async function repeatRebuildRequest(world: SyncWorld, name: string, page: number): Promise<Reply> {
  const first = pageExchange(world, name, page);
  return world.wire(name).post('/sync/rebuild', undefined, { raw: first.requestText, endpoint: 'rebuild' });
}
