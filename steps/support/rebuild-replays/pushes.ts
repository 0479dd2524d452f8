/**
 * Pushes a harness client makes between the pages of a rebuild, kept with
 * their exact request bytes and first answer, so "that push batch" can be
 * sent again byte for byte and its replay compared with the first answer.
 */
import type { Reply } from '../reply.ts';
import type { Json } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

export interface RememberedPush {
  client: string;
  requestText: string;
  first: Reply;
}

const pushes = new WeakMap<SyncWorld, RememberedPush[]>();

export async function pushRemembered(world: SyncWorld, name: string, body: Json): Promise<Reply> {
  const reply = await world.wire(name).post('/sync/push', body, { endpoint: 'push' });
  const list = pushes.get(world) ?? [];
  list.push({ client: name, requestText: reply.requestText, first: reply });
  pushes.set(world, list);
  return reply;
}

/** "That push batch": the last batch client `name` pushed in this scenario. */
export function lastRemembered(world: SyncWorld, name: string): RememberedPush {
  const push = [...(pushes.get(world) ?? [])].reverse().find((p) => p.client === name);
  if (push === undefined) throw new Error(`client "${name}" pushed no batch earlier in this scenario`);
  return push;
}

/** The push first sent with exactly these request bytes, if any. */
export function rememberedByRequest(world: SyncWorld, requestText: string): RememberedPush | undefined {
  return (pushes.get(world) ?? []).find((p) => p.requestText === requestText);
}

/**
 * Sends a push whose answer the proxy cuts off after the server has answered
 * (and committed), so the harness client never reads it, as when a response
 * is lost on the way back.
 */
export async function pushWithAnswerLost(world: SyncWorld, name: string, body: Json): Promise<void> {
  await world.readyServer();
  const proxy = await world.proxy();
  const clientId = world.wire(name).clientId;
  proxy.inject({ endpoint: 'push', when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === clientId, times: 1, fault: { kind: 'drop-response' } });
  let answered: Reply | undefined;
  try {
    answered = await world.wire(name).post('/sync/push', body, { endpoint: 'push' });
  } catch {
    // The cut connection is the lost answer this step arranges.
    return;
  }
  throw new Error(`the push of client "${name}" was meant to lose its answer, but it got one: ${answered.status} ${answered.text.slice(0, 300)}`);
}
