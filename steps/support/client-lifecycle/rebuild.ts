/**
 * Rebuilds as the client under test carries them out: a rebuild the server
 * asks for, the page limit the application configures, the attempt the client
 * keeps across a failure, and what it installs at the end. Under default
 * configuration the application only ever calls syncNow.
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import type { SyncWorld } from '../world.ts';
import { deliveredStatus, failedExchange, lastFailure } from './observe.ts';
import { type Body, bodyOf, exchangesIn } from '../exchanges.ts';

export function rebuildsOf(exchanges: Exchange[], scope: string): Exchange[] {
  return exchanges.filter((e) => e.endpoint === 'rebuild' && bodyOf(e.requestBody)?.scope === scope);
}

export function answerOf(exchange: Exchange): Body {
  return deliveredStatus(exchange) === 200 ? bodyOf((exchange.delivered as { body: Buffer }).body) : undefined;
}

export async function localKeys(world: SyncWorld, name: string, table: string): Promise<string[]> {
  const key = world.model.keyColumn(table);
  const client = await world.process(name);
  const { rows } = await client.call<{ rows: { id: string }[] }>('query', { sql: `SELECT CAST("${key.name}" AS TEXT) AS id FROM "${table}" ORDER BY 1` });
  return rows.map((r) => r.id);
}

/** After the arranged 409 on a rebuild page, the next rebuild request of that scope starts over with a new attempt. */
export async function checkRestart(world: SyncWorld, name: string, scope: string): Promise<void> {
  const failure = lastFailure(world, name);
  const proxy = await world.proxy();
  const failed = failedExchange(proxy, failure);
  world.assert.ok(failed !== undefined && deliveredStatus(failed) === 409, 'the rebuild request to be refused with 409 was never sent');
  const next = rebuildsOf(exchangesIn(proxy.exchanges, { clientId: failure.clientId, from: failed.seq, unfinished: true }), scope)[0];
  world.assert.ok(next !== undefined, `client "${name}" sent no rebuild request for ${scope} after the 409`);
  const request = bodyOf(next.requestBody);
  world.assert.equal(request.cursor, null, 'cursor of the first rebuild request after the 409');
  world.assert.notEqual(request.rebuild_id, bodyOf(failed.requestBody).rebuild_id, 'rebuild_id of the first rebuild request after the 409');
}
