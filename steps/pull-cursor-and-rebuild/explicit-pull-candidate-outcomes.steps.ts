/**
 * Steps of SYNC-PULL-004 Explicit Pull Candidate Outcomes: the shape and
 * digest of every change of a pull answer checked with the harness codec,
 * a change served as captured while the live row has moved on, and the
 * checkpoint a failed pull must leave where it was, and the capture-store
 * faults (the adapter's optional `capture.store` control) that break one
 * selected candidate so the whole page must fail.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { keyValue } from '../support/wire-values/recorded.ts';
import { entryOf, hexChecksum, wireText } from '../support/integrity/oracle.ts';
import {
  acknowledgedPosition,
  checkpointPosition,
  fieldOf,
  lastPullChanges,
  manifestTableOf,
  notedVersion,
  noteAcknowledged,
  noteVersion,
  thatChange,
} from '../support/pull-outcomes/outcomes.ts';
import { FAULT_OF_STEP, injectStoreFault, removeStoreFaults } from '../support/pull-outcomes/store-faults.ts';
import { pullPresentingRecorded } from '../support/scope-cursors/cursors.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

/** A member read strictly (numbers kept as written) in plain form, to compare with a value the codec built. */
const plain = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(wireText(value)));

function changesWithOp(world: SyncWorld, op: string): Obj[] {
  const { reply, changes } = lastPullChanges(world);
  const chosen = changes.filter((c) => c.op === op);
  world.assert.ok(chosen.length > 0, `the pull answer has some "${op}" change to check: ${reply.text.slice(0, 400)}`);
  return chosen;
}

Then(
  /^every "upsert" change has a "row" with exactly the members ((?:"[^"]+", )*"[^"]+" and "[^"]+"), whose "([^"]+)" equals its "pk"$/,
  async function (this: SyncWorld, list: string, keyColumn: string) {
    const columns = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
    for (const change of changesWithOp(this, 'upsert')) {
      const { table } = await manifestTableOf(this, change);
      const row = change.row as Obj | undefined;
      const label = `the upsert of ${wireText(change.pk)} in ${String(change.scope)}`;
      this.assert.ok(row !== null && typeof row === 'object', `${label} carries a row object`);
      this.assert.equal(Object.keys(row ?? {}).sort(), columns.map((c) => fieldOf(table, c)).sort(), `the members of the row of ${label}`);
      this.assert.equal(wireText(row?.[fieldOf(table, keyColumn)]), wireText(keyValue(change.pk)), `the "${keyColumn}" of the row of ${label} against its pk`);
    }
  },
);

Then(
  'every {string} change has a {string} equal to the row digest the harness codec computes from the manifest, its {string} and its {string}',
  async function (this: SyncWorld, op: string, checksum: string, rowMember: string, versionMember: string) {
    if (checksum !== 'row_checksum' || rowMember !== 'row' || versionMember !== 'server_version') throw new Error(`the row digest covers "row" and "server_version" into "row_checksum", not "${rowMember}", "${versionMember}" into "${checksum}"`);
    for (const change of changesWithOp(this, op)) {
      const { manifest, table } = await manifestTableOf(this, change);
      const { digest } = entryOf(manifest, table.table_id, change.row, String(change.server_version));
      this.assert.equal(plain(change.row_checksum), hexChecksum(digest), `the row_checksum of the ${op} of ${wireText(change.pk)} in ${String(change.scope)}`);
    }
  },
);

Then('every {string} change has no member {string} and no member {string}', function (this: SyncWorld, op: string, first: string, second: string) {
  for (const change of changesWithOp(this, op)) {
    this.assert.equal([first, second].filter((m) => m in change), [], `members the ${op} of ${wireText(change.pk)} in ${String(change.scope)} carries that it must not`);
  }
});

Then('every change has a nonempty {string} matching {string}', function (this: SyncWorld, memberName: string, pattern: string) {
  const { reply, changes } = lastPullChanges(this);
  this.assert.ok(changes.length > 0, `the pull answer has changes to check: ${reply.text.slice(0, 400)}`);
  const form = new RegExp(pattern, 'u');
  for (const change of changes) {
    const value = change[memberName];
    this.assert.ok(typeof value === 'string' && value.length > 0 && form.test(value), `the "${memberName}" of the ${String(change.op)} of ${wireText(change.pk)} in ${String(change.scope)} is ${JSON.stringify(value)}, not a nonempty match of ${pattern}`);
  }
});

Then('the harness records the {string} of that change as {string}', function (this: SyncWorld, memberName: string, label: string) {
  const value = thatChange(this)[memberName];
  this.assert.ok(typeof value === 'string' && value.length > 0, `that change carries a "${memberName}": ${JSON.stringify(value)}`);
  noteVersion(this, label, value as string);
});

Then(
  /^the "row_checksum" of that change equals the row digest the harness codec computes for (\w+) "([^"]*)" and version "([^"]+)"$/,
  async function (this: SyncWorld, column: string, value: string, label: string) {
    const change = thatChange(this);
    const { manifest, table } = await manifestTableOf(this, change);
    // The other members are the row the server sent; the named column is set to what capture saw, so a row read live gives another digest.
    const row = { ...(change.row as Obj), [fieldOf(table, column)]: value };
    const { digest } = entryOf(manifest, table.table_id, row, notedVersion(this, label));
    this.assert.equal(plain(change.row_checksum), hexChecksum(digest), `the row_checksum of ${wireText(change.pk)}, against the codec's digest of ${column} "${value}" at version "${label}"`);
  },
);

Then('the {string} of that change differs from {string}', function (this: SyncWorld, memberName: string, label: string) {
  const value = thatChange(this)[memberName];
  this.assert.ok(typeof value === 'string', `that change carries a "${memberName}"`);
  this.assert.notEqual(value, notedVersion(this, label), `the "${memberName}" of that change against "${label}"`);
});

// Presenting a set of cursors acknowledges it: the checkpoint right after is the position the server took those cursors to stand for.
Given('the harness client {string} has pulled with limit {int} presenting the {string} cursors', async function (this: SyncWorld, name: string, limit: number, label: string) {
  const reply = await pullPresentingRecorded(this, name, label, limit);
  if (reply.status !== 200) throw new Error(`the pull presenting the "${label}" cursors was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  await noteAcknowledged(this, name, label);
});

Then(
  'server inspection shows the checkpoint of {string} for scope {string} at the position of the {string} cursor for that scope',
  async function (this: SyncWorld, name: string, scope: string, label: string) {
    const expected = acknowledgedPosition(this, name, label, scope);
    this.assert.equal(await checkpointPosition(this, name, scope), expected, `the checkpoint of client "${name}" for ${scope}, against the one noted when it presented the "${label}" cursors`);
  },
);

Given(
  /^the operator (deletes the captured projection|overwrites the stored row digest) of the latest effect for row "([^"]+)" in scope "([^"]+)"$/,
  async function (this: SyncWorld, action: string, pk: string, scope: string) {
    return await injectStoreFault(this, FAULT_OF_STEP[action] as NonNullable<(typeof FAULT_OF_STEP)[string]>, pk, scope);
  },
);

When('the operator removes the injected capture-store fault', async function (this: SyncWorld) {
  return await removeStoreFaults(this);
});
