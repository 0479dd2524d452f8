/**
 * "That pull response": the one pull answer to a client that the proxy
 * rewrote in this scenario (a change taken out, a digest digit flipped), with
 * what the client was given and what came after it; and the cursors a client
 * under test reported at a labelled moment.
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import { bodyOf, clientIdOf, exchangesIn } from '../exchanges.ts';
import { scopeStates } from '../integrity/context.ts';
import { deliveredBody, type Obj } from '../integrity/oracle.ts';
import type { SyncWorld } from '../world.ts';

export interface TamperedPull {
  exchange: Exchange;
  /** The body the client was given (after the rewrite). */
  body: Obj;
  /** Every exchange of the same client after it, in log order. */
  later: Exchange[];
}

export async function tamperedPull(world: SyncWorld, name: string): Promise<TamperedPull> {
  const proxy = await world.proxy();
  const mine = exchangesIn(proxy.exchanges, { clientId: await clientIdOf(world, name), unfinished: true });
  const rewritten = mine.filter((e) => e.endpoint === 'pull' && e.rewritten !== undefined && e.rewritten.error === undefined);
  if (rewritten.length !== 1) throw new Error(`"that pull response" needs exactly one pull answer to client "${name}" rewritten by the proxy, not ${rewritten.length}`);
  const exchange = rewritten[0] as Exchange;
  const body = deliveredBody(exchange);
  if (body === undefined) throw new Error(`the rewritten pull answer to client "${name}" (exchange #${exchange.seq}) was not delivered as a 200 JSON body`);
  return { exchange, body, later: mine.filter((e) => e.seq > exchange.seq) };
}

/** The cursor `scope` was issued in that pull response; asserted to be there, since every check below compares against it. */
export function issuedCursor(world: SyncWorld, pull: TamperedPull, scope: string): string {
  const cursor = (pull.body.scope_cursors as Record<string, unknown> | undefined)?.[scope];
  world.assert.ok(typeof cursor === 'string', `the rewritten pull response #${pull.exchange.seq} issued a cursor for ${scope}: ${JSON.stringify(pull.body.scope_cursors)}`);
  return cursor as string;
}

/** The cursor presented for `scope` in a pull request, or undefined when the request names no cursor for it. */
export function presentedCursor(exchange: Exchange, scope: string): unknown {
  return (bodyOf(exchange.requestBody)?.scopes as Record<string, { cursor?: unknown }> | undefined)?.[scope]?.cursor;
}

const recorded = new WeakMap<SyncWorld, Map<string, Map<string, string | null>>>();

/** Keeps the cursor of every scope client `name` reports now, under `label`. */
export async function recordCursors(world: SyncWorld, name: string, label: string): Promise<void> {
  const states = await scopeStates(world, name);
  if (states.length === 0) throw new Error(`client "${name}" reports no scope whose cursor could be recorded`);
  const byLabel = recorded.get(world) ?? new Map<string, Map<string, string | null>>();
  byLabel.set(`${name}\u0000${label}`, new Map(states.map((s) => [s.scopeId, s.cursor])));
  recorded.set(world, byLabel);
}

export function recordedCursor(world: SyncWorld, name: string, label: string, scope: string): string | null {
  const cursors = recorded.get(world)?.get(`${name}\u0000${label}`);
  if (cursors === undefined) throw new Error(`no cursors of client "${name}" were recorded as "${label}"`);
  if (!cursors.has(scope)) throw new Error(`client "${name}" reported no scope ${scope} when its cursors were recorded as "${label}"`);
  return cursors.get(scope) ?? null;
}
