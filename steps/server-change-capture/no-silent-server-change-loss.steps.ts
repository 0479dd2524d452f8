/**
 * SYNC-CAP-001 No Silent Server Change Loss
 * (features/server-change-capture/no-silent-server-change-loss.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/capture/.
 *
 * Not written yet (the requirement stays undetermined): the failure
 * injections of the quarantine Rules, the quarantine record and slot
 * acknowledgement inspections, the readiness body and the repair-and-retry
 * step.
 */
import { Given, When } from '@cucumber/cucumber';
import type { SyncWorld } from '../support/world.ts';

/** Down, as a stopped process would be: the worker reads, materializes and acknowledges nothing until restarted. */
Given('the capture worker is stopped', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.stopWorker) throw new Error(`server adapter "${server.id}" declares "capture" but offers no capture.stopWorker()`);
  await server.capture.stopWorker();
});

/** The harness client keeps the cursors of the last pull the server answered 200; a refused pull left them as they were. */
When('client {string} pulls with its last issued cursors', async function (this: SyncWorld, name: string) {
  await this.wire(name).pull();
});
