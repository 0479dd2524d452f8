/**
 * Shared steps (used by several requirements): a harness client's
 * scope-set version kept under a label, and a later answer compared with it.
 */
import { Given, Then } from '@cucumber/cucumber';
import type { SyncWorld } from '../support/world.ts';

const versions = new WeakMap<SyncWorld, Map<string, number>>();

Given('the harness has recorded the {string} of {string} as {string}', function (this: SyncWorld, member: string, name: string, label: string) {
  if (member !== 'scope_set_version') throw new Error(`the harness records a client's "scope_set_version", not "${member}"`);
  const labels = versions.get(this) ?? new Map<string, number>();
  labels.set(label, this.wire(name).scopeSetVersion);
  versions.set(this, labels);
});

function assertRecordedVersion(world: SyncWorld, member: string, label: string, plus: number): void {
  const recorded = versions.get(world)?.get(label);
  if (recorded === undefined) throw new Error(`no "${member}" was recorded as "${label}" earlier in this scenario`);
  const reply = world.lastReply();
  world.assert.equal(reply.status, 200, `the ${reply.endpoint} request was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  world.assert.equal(reply.json?.[member], recorded + plus, `member "${member}" of the ${reply.endpoint} response against the recorded "${label}"${plus === 0 ? '' : ` plus ${plus}`}`);
}

Then('member {string} equals the recorded {string}', function (this: SyncWorld, member: string, label: string) {
  assertRecordedVersion(this, member, label, 0);
});

Then('member {string} equals the recorded {string} plus {int}', function (this: SyncWorld, member: string, label: string, plus: number) {
  assertRecordedVersion(this, member, label, plus);
});
