/**
 * A seeded client on the wire: what its requests carry (credential, the
 * seed's schema, the receipts), how the server answers them (a receipt
 * converted to a cursor or refused, a scope no longer assigned), and that
 * the seed grants nothing outside the ordinary connect, pull, push and
 * rebuild protocol.
 */
import { type Exchange, isResponse } from '../../../harness/proxy/records.ts';
import type { SyncWorld } from '../world.ts';

export type Obj = Record<string, unknown>;

export function bodyOf(buffer: Buffer): Obj | undefined {
  try {
    const value = JSON.parse(buffer.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Obj) : undefined;
  } catch {
    return undefined;
  }
}

export function answerOf(e: Exchange): { status: number; body: Obj | undefined } | undefined {
  return isResponse(e.delivered) ? { status: e.delivered.status, body: bodyOf(e.delivered.body) } : undefined;
}

/**
 * Every exchange process client `name` sent, in order: matched on the request's `client_id`, or on its user's
 * credential for a request whose body names no client (the seed scenarios give that user no other client).
 */
export async function exchangesOf(world: SyncWorld, name: string): Promise<Exchange[]> {
  // The harness's own protocol client is matched the same way as an adapter process.
  const { clientId, userId } = world.isProcess(name) ? await world.process(name) : world.wire(name);
  const bearer = `Bearer ${await (await world.server()).token(userId)}`;
  return (await world.proxy()).exchanges.filter((e) => {
    if (!e.done) return false;
    const body = bodyOf(e.requestBody);
    return body?.client_id === clientId || (body?.client_id === undefined && e.requestHeaders.authorization === bearer);
  });
}

/** Per scenario: the client whose connect the "that connect" steps talk about. */
export const focus = new WeakMap<SyncWorld, string>();

export async function connectOf(world: SyncWorld, name?: string): Promise<{ exchange: Exchange; request: Obj; status: number; response: Obj | undefined }> {
  const who = name ?? focus.get(world) ?? [...world.clients.keys()].find((c) => c === 'S');
  if (who === undefined) throw new Error('no seeded client has connected in this scenario');
  focus.set(world, who);
  const exchange = (await exchangesOf(world, who)).find((e) => e.endpoint === 'connect');
  if (exchange === undefined) throw new Error(`client "${who}" sent no connect request`);
  const answer = answerOf(exchange);
  if (answer === undefined) throw new Error(`the connect of client "${who}" got no response`);
  return { exchange, request: bodyOf(exchange.requestBody) ?? {}, status: answer.status, response: answer.body };
}

export function addedScopes(response: Obj | undefined): { id: string; cursor: unknown }[] {
  return ((response?.scopes as Obj | undefined)?.add ?? []) as { id: string; cursor: unknown }[];
}
