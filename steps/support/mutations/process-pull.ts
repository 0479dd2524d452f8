/**
 * "Client X pulls" for a client under test: the client is asked to sync (it
 * has no pull-only call; with nothing to send, a sync is a pull), and every
 * pull answer it was delivered during that sync becomes one of the
 * scenario's recorded replies, so the response steps read them like the
 * answers to the harness's own pulls.
 */
import { deliveredOf, exchangesOf } from '../exchanges.ts';
import type { SyncWorld } from '../world.ts';

export async function processPulls(world: SyncWorld, name: string): Promise<void> {
  const from = (await world.proxy()).exchanges.length;
  await world.inSyncWindow(name, 'syncs', () => world.syncProcess(name));
  for (const exchange of await exchangesOf(world, name, { endpoints: ['pull'], from })) {
    const answer = deliveredOf(exchange);
    if (answer === undefined) continue;
    const text = answer.body.toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const headers = new Headers();
    for (const [header, value] of Object.entries(answer.headers)) if (typeof value === 'string') headers.set(header, value);
    world.recordReply({ endpoint: 'pull', status: answer.status, text, json, headers, requestText: exchange.requestBody.toString('utf8') });
  }
}
