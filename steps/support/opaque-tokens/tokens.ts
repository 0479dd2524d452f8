/**
 * Shared helpers of the opaque-token steps: finding a named client's
 * requests in the proxy records, and putting the alias relay in front of the
 * server (removed again after the scenario).
 */
import { AliasRelay } from '../../../harness/proxy/alias-relay.ts';
import { type Exchange, isResponse } from '../../../harness/proxy/records.ts';
import type { SyncWorld } from '../world.ts';

/** The client ID a named client uses on the wire, in whichever form the scenario drives it. */
export async function clientIdOf(world: SyncWorld, name: string): Promise<string> {
  if (world.isProcess(name)) return (await world.process(name)).clientId;
  return world.wire(name).clientId;
}

// biome-ignore lint/suspicious/noExplicitAny: request bodies are read member by member
export type Body = any;

/** Parsed JSON of a recorded body, or undefined. */
export function bodyOf(bytes: Buffer | undefined): Body {
  if (bytes === undefined || bytes.length === 0) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** What the client was given for an exchange (undefined when it got no response). */
export function deliveredBody(exchange: Exchange): { status: number; body: Body; bytes: Buffer } | undefined {
  const delivered = exchange.delivered;
  if (!isResponse(delivered)) return undefined;
  return { status: delivered.status, body: bodyOf(delivered.body), bytes: delivered.body };
}

/** Completed exchanges of one client on one endpoint, in order, with their parsed request. */
export async function exchangesOf(world: SyncWorld, name: string, endpoint: Exchange['endpoint']): Promise<{ exchange: Exchange; request: Body }[]> {
  const clientId = await clientIdOf(world, name);
  const proxy = await world.proxy();
  return proxy.exchanges
    .filter((e) => e.endpoint === endpoint && e.done)
    .map((exchange) => ({ exchange, request: bodyOf(exchange.requestBody) }))
    .filter((e) => e.request?.client_id === clientId);
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
