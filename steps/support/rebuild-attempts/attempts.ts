/**
 * The rebuild attempts a client under test carried out, as the proxy saw
 * them: an attempt begins with a rebuild request whose cursor is null and
 * goes on with the continuation requests of the same rebuild ID. What each
 * attempt was given (its pages, its final cursor and checksum) is read from
 * what the proxy delivered, after any rewrite, because that is what the
 * client acted on.
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import { type Body, bodyOf, clientIdOf, deliveredOf, exchangesIn } from '../exchanges.ts';
import type { SyncWorld } from '../world.ts';

export interface RebuildAttempt {
  rebuildId: unknown;
  /** Every rebuild request of the attempt, in the order it reached the proxy. */
  exchanges: Exchange[];
  /** The final page the client was given (status 200, has_more false), if it came. */
  finalPage: Body | undefined;
}

/** The 200 body the client was given for this exchange, or undefined. */
export function deliveredBody(exchange: Exchange): Body | undefined {
  const answer = deliveredOf(exchange);
  return answer?.status === 200 ? bodyOf(answer.body) : undefined;
}

/** The client's rebuild attempts of `scope`, split at every request that starts over with cursor null. */
export async function rebuildAttempts(world: SyncWorld, name: string, scope: string): Promise<RebuildAttempt[]> {
  const proxy = await world.proxy();
  const rebuilds = exchangesIn(proxy.exchanges, { clientId: await clientIdOf(world, name), endpoints: ['rebuild'] }).filter((e) => bodyOf(e.requestBody)?.scope === scope);
  const attempts: RebuildAttempt[] = [];
  for (const exchange of rebuilds) {
    const request = bodyOf(exchange.requestBody);
    const current = attempts[attempts.length - 1];
    if (request?.cursor === null || current === undefined) attempts.push({ rebuildId: request?.rebuild_id, exchanges: [exchange], finalPage: undefined });
    else current.exchanges.push(exchange);
  }
  for (const attempt of attempts) {
    for (const exchange of attempt.exchanges) {
      const body = deliveredBody(exchange);
      if (body?.has_more === false) attempt.finalPage = body;
    }
  }
  return attempts;
}

const ORDINAL: Record<string, number> = { first: 0, second: 1, third: 2 };

/** The attempt named by its ordinal ("first", "second"), which must have been given its final page. */
export async function attemptWithFinalPage(world: SyncWorld, name: string, scope: string, ordinal: string): Promise<RebuildAttempt & { finalPage: Body }> {
  const index = ORDINAL[ordinal];
  if (index === undefined) throw new Error(`"${ordinal}" names no attempt (first, second or third)`);
  const attempts = await rebuildAttempts(world, name, scope);
  const attempt = attempts[index];
  world.assert.ok(attempt !== undefined, `client "${name}" made ${attempts.length} rebuild attempts of ${scope}, no ${ordinal} one`);
  world.assert.ok(attempt.finalPage !== undefined, `the ${ordinal} rebuild attempt of ${scope} by client "${name}" was given no final page`);
  return attempt as RebuildAttempt & { finalPage: Body };
}

/** Every pull request the client sent, with the scope cursors it presented. */
export async function presentedPullCursors(world: SyncWorld, name: string): Promise<{ seq: number; cursors: Record<string, unknown> }[]> {
  const proxy = await world.proxy();
  return exchangesIn(proxy.exchanges, { clientId: await clientIdOf(world, name), endpoints: ['pull'] }).map((e) => {
    const scopes = (bodyOf(e.requestBody)?.scopes ?? {}) as Record<string, { cursor?: unknown }>;
    return { seq: e.seq, cursors: Object.fromEntries(Object.entries(scopes).map(([scope, entry]) => [scope, entry?.cursor])) };
  });
}
