/**
 * The rebuild page a client under test was given just before it was killed:
 * the request that asked for it (its rebuild ID and page limit) and the
 * continuation the answer carried. Later steps compare the client's durable
 * attempt and its requests after the restart with this page.
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import { type Body, bodyOf, exchangesOf } from '../exchanges.ts';
import { queueState } from '../mutations/state.ts';
import { deliveredBody } from '../rebuild-attempts/attempts.ts';
import type { SyncWorld } from '../world.ts';

export interface InterruptedPage {
  client: string;
  scope: string;
  request: Body;
  response: Body;
  seq: number;
}

const interrupted = new WeakMap<SyncWorld, InterruptedPage>();

export function rememberInterrupted(world: SyncWorld, page: InterruptedPage): void {
  interrupted.set(world, page);
}

export function interruptedPage(world: SyncWorld, name: string): InterruptedPage {
  const page = interrupted.get(world);
  if (page === undefined || page.client !== name) throw new Error(`no rebuild response to client "${name}" was singled out before this step ("that request", "that response")`);
  return page;
}

/** The client's rebuild exchanges for `scope` that were answered, with the body it was given (undefined when not a 200). */
export async function answeredRebuilds(world: SyncWorld, name: string, scope: string, from = 0, to?: number): Promise<{ exchange: Exchange; request: Body; response: Body }[]> {
  return (await exchangesOf(world, name, { endpoints: ['rebuild'], from, to }))
    .map((exchange) => ({ exchange, request: bodyOf(exchange.requestBody), response: deliveredBody(exchange) }))
    .filter((entry) => entry.request?.scope === scope);
}

/** Where the proxy's log stood when the harness restarted client `name` (its requests from then on are "after the restart"). */
export function restartMark(world: SyncWorld, name: string): number {
  const mark = queueState(world).restartMarks.get(name);
  if (mark === undefined) throw new Error(`client "${name}" was not restarted by the harness in this scenario`);
  return mark;
}
