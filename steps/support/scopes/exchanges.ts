/**
 * The proxy records seen per client: which requests a client sent, what it was
 * answered, and the scope set those answers assigned to it. A client is
 * recognised by the `client_id` of its request bodies, so the same helpers
 * serve the harness's own protocol clients and client adapter processes.
 */
import type { WireProxy } from '../../../harness/proxy/proxy.ts';
import type { Exchange } from '../../../harness/proxy/records.ts';
import { bodyOf, deliveredOf, exchangesIn } from '../exchanges.ts';

// biome-ignore lint/suspicious/noExplicitAny: wire bodies are inspected member by member
export type Loose = any;

export interface ClientExchange {
  seq: number;
  endpoint: Exchange['endpoint'];
  request: Loose;
  /** The status the client was given; undefined when delivery failed or is still pending. */
  status: number | undefined;
  response: Loose;
}

/** Every completed protocol exchange whose request names `clientId`, in the order they reached the proxy. */
export function exchangeSummaries(proxy: WireProxy, clientId: string): ClientExchange[] {
  return exchangesIn(proxy.exchanges, { clientId })
    .filter((exchange) => exchange.endpoint !== 'other')
    .map((exchange) => {
      const delivered = deliveredOf(exchange);
      return { seq: exchange.seq, endpoint: exchange.endpoint, request: bodyOf(exchange.requestBody), status: delivered?.status, response: bodyOf(delivered?.body) };
    });
}

/** The scope delta a successful connect or pull answer carries, or undefined for any other exchange. */
export function scopeDelta(exchange: ClientExchange): { add: string[]; remove: string[] } | undefined {
  if (exchange.status !== 200 || exchange.response === undefined) return undefined;
  const delta = exchange.endpoint === 'connect' ? exchange.response.scopes : exchange.endpoint === 'pull' ? exchange.response.scope_updates : undefined;
  if (delta === undefined) return undefined;
  return { add: (delta.add ?? []).map((a: { id: string }) => a.id), remove: delta.remove ?? [] };
}

/** The assigned set after applying every delta the client was given, in order. */
export function assignedSet(exchanges: readonly ClientExchange[]): Set<string> {
  const set = new Set<string>();
  for (const exchange of exchanges) {
    const delta = scopeDelta(exchange);
    if (!delta) continue;
    for (const scope of delta.remove) set.delete(scope);
    for (const scope of delta.add) set.add(scope);
  }
  return set;
}

/** Scope keys a connect (`known_scopes`) or pull (`scopes`) request presents. */
export function presentedScopes(exchange: ClientExchange): string[] {
  const map = exchange.endpoint === 'connect' ? exchange.request?.known_scopes : exchange.endpoint === 'pull' ? exchange.request?.scopes : undefined;
  return map && typeof map === 'object' ? Object.keys(map) : [];
}

/** Sorted by unsigned UTF-8 bytes, the order the protocol lists scope IDs in. */
export function byteSorted(scopes: Iterable<string>): string[] {
  return [...scopes].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/** Reads a step's list of quoted names: `"a", "b" and "c"`. */
export function quotedList(text: string): string[] {
  return [...text.matchAll(/"([^"]*)"/g)].map((m) => m[1] as string);
}
