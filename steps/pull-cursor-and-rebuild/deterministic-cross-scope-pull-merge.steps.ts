/**
 * SYNC-PULL-002 Deterministic Cross Scope Pull Merge: the order of a page's
 * changes, pages kept with the cursors they lead to, and the position of a
 * quiet scope's change among everything a draining client received.
 */
import { type DataTable, Then, When } from '@cucumber/cucumber';
import { exchangesIn } from '../support/exchanges.ts';
import { deliveredBody, wireText } from '../support/integrity/oracle.ts';
import { lastDrain } from '../support/pull-drains/drain.ts';
import { memberText, recordedPull, recordLastPull } from '../support/pull-eligibility/recorded.ts';
import type { Reply } from '../support/reply.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import { changesOf, lastPull } from '../support/wire-values/operations.ts';
import { keyValue, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

type Obj = Record<string, unknown>;

/** `scope table op pk` of each change, the table by its name, in the order the page lists them. */
async function describeChanges(world: SyncWorld, changes: readonly Obj[]): Promise<string[]> {
  const out: string[] = [];
  for (const c of changes) out.push(`${String(c.scope)} ${(await tableNamed(world, String(c.table))).name} ${String(c.op)} ${String(keyValue(c.pk))}`);
  return out;
}

const expectedRows = (table: DataTable) => table.hashes().map((row) => `${row.scope} ${row.table} ${row.op} ${row.pk}`);

Then('the pull response lists exactly these changes, in this order:', async function (this: SyncWorld, table: DataTable) {
  const reply = lastPull(this);
  this.assert.equal(await describeChanges(this, changesOf(reply)), expectedRows(table), `changes of the pull response, in order: ${reply.text.slice(0, 1500)}`);
});

When('the harness records that response as {string} and the cursors it issued as {string}', function (this: SyncWorld, label: string, cursorLabel: string) {
  const reply = recordLastPull(this, label);
  // What a client holds after applying the page: the cursors it presented, with the ones the page issued over them.
  const presented = (JSON.parse(reply.requestText) as { scopes: Record<string, { cursor: string | null }> }).scopes;
  const held = new Map<string, string | null>(Object.entries(presented).map(([scope, { cursor }]) => [scope, cursor]));
  for (const [scope, cursor] of Object.entries((reply.json.scope_cursors ?? {}) as Record<string, string>)) held.set(scope, cursor);
  const cursors = generationsState(this).cursors;
  if (cursors.has(cursorLabel)) throw new Error(`cursors were already recorded as "${cursorLabel}" in this scenario`);
  cursors.set(cursorLabel, held);
});

Then('member {string} of {string} and of {string} are equal', function (this: SyncWorld, name: string, first: string, second: string) {
  const [a, b] = [memberText(recordedPull(this, first), name), memberText(recordedPull(this, second), name)];
  this.assert.ok(a !== undefined, `response "${first}" has no member "${name}"`);
  this.assert.equal(b, a, `member "${name}" of "${second}" against "${first}"`);
});

Then('the last response of the drain lists exactly these changes:', async function (this: SyncWorld, table: DataTable) {
  const last = lastDrain(this).at(-1) as Reply;
  this.assert.equal((await describeChanges(this, changesOf(last))).sort(), expectedRows(table).sort(), `changes of the last response of the drain: ${last.text.slice(0, 1500)}`);
});

/** Every change the pulls of the draining client were given in this scenario, page after page, with the page it came in. */
async function receivedChanges(world: SyncWorld): Promise<{ page: number; change: Obj }[]> {
  const out: { page: number; change: Obj }[] = [];
  const clientId = (JSON.parse((lastDrain(world)[0] as Reply).requestText) as { client_id: string }).client_id;
  const pulls = exchangesIn((await world.proxy()).exchanges, { endpoints: ['pull'], clientId }).map(deliveredBody).filter((body) => body !== undefined);
  pulls.forEach((body, page) => {
    for (const change of (body.changes ?? []) as Obj[]) out.push({ page, change });
  });
  return out;
}

const identity = (change: Obj) => `${String(change.scope)} ${String(change.table)} ${wireText(change.pk)} ${String(change.server_version)}`;

Then(
  'among all changes received since the first pull of this scenario, the change for {string} in scope {string} is number {int}',
  async function (this: SyncWorld, key: string, scope: string, number: number) {
    const received = await receivedChanges(this);
    const at = received.findIndex(({ change }) => change.scope === scope && String(keyValue(change.pk)) === key);
    this.assert.ok(at >= 0, `the draining client never received a change for ${key} in ${scope} among ${received.length} changes`);
    this.assert.equal(at + 1, number, `the place of the change for ${key} in ${scope} among the ${received.length} changes the draining client received`);
  },
);

Then('every change for a row with an id starting {string} comes after the change for {string}', async function (this: SyncWorld, prefix: string, key: string) {
  const received = await receivedChanges(this);
  const at = received.findIndex(({ change }) => String(keyValue(change.pk)) === key);
  const starting = received.map(({ change }, index) => ({ index, id: String(keyValue(change.pk)) })).filter(({ id }) => id.startsWith(prefix));
  this.assert.ok(at >= 0, `the draining client never received a change for ${key}`);
  this.assert.ok(starting.length > 0, `the draining client received no change for a row whose id starts "${prefix}"`);
  const before = starting.filter(({ index }) => index < at).map(({ id }) => id);
  this.assert.equal(before, [], `changes for rows starting "${prefix}" received before the change for ${key} (number ${at + 1})`);
});

Then('every nonterminal response of the drain delivered at least one change not received before', async function (this: SyncWorld) {
  const pages = lastDrain(this);
  const seen = new Set<string>();
  // Everything received before the drain started counts as received before.
  const received = await receivedChanges(this);
  const pullsBefore = received.length - pages.reduce((n, page) => n + changesOf(page).length, 0);
  for (const { change } of received.slice(0, pullsBefore)) seen.add(identity(change));
  const fresh = pages.slice(0, -1).map((page) => {
    const ids = changesOf(page).map(identity);
    const count = ids.filter((id) => !seen.has(id)).length;
    for (const id of ids) seen.add(id);
    return count;
  });
  this.assert.ok(pages.length > 1, `the drain took ${pages.length} page(s): there is no nonterminal response to check`);
  this.assert.equal(fresh.filter((count) => count === 0).length, 0, `changes not received before, per nonterminal response of the drain: ${fresh.join(', ')}`);
});
