/**
 * Shared steps (SYNC-CAP-006 and the class-3 bootstrap feature): the stream
 * generation server inspection reports, recorded under a label and compared
 * after a stream reset.
 */
import { Given, Then } from '@cucumber/cucumber';
import { currentStreamOf, recordedStream, recordStream } from '../support/stream-generations/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

Given('the harness records the stream generation that inspection reports as {string}', async function (this: SyncWorld, label: string) {
  await recordStream(this, label);
});

Then('server inspection shows a stream generation different from {string}', async function (this: SyncWorld, label: string) {
  const old = recordedStream(this, label);
  const now = await currentStreamOf(this);
  this.assert.notEqual(now.generation, old.generation, `the stream generation server inspection reports, recorded before as "${label}"`);
});
