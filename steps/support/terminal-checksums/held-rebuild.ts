/**
 * A rebuild held in flight: the proxy forwards the client's next rebuild
 * request and keeps the answer back (a `pause` fault), so the client sits
 * waiting on its first rebuild page while the harness inspects what it
 * installed from the pull before. From the client's side that is the same as
 * a request not yet answered; the server's answer changes nothing it holds.
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import { bodyOf, clientIdOf, exchangesIn } from '../exchanges.ts';
import { startSync } from '../mutations/holds.ts';
import { scopesState } from '../scopes/state.ts';
import type { SyncWorld } from '../world.ts';

export async function holdNextRebuild(world: SyncWorld, name: string): Promise<void> {
  await world.readyServer();
  const proxy = await world.proxy();
  const clientId = await clientIdOf(world, name);
  proxy.inject({ endpoint: 'rebuild', times: 1, when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === clientId, fault: { kind: 'pause' } });
}

/** Starts a sync of client `name` and returns at once; the release step waits for it to end. */
export async function startSyncing(world: SyncWorld, name: string): Promise<void> {
  const { running } = await startSync(world, name);
  scopesState(world).started.set(name, running);
}

/** Waits until the held answer is a rebuild of `scope` by client `name`, and returns that exchange. */
export async function heldRebuildOf(world: SyncWorld, name: string, scope: string): Promise<Exchange> {
  const proxy = await world.proxy();
  await proxy.whenHeld(world.deadlineMs);
  const clientId = await clientIdOf(world, name);
  const inFlight = exchangesIn(proxy.exchanges, { clientId, endpoints: ['rebuild'], unfinished: true }).filter((e) => !e.done);
  if (inFlight.length !== 1) throw new Error(`expected one rebuild request of client "${name}" held by the proxy, found ${inFlight.length}`);
  const held = inFlight[0] as Exchange;
  const asked = bodyOf(held.requestBody)?.scope;
  if (asked !== scope) throw new Error(`the rebuild request of client "${name}" the proxy holds is for ${String(asked)}, not ${scope}`);
  return held;
}

/** Lets the held answer go and waits (to the deadline) for every started sync to end. */
export async function releaseAndFinish(world: SyncWorld): Promise<void> {
  (await world.proxy()).release();
  const started = scopesState(world).started;
  const deadline = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`a started sync did not end within ${world.deadlineMs} ms`)), world.deadlineMs).unref());
  await Promise.race([Promise.all(started.values()), deadline]);
  started.clear();
}
