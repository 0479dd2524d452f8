/**
 * A seeded client on the wire: what its requests carry (credential, the
 * seed's schema, the receipts), how the server answers them (a receipt
 * converted to a cursor or refused, a scope no longer assigned), and that
 * the seed grants nothing outside the ordinary connect, pull, push and
 * rebuild protocol.
 */
import { type Exchange, isResponse } from '../../../harness/proxy/records.ts';
import { exchangesOf, objectBodyOf } from '../exchanges.ts';
import type { SyncWorld } from '../world.ts';

export type Obj = Record<string, unknown>;

export function answerOf(e: Exchange): { status: number; body: Obj | undefined } | undefined {
  return isResponse(e.delivered) ? { status: e.delivered.status, body: objectBodyOf(e.delivered.body) } : undefined;
}

/** Per scenario: the client whose connect the "that connect" steps talk about. */
export const focus = new WeakMap<SyncWorld, string>();

export async function connectOf(world: SyncWorld, name?: string): Promise<{ exchange: Exchange; request: Obj; status: number; response: Obj | undefined }> {
  const who = name ?? focus.get(world) ?? [...world.clients.keys()].find((c) => c === 'S');
  if (who === undefined) throw new Error('no seeded client has connected in this scenario');
  focus.set(world, who);
  const exchange = (await exchangesOf(world, who, { orUserCredential: true })).find((e) => e.endpoint === 'connect');
  if (exchange === undefined) throw new Error(`client "${who}" sent no connect request`);
  const answer = answerOf(exchange);
  if (answer === undefined) throw new Error(`the connect of client "${who}" got no response`);
  return { exchange, request: objectBodyOf(exchange.requestBody) ?? {}, status: answer.status, response: answer.body };
}

export function addedScopes(response: Obj | undefined): { id: string; cursor: unknown }[] {
  return ((response?.scopes as Obj | undefined)?.add ?? []) as { id: string; cursor: unknown }[];
}
