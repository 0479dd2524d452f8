/**
 * The harness speaking the protocol as a named client: connecting, pulling,
 * pushing and rebuilding with the state it keeps, plus raw requests. A
 * background step that brings a client to a known state drives the client
 * adapter process instead when the scenario uses that client as a process.
 */
import { type Exchange, isResponse } from '../../harness/proxy/records.ts';
import type { SyncWorld } from './world.ts';

/** Brings client `name` of `user` to "connected, every assigned scope rebuilt", in whichever form the scenario uses it. */
export async function connectedAndRebuilt(world: SyncWorld, name: string, user: string): Promise<void> {
  world.clientUsers.set(name, user);
  if (world.isProcess(name)) {
    const proxy = await world.proxy();
    const from = proxy.exchanges.length;
    const result = await world.syncProcess(name);
    if ('error' in result) throw new Error(`client "${name}" could not sync: ${result.error.message}`);
    if (result.completion !== 'idle') {
      throw new Error(`client "${name}" ended its first sync "${result.completion}" in state ${result.status}, not idle; the proxy delivered: ${deliveries(proxy.exchanges.slice(from))}`);
    }
    return;
  }
  await world.readyServer();
  await world.wire(name, user).connectAndRebuild();
}

/** What the proxy gave the client for each request, e.g. "connect 200, rebuild 503 capture_pending", so a failed setup names its cause. */
function deliveries(exchanges: readonly Exchange[]): string {
  if (exchanges.length === 0) return 'no request';
  return exchanges
    .map((exchange) => {
      const delivered = exchange.delivered;
      if (delivered === undefined) return `${exchange.endpoint} (no answer yet)`;
      if (!isResponse(delivered)) return `${exchange.endpoint} ${delivered.failure}: ${delivered.detail}`;
      if (delivered.status < 400) return `${exchange.endpoint} ${delivered.status}`;
      let code = '';
      try {
        code = String((JSON.parse(delivered.body.toString('utf8')) as { error?: { code?: string; message?: string } }).error?.code ?? '');
      } catch {
        code = delivered.body.subarray(0, 80).toString('utf8');
      }
      return `${exchange.endpoint} ${delivered.status} ${code}`;
    })
    .join(', ');
}
