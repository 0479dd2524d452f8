/**
 * Source database steps: declaring registered tables and where their rows
 * belong, committing source transactions, and waiting for capture.
 */
import type { SyncWorld } from './world.ts';

/**
 * Waits until every committed source transaction is visible to pull and
 * rebuild. A server that captures synchronously offers no such control and
 * has nothing to wait for; one that captures asynchronously without offering
 * it shows up as missing rows, never as a false pass.
 */
export async function awaitCapture(world: SyncWorld): Promise<void> {
  const server = await world.readyServer();
  await server.capture?.awaitMaterialized(world.deadlineMs);
}
