/**
 * "That pull response", one notion for every feature: the pull answer
 * delivered to a client that the scenario singled out. A step may pick it
 * from the proxy's record (a page of a given shape it found); when no step
 * picked one for the client, it is the pull answer to that client the proxy
 * rewrote in this scenario, which must be exactly one. Comes with the body
 * the client was given and everything the client sent after it.
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import { bodyOf, exchangesOf } from '../exchanges.ts';
import { deliveredBody, type Obj } from '../integrity/oracle.ts';
import type { SyncWorld } from '../world.ts';

export interface ThatPull {
  exchange: Exchange;
  /** The body the client was given (after any rewrite). */
  body: Obj;
  /** Every exchange of the same client after it, in log order, including one still held in flight. */
  later: Exchange[];
}

const picked = new WeakMap<SyncWorld, Map<string, Exchange>>();

/** Makes `exchange` "that pull response" of client `name` for the steps after this one. */
export function pickPullResponse(world: SyncWorld, name: string, exchange: Exchange): void {
  if (exchange.endpoint !== 'pull') throw new Error(`exchange #${exchange.seq} is a ${exchange.endpoint} exchange, not a pull`);
  const byClient = picked.get(world) ?? new Map<string, Exchange>();
  byClient.set(name, exchange);
  picked.set(world, byClient);
}

export async function thatPullResponse(world: SyncWorld, name: string): Promise<ThatPull> {
  const mine = await exchangesOf(world, name, { unfinished: true });
  let exchange = picked.get(world)?.get(name);
  if (exchange === undefined) {
    const rewritten = mine.filter((e) => e.endpoint === 'pull' && e.rewritten !== undefined && e.rewritten.error === undefined);
    if (rewritten.length !== 1) throw new Error(`"that pull response" of client "${name}": no step picked one, and the proxy rewrote ${rewritten.length} pull answers to it, not exactly one`);
    exchange = rewritten[0] as Exchange;
  }
  const body = deliveredBody(exchange);
  if (body === undefined) throw new Error(`"that pull response" of client "${name}" (exchange #${exchange.seq}) was not delivered as a 200 JSON body`);
  const seq = exchange.seq;
  return { exchange, body, later: mine.filter((e) => e.seq > seq) };
}

/** The cursor `scope` was issued in that pull response; asserted to be there, since every check using it compares against it. */
export function issuedCursor(world: SyncWorld, pull: ThatPull, scope: string): string {
  const cursor = (pull.body.scope_cursors as Obj | undefined)?.[scope];
  world.assert.ok(typeof cursor === 'string', `that pull response (#${pull.exchange.seq}) issued a cursor for ${scope}: ${JSON.stringify(pull.body.scope_cursors)}`);
  return cursor as string;
}

/** The cursor presented for `scope` in a pull request, or undefined when the request names no cursor for it. */
export function presentedCursor(exchange: Exchange, scope: string): unknown {
  return (bodyOf(exchange.requestBody)?.scopes as Record<string, { cursor?: unknown }> | undefined)?.[scope]?.cursor;
}
