/**
 * Shared steps (used by several requirements).
 * The server's acknowledgement checkpoints as server inspection shows them,
 * compared with the position of a cursor the server issued, and the operator
 * compacting retained history (which trusts those checkpoints).
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { checkpointAndCursor, recordedCursor } from '../support/cursor-acknowledgement/checkpoints.ts';
import { checkpointsOf, recordedOf } from '../support/rebuild-replays/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

Then(
  'server inspection shows the checkpoint of {string} for scope {string} at the position of cursor {string}',
  async function (this: SyncWorld, name: string, scope: string, label: string) {
    const cursor = recordedCursor(this, label, scope);
    const { checkpoint, position } = await checkpointAndCursor(this, this.wire(name).clientId, scope, cursor);
    this.assert.equal(checkpoint, position, `the checkpoint of client "${name}" for ${scope} against the position of cursor "${label}"`);
  },
);

// The compaction control compacts every scope with retained history, the named one among them.
When('the operator compacts scope {string}', async function (this: SyncWorld, _scope: string) {
  const server = await this.readyServer();
  if (!server.compaction) throw new Error(`server adapter "${server.id}" offers no compaction control`);
  await server.compaction.compact();
});

// Row for row, acknowledgement time included: re-acknowledging the same position is a change too.
Given('server inspection records the checkpoints of {string} as {string}', async function (this: SyncWorld, name: string, label: string) {
  const held = await checkpointsOf(this, name);
  if (held.length === 0) throw new Error(`server inspection shows no checkpoint of client "${name}" to record`);
  recordedOf(this).checkpoints.set(label, held);
});

Then('server inspection shows the checkpoints of {string} equal to the {string} ones', async function (this: SyncWorld, name: string, label: string) {
  const before = recordedOf(this).checkpoints.get(label);
  if (before === undefined) throw new Error(`no checkpoints were recorded as "${label}" earlier in this scenario`);
  this.assert.equal(await checkpointsOf(this, name), before, `the checkpoints of client "${name}" against those recorded as "${label}"`);
});
