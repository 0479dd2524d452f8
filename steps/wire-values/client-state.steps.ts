/**
 * What a client did after it was given a tampered answer: which requests it
 * still sent, and whether its durable sync state stayed as it was before the
 * scenario's first action.
 */
import { BeforeStep, Then } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import type { SyncWorld } from '../support/world.ts';
import { exchangesOf } from './recorded.ts';

const UNCHANGED = /^no durable state changed on client "([^"]+)"$/;
processPhrase(UNCHANGED);
processPhrase(/^client "([^"]+)" sent no push, pull or rebuild request after that connect$/);

interface Snapshot {
  digest: string;
  sections: Record<string, string>;
}

const snapshots = new WeakMap<SyncWorld, Map<string, Snapshot>>();

async function snapshotOf(world: SyncWorld, name: string): Promise<Snapshot> {
  const client = await world.process(name);
  // Retry bookkeeping (backoff) is how a client remembers a failure, not sync state.
  return client.call<Snapshot>('snapshotDigest', { excludeBackoff: true });
}

// The picture is taken right before the scenario's first action, like the server's.
BeforeStep(async function (this: SyncWorld, { pickle, pickleStep }) {
  if (pickleStep.type !== 'Action' || snapshots.has(this)) return;
  const names = pickle.steps.map((step) => UNCHANGED.exec(step.text)?.[1]).filter((name): name is string => name !== undefined);
  if (names.length === 0) return;
  const taken = new Map<string, Snapshot>();
  for (const name of names) taken.set(name, await snapshotOf(this, name));
  snapshots.set(this, taken);
});

Then(UNCHANGED, async function (this: SyncWorld, name: string) {
  const before = snapshots.get(this)?.get(name);
  if (before === undefined) throw new Error(`no picture of client "${name}" was taken before the scenario's first action`);
  const after = await snapshotOf(this, name);
  const changed = Object.keys({ ...before.sections, ...after.sections }).filter((section) => before.sections[section] !== after.sections[section]);
  this.assert.equal(changed, [], `durable state of client "${name}" changed in: ${changed.join(', ')}`);
});

Then(/^client "([^"]+)" sent no push, pull or rebuild request after that connect$/, async function (this: SyncWorld, name: string) {
  const mine = await exchangesOf(this, name);
  const connect = [...mine].reverse().find((e) => e.endpoint === 'connect' && e.rewritten !== undefined);
  this.assert.ok(connect, `no connect response to client "${name}" was rewritten by the proxy`);
  const later = mine.filter((e) => e.seq > connect.seq && ['push', 'pull', 'rebuild'].includes(e.endpoint)).map((e) => `${e.endpoint} #${e.seq}`);
  this.assert.equal(later, [], `requests of client "${name}" after the rewritten connect #${connect.seq}`);
});
