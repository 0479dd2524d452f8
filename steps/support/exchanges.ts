/**
 * Questions asked of the proxy's exchange records, each answered once here:
 * which client id a named client uses on the wire, what a recorded body holds
 * as JSON, which exchanges a client sent (all of them, some endpoints, a range
 * of the log such as one sync's window), and what the server answered.
 */
import { type Exchange, isResponse, type RecordedResponse } from '../../harness/proxy/records.ts';
import { parseLoosely } from '../../harness/proxy/validation.ts';
import type { SyncWorld } from './world.ts';

/** A recorded body read as member-by-member JSON. */
// biome-ignore lint/suspicious/noExplicitAny: recorded bodies are read member by member
export type Body = any;

/** A recorded body parsed as JSON, or undefined when it is absent, empty or not JSON. */
export function bodyOf(bytes: Uint8Array | undefined): Body {
  return bytes === undefined ? undefined : parseLoosely(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}

/** A recorded body parsed as a JSON object, or undefined when it is anything else. */
export function objectBodyOf(bytes: Uint8Array | undefined): Record<string, unknown> | undefined {
  const value: unknown = bodyOf(bytes);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** The client id client `name` uses on the wire, whichever form it takes (the client under test or the harness's own). */
export async function clientIdOf(world: SyncWorld, name: string): Promise<string> {
  if (world.isProcess(name)) return (await world.process(name)).clientId;
  return world.wire(name).clientId;
}

export interface ExchangeFilter {
  /** Only these endpoints. */
  endpoints?: readonly Exchange['endpoint'][];
  /** Only requests whose body names this client id (every client when absent). */
  clientId?: string;
  /** With `clientId`: also requests whose body names no client, sent with this Authorization header. */
  orAuthorization?: string;
  /** The part of the log from this index (inclusive) to `to` (exclusive), as `Array.slice` takes them. */
  from?: number;
  to?: number;
  /** Also exchanges still in flight (by default only those that got their answer or failure). */
  unfinished?: boolean;
}

/** The exchanges of a log that pass the filter, in log order. */
export function exchangesIn(exchanges: readonly Exchange[], filter: ExchangeFilter = {}): Exchange[] {
  const { endpoints, clientId, orAuthorization, from, to, unfinished } = filter;
  return exchanges.slice(from ?? 0, to).filter((e) => {
    if (!unfinished && !e.done) return false;
    if (endpoints !== undefined && !endpoints.includes(e.endpoint)) return false;
    if (clientId === undefined) return true;
    const sender = bodyOf(e.requestBody)?.client_id;
    return sender === clientId || (orAuthorization !== undefined && sender === undefined && e.requestHeaders.authorization === orAuthorization);
  });
}

/**
 * The exchanges client `name` sent, in order (matched on the request's
 * client_id), narrowed by the filter. With `orUserCredential`, a request whose
 * body names no client counts as the client's when it carries its user's
 * credential (scenarios that ask this give that user no other client).
 */
export async function exchangesOf(world: SyncWorld, name: string, filter: Omit<ExchangeFilter, 'clientId' | 'orAuthorization'> & { orUserCredential?: boolean } = {}): Promise<Exchange[]> {
  const { orUserCredential, ...rest } = filter;
  const clientId = await clientIdOf(world, name);
  if (!orUserCredential) return exchangesIn((await world.proxy()).exchanges, { ...rest, clientId });
  const userId = world.isProcess(name) ? (await world.process(name)).userId : world.wire(name).userId;
  const orAuthorization = `Bearer ${await (await world.server()).token(userId)}`;
  return exchangesIn((await world.proxy()).exchanges, { ...rest, clientId, orAuthorization });
}

/** The server's own answer (the last one when the request was delivered twice). */
export function upstreamOf(exchange: Exchange): RecordedResponse | undefined {
  return exchange.upstream[exchange.upstream.length - 1];
}

/** What the client was given (after any proxy rewrite), or undefined when it got no answer. */
export function deliveredOf(exchange: Exchange): RecordedResponse | undefined {
  return isResponse(exchange.delivered) ? exchange.delivered : undefined;
}
