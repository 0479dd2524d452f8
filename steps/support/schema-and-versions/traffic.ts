/**
 * A named client's own traffic in the proxy's exchange log. Every sync
 * request carries `client_id`, so a client's requests are the exchanges whose
 * body names its id. Every `client "X" syncs` step leaves a sync window in
 * the World (where in the log it began and ended, what it returned), so later
 * steps can speak of "that sync" or "those syncs".
 */
import { type Exchange, isResponse } from '../../../harness/proxy/records.ts';
import type { Reply } from '../reply.ts';
import type { SyncWindow, SyncWorld } from '../world.ts';

/** The last sync step of client `name` that ran, or the last `count` of them. */
export function lastSyncs(world: SyncWorld, name: string, count = 1): SyncWindow[] {
  const runs = world.syncWindows.filter((w) => w.client === name && w.step === 'syncs' && w.to !== undefined);
  if (runs.length < count) throw new Error(`client "${name}" ran ${runs.length} sync steps in this scenario, fewer than ${count}`);
  return runs.slice(-count);
}

/** Makes a recorded exchange the scenario's "response", for the core response assertions. */
export function adoptAsReply(world: SyncWorld, exchange: Exchange): void {
  if (!isResponse(exchange.delivered)) throw new Error(`exchange #${exchange.seq} (${exchange.path}) got no response`);
  const headers = new Headers();
  for (const [key, value] of Object.entries(exchange.delivered.headers)) {
    if (typeof value === 'string') headers.set(key, value);
    else if (Array.isArray(value)) for (const v of value) headers.append(key, v);
  }
  const text = exchange.delivered.body.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const reply: Reply = { endpoint: exchange.endpoint, status: exchange.delivered.status, text, json, headers, requestText: exchange.requestBody.toString('utf8') };
  world.recordReply(reply);
}
