/**
 * SYNC-PULL-003 Effect Level Pull Progress: the cursors each page of a drain
 * issued, a cursor kept from one page to present again, the effect positions
 * server inspection shows for one source transaction (before and after a
 * worker restart), what the client was never given, and the worker killed
 * between its materialization commit and the slot acknowledgement.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { deliveredBody } from '../support/integrity/oracle.ts';
import { effectsFrom, effectsOfLastTransaction, rememberedEffects, stringsIn } from '../support/effect-progress/effects.ts';
import { exchangesOf } from '../support/exchanges.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { lastDrain } from '../support/pull-drains/drain.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import type { SyncWorld } from '../support/world.ts';

Then('each response of the drain issued a cursor for scope {string}', function (this: SyncWorld, scope: string) {
  const pages = lastDrain(this);
  const issued = pages.map((page) => typeof page.json?.scope_cursors?.[scope] === 'string');
  this.assert.equal(issued, pages.map(() => true), `whether each page of the drain issued a cursor for ${scope}`);
});

When('the harness records the cursor issued for scope {string} in that response as {string}', function (this: SyncWorld, scope: string, label: string) {
  const reply = this.lastReply();
  const cursor = reply.status === 200 && reply.endpoint === 'pull' ? reply.json?.scope_cursors?.[scope] : undefined;
  // Also a check where a feature places it after Then: the response must have issued a cursor for the scope.
  this.assert.ok(typeof cursor === 'string', `the last answer issued no cursor for ${scope} to record: ${reply.status} ${reply.text.slice(0, 500)}`);
  const cursors = generationsState(this).cursors;
  cursors.set(label, new Map([...(cursors.get(label) ?? new Map<string, string | null>()), [scope, cursor]]));
});

Then('server inspection shows the pull effects of that transaction for scope {string} as:', async function (this: SyncWorld, scope: string, table: DataTable) {
  // "That transaction" moved a project: the newest source transaction that wrote a "projects" row.
  const found = await effectsOfLastTransaction(this, 'projects', scope);
  const actual = found.effects.map((e) => `${e.table} ${e.pk} event=${e.event} effect=${e.effect}`);
  const expected = table.hashes().map((row) => `${row.table} ${row.pk} event=${row.event_ordinal} effect=${row.effect_ordinal}`);
  this.assert.equal(actual, expected, `pull effects of ${scope} from commit ${found.commit} on, in stream order`);
});

Then('all of those pull effects share the commit_lsn of that transaction', function (this: SyncWorld) {
  const found = rememberedEffects(this);
  this.assert.ok(found.effects.length > 0, 'server inspection showed no pull effect to compare');
  this.assert.equal(
    found.effects.map((e) => e.commit),
    found.effects.map(() => found.commit),
    `commit positions of the pull effects of ${found.scope} against the transaction's own ${found.commit}`,
  );
});

Then('server inspection shows the same pull effects with the same positions', async function (this: SyncWorld) {
  const found = rememberedEffects(this);
  const now = await effectsFrom(this, found.scope, found.generation, found.commit);
  this.assert.ok(found.effects.length > 0, 'server inspection showed no pull effect earlier to compare with');
  this.assert.equal(now, found.effects, `pull effects of ${found.scope} from commit ${found.commit} on, against those shown before`);
});

Then('no response received by {string} in this scenario carried the title {string}', async function (this: SyncWorld, name: string, title: string) {
  const answers = (await exchangesOf(this, name, { endpoints: ['pull', 'rebuild', 'push'] })).map(deliveredBody).filter((body) => body !== undefined);
  this.assert.ok(answers.length > 0, `client "${name}" received no answer in this scenario`);
  const carrying = answers.filter((body) => stringsIn(body).includes(title));
  this.assert.equal(carrying.length, 0, `answers to client "${name}" that carried "${title}": ${carrying.map((body) => JSON.stringify(body).slice(0, 300)).join(' | ')}`);
});

Given('the capture worker will be killed after its next materialization commit and before it acknowledges the slot', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.killWorkerAt) return undeterminedWithout(this, `server adapter "${server.id}" offers no capture.killWorkerAt() to kill the worker after its materialization commit`);
  await server.capture.killWorkerAt('after-materialization-commit');
  return undefined;
});

/** The worker refuses to catch up once the armed kill has happened; a worker that still catches up was never killed there. */
Given('the capture worker has been killed at that point', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture) throw new Error(`server adapter "${server.id}" has no capture capability`);
  const outcome = await server.capture.awaitMaterialized(this.deadlineMs).then(
    () => 'caught up',
    (error: Error) => `refused: ${error.message}`,
  );
  if (outcome === 'caught up') throw new Error('the capture worker caught up: the kill armed after its materialization commit did not happen');
});
