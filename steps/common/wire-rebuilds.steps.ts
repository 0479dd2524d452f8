/**
 * Shared steps (used by several requirements).
 * The harness's own client bringing itself to a synced state and fetching a
 * rebuild page by page, with other work between the pages, then presenting
 * what the rebuild gave it; and the checks on the pages it received.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { codecScopeDigest, presentedSchemaHash, scopeRowOf } from '../support/rebuild-runs/digests.ts';
import { finalPage, finishPagedRebuild, lastRebuildPages, showPagesSoFar, startPagedRebuild, strictRecords } from '../support/rebuild-runs/paged.ts';
import { generationsState } from '../support/scope-generations/state.ts';
import type { SyncWorld } from '../support/world.ts';

Given('the harness client {string} of user {string} has completed a sync', async function (this: SyncWorld, name: string, user: string) {
  await this.readyServer();
  const client = this.wire(name, user);
  await client.connectAndRebuild();
  const pages = await client.pullAll();
  const last = pages[pages.length - 1];
  if (last?.status !== 200) throw new Error(`client "${name}" could not pull to the end: ${last?.status} ${last?.text.slice(0, 500)}`);
});

Given(
  'the harness client {string} has requested page 1 of a rebuild of {string} with limit {int} and rebuild ID {string}',
  async function (this: SyncWorld, name: string, scope: string, limit: number, rebuildId: string) {
    const attempt = await startPagedRebuild(this, name, scope, limit, rebuildId);
    const first = attempt.pages[0];
    if (first?.status !== 200) throw new Error(`page 1 of the rebuild of ${scope} was answered ${first?.status}: ${first?.text.slice(0, 500)}`);
  },
);

// The page is the scenario's last rebuild so far, so the record checks can look at it before the rest is fetched.
When('the harness client {string} requests page 1 of a rebuild of {string} with limit {int} and rebuild ID {string}', async function (this: SyncWorld, name: string, scope: string, limit: number, rebuildId: string) {
  showPagesSoFar(this, await startPagedRebuild(this, name, scope, limit, rebuildId));
});

Then('the rebuild took {int} pages, each but the last with {string} true and exactly {int} records', function (this: SyncWorld, count: number, member: string, limit: number) {
  if (member !== 'has_more') throw new Error(`rebuild pages are chained by "has_more", not "${member}"`);
  const last = generationsState(this).lastRebuild;
  if (last === undefined) throw new Error('no rebuild was fetched in this scenario');
  const pages = last.run.pages;
  const shape = pages.map((page, index) => (index < pages.length - 1 ? `${page.status} has_more=${page.json?.has_more} records=${page.json?.records?.length}` : `${page.status} has_more=${page.json?.has_more}`));
  const expected = pages.map((_, index) => (index < pages.length - 1 ? `200 has_more=true records=${limit}` : '200 has_more=false'));
  this.assert.equal(pages.length, count, `pages of the rebuild of ${last.scope}: ${shape.join('; ')}`);
  this.assert.equal(shape, expected, `the pages of the rebuild of ${last.scope}`);
  const final = pages[pages.length - 1];
  const held = final?.json?.records?.length ?? -1;
  this.assert.ok(held > 0 && held <= limit, `the final page of ${last.scope} holds between 1 and ${limit} records, not ${held}`);
});

When('the harness client {string} requests the remaining rebuild pages of {string}', async function (this: SyncWorld, name: string, scope: string) {
  await finishPagedRebuild(this, name, scope);
});

Given('the harness client {string} has requested the remaining rebuild pages of {string}', async function (this: SyncWorld, name: string, scope: string) {
  const final = await finishPagedRebuild(this, name, scope);
  if (final.status !== 200) throw new Error(`a rebuild page of ${scope} was answered ${final.status}: ${final.text.slice(0, 500)}`);
});

When('the harness client {string} pulls presenting the {string} for {string}', async function (this: SyncWorld, name: string, member: string, scope: string) {
  if (member !== 'final_scope_cursor') throw new Error(`a pull presents the "final_scope_cursor" of a rebuild, not "${member}"`);
  const pages = lastRebuildPages(this, scope);
  const final = pages[pages.length - 1];
  const cursor = final?.status === 200 ? final.json.final_scope_cursor : undefined;
  if (typeof cursor !== 'string') throw new Error(`the rebuild of ${scope} gave no final_scope_cursor to present: ${final?.text.slice(0, 500)}`);
  const client = this.wire(name);
  if (!client.cursors.has(scope)) throw new Error(`client "${name}" is not assigned ${scope}`);
  client.cursors.set(scope, cursor);
  await client.pull();
});

Then('the final rebuild page has {string} equal to the scope digest the harness codec computes for scope {string} from those records', async function (this: SyncWorld, member: string, scope: string) {
  const pages = lastRebuildPages(this, scope);
  const final = finalPage(this, scope, pages);
  const rows = strictRecords(pages).map(scopeRowOf);
  const expected = await codecScopeDigest(this, scope, presentedSchemaHash(final.requestText), rows);
  this.assert.equal(final.json[member], { algorithm: 'sha256', version: 1, encoding: 'hex', digest: expected }, `"${member}" of the final rebuild page of ${scope}, over its ${rows.length} records`);
});

/** The last rebuild answer of the scenario is a final page with that many records and a cursor in the member. */
Then('the final rebuild page holds {int} records and a non-null {string}', function (this: SyncWorld, count: number, member: string) {
  const final = [...this.replies].reverse().find((reply) => reply.endpoint === 'rebuild');
  if (final === undefined) throw new Error('no rebuild page was fetched in this scenario');
  this.assert.equal(final.status, 200, `the last rebuild page: ${final.text.slice(0, 500)}`);
  this.assert.equal(final.json?.has_more, false, 'the last rebuild page is final');
  this.assert.equal(final.json?.records?.length, count, 'records on the final rebuild page');
  const value = final.json?.[member];
  this.assert.ok(typeof value === 'string' && value !== '', `"${member}" of the final rebuild page is a non-null cursor, not ${JSON.stringify(value)}`);
});

When('the harness records the {string} for {string} as {string}', function (this: SyncWorld, member: string, scope: string, label: string) {
  if (member !== 'final_scope_cursor') throw new Error(`the harness records the "final_scope_cursor" of a rebuild, not "${member}"`);
  const pages = lastRebuildPages(this, scope);
  const final = pages[pages.length - 1];
  const cursor = final?.status === 200 && final.json.has_more === false ? final.json.final_scope_cursor : undefined;
  if (typeof cursor !== 'string') throw new Error(`the rebuild of ${scope} gave no final_scope_cursor to record: ${final?.text.slice(0, 500)}`);
  const cursors = generationsState(this).cursors;
  cursors.set(label, new Map([...(cursors.get(label) ?? new Map<string, string | null>()), [scope, cursor]]));
});
