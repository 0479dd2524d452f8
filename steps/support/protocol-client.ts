/**
 * The harness speaking the protocol as a named client: connecting, pulling,
 * pushing and rebuilding with the state it keeps, plus raw requests. A
 * background step that brings a client to a known state drives the client
 * adapter process instead when the scenario uses that client as a process.
 */
import type { SyncWorld } from './world.ts';

/** Brings client `name` of `user` to "connected, every assigned scope rebuilt", in whichever form the scenario uses it. */
export async function connectedAndRebuilt(world: SyncWorld, name: string, user: string): Promise<void> {
  world.clientUsers.set(name, user);
  if (world.isProcess(name)) {
    const result = await world.syncProcess(name);
    if ('error' in result) throw new Error(`client "${name}" could not sync: ${result.error.message}`);
    if (result.completion !== 'idle') throw new Error(`client "${name}" ended its first sync "${result.completion}" in state ${result.status}, not idle`);
    return;
  }
  await world.readyServer();
  await world.wire(name, user).connectAndRebuild();
}
