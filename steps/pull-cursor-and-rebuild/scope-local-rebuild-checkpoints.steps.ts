/**
 * SYNC-PULL-015 Scope Local Rebuild Checkpoints: the scope-set version a
 * client held, two rebuilds fetched interleaved under labels, a pull mixing a
 * recorded cursor with a rebuild's final cursor, and every checkpoint of a
 * client before and after rebuild requests, read through server inspection.
 */
import { Then, When } from '@cucumber/cucumber';
import { checkpointAndCursor, recordedCursor } from '../support/cursor-acknowledgement/checkpoints.ts';
import { attemptOf, finishLabelled, nextPage, startLabelled } from '../support/cursor-acknowledgement/labelled-rebuilds.ts';
import { codecScopeDigest, presentedSchemaHash, scopeRowOf } from '../support/rebuild-runs/digests.ts';
import { lastRebuildPages, strictRecords } from '../support/rebuild-runs/paged.ts';
import type { Reply } from '../support/reply.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

const pointerOf = (scope: string) => `/scopes/${scope.replaceAll('~', '~0').replaceAll('/', '~1')}`;

function finalScopeCursor(world: SyncWorld, scope: string): string {
  const pages = lastRebuildPages(world, scope);
  const final = pages[pages.length - 1];
  const cursor = final?.status === 200 && final.json.has_more === false ? final.json.final_scope_cursor : undefined;
  if (typeof cursor !== 'string') throw new Error(`the rebuild of ${scope} gave no final_scope_cursor: ${final?.text.slice(0, 500)}`);
  return cursor;
}

When(
  'the harness client {string} pulls with limit {int} presenting the {string} cursor for scope {string} and the {string} for {string}',
  async function (this: SyncWorld, name: string, limit: number, label: string, scope: string, member: string, rebuilt: string) {
    if (member !== 'final_scope_cursor') throw new Error(`a pull presents the "final_scope_cursor" of a rebuild, not "${member}"`);
    const patch = { [pointerOf(scope)]: { cursor: recordedCursor(this, label, scope) }, [pointerOf(rebuilt)]: { cursor: finalScopeCursor(this, rebuilt) } };
    await this.wire(name).pull(patch, { limit });
  },
);

When(
  'the harness client {string} requests page 1 of a rebuild of {string} with limit {int} and rebuild ID {string} as rebuild {string}',
  async function (this: SyncWorld, name: string, scope: string, limit: number, rebuildId: string, label: string) {
    await startLabelled(this, label, name, scope, limit, rebuildId);
  },
);

When('the harness client {string} requests the next page of rebuild {string}', async function (this: SyncWorld, name: string, label: string) {
  if (attemptOf(this, label).client !== name) throw new Error(`rebuild "${label}" is not client "${name}"'s`);
  await nextPage(this, label);
});

When('the harness client {string} requests the remaining pages of rebuild {string}', async function (this: SyncWorld, name: string, label: string) {
  if (attemptOf(this, label).client !== name) throw new Error(`rebuild "${label}" is not client "${name}"'s`);
  await finishLabelled(this, label);
});

Then(
  /^the records of rebuild "([^"]+)" are exactly (.+) and its final "([^"]+)" equals the scope digest the harness codec computes from them$/,
  async function (this: SyncWorld, label: string, list: string, member: string) {
    const attempt = attemptOf(this, label);
    const pages: Reply[] = attempt.pages;
    const expected = [...list.matchAll(/"([^"]*)"/g)].map((m) => m[1]);
    this.assert.equal(pages.map((p) => p.status), pages.map(() => 200), `the page statuses of rebuild "${label}"`);
    const final = pages[pages.length - 1] as Reply;
    this.assert.equal(final.json?.has_more, false, `rebuild "${label}" reached its final page`);
    const records = strictRecords(pages);
    this.assert.equal(records.map((r) => String(keyValue(r.pk))), expected, `the records of rebuild "${label}" of ${attempt.scope}, in page order`);
    const digest = await codecScopeDigest(this, attempt.scope, presentedSchemaHash(final.requestText), records.map(scopeRowOf));
    this.assert.equal(final.json[member], { algorithm: 'sha256', version: 1, encoding: 'hex', digest }, `"${member}" of the final page of rebuild "${label}"`);
  },
);

Then('server inspection shows the checkpoint of {string} for scope {string} at the position of that {string}', async function (this: SyncWorld, name: string, scope: string, member: string) {
  if (member !== 'final_scope_cursor') throw new Error(`"that" names the "final_scope_cursor" of a rebuild, not "${member}"`);
  const { checkpoint, position } = await checkpointAndCursor(this, this.wire(name).clientId, scope, finalScopeCursor(this, scope));
  this.assert.equal(checkpoint, position, `the checkpoint of client "${name}" for ${scope} against the position of the final cursor of its rebuild`);
});

Then(
  'server inspection shows the checkpoint of {string} for scope {string} at the position of the cursor {string} presented for {string} in that pull',
  async function (this: SyncWorld, name: string, scope: string, presenter: string, presentedScope: string) {
    if (presenter !== name || presentedScope !== scope) throw new Error('the checkpoint is compared with the cursor the same client presented for the same scope');
    const reply = this.lastReply();
    if (reply.endpoint !== 'pull') throw new Error(`the last request was a ${reply.endpoint}, not a pull`);
    const cursor = (JSON.parse(reply.requestText) as { scopes: Record<string, { cursor: string | null }> }).scopes[scope]?.cursor;
    if (typeof cursor !== 'string') throw new Error(`that pull presented no cursor for ${scope}`);
    const { checkpoint, position } = await checkpointAndCursor(this, this.wire(name).clientId, scope, cursor);
    this.assert.equal(checkpoint, position, `the checkpoint of client "${name}" for ${scope} against the position of the cursor it presented in that pull`);
  },
);
