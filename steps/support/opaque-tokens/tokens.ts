/**
 * Shared helpers of the opaque-token steps: finding a named client's
 * requests in the proxy records, and putting the alias relay in front of the
 * server (removed again after the scenario).
 */
import { AliasRelay } from '../../../harness/proxy/alias-relay.ts';
import { type Exchange, isResponse } from '../../../harness/proxy/records.ts';
import { type Body, bodyOf } from '../exchanges.ts';
import type { SyncWorld } from '../world.ts';

/** What the client was given for an exchange (undefined when it got no response). */
export function deliveredBody(exchange: Exchange): { status: number; body: Body; bytes: Buffer } | undefined {
  const delivered = exchange.delivered;
  if (!isResponse(delivered)) return undefined;
  return { status: delivered.status, body: bodyOf(delivered.body), bytes: delivered.body };
}

/** Exchanges paired with their parsed request, for steps that read both. */
export function withRequests(exchanges: readonly Exchange[]): { exchange: Exchange; request: Body }[] {
  return exchanges.map((exchange) => ({ exchange, request: bodyOf(exchange.requestBody) }));
}

export const relays = new WeakMap<SyncWorld, AliasRelay>();

/**
 * The scenario's alias relay, put between the proxy and the server on first
 * use. What the client received before then is replayed into it, so it knows
 * the rows of every scope when it has to recompute a scope checksum.
 */
export async function aliasRelay(world: SyncWorld): Promise<AliasRelay> {
  const existing = relays.get(world);
  if (existing) return existing;
  const server = await world.readyServer();
  const proxy = await world.proxy();
  const manifest = async () => {
    const response = await fetch(`${server.baseUrl}/sync/schema`, { signal: AbortSignal.timeout(world.deadlineMs) });
    const body = (await response.json()) as { manifest?: unknown };
    return body.manifest;
  };
  const relay = new AliasRelay(server.baseUrl, manifest);
  relays.set(world, relay);
  await relay.start();
  const history = proxy.exchanges.flatMap((e) => {
    const answer = e.upstream[e.upstream.length - 1];
    return e.done && answer !== undefined ? [{ path: e.path.split('?')[0] ?? e.path, request: e.requestBody, status: answer.status, response: answer.body }] : [];
  });
  await relay.replayHistory(history);
  proxy.retarget(relay.url);
  return relay;
}

/** The relay if one was installed in this scenario. */
export function installedRelay(world: SyncWorld): AliasRelay | undefined {
  return relays.get(world);
}
