/**
 * Steps of SYNC-PULL-013 Rebuild Page Replay: the harness client's finished
 * rebuild, each of its requests sent again byte for byte, and what the
 * repeats returned or left on the server (checkpoints through server
 * inspection, the scope-set version through a later pull).
 */
import { Given, Then } from '@cucumber/cucumber';
import { pageExchange } from '../support/rebuild-replays/requests.ts';
import { clientsWithPagedRebuilds, latestPagedRebuild } from '../support/rebuild-runs/paged.ts';
import type { SyncWorld } from '../support/world.ts';

/** The one harness client that started a paged rebuild in this scenario ("that rebuild" names its last one). */
function rebuildingClient(world: SyncWorld): string {
  const rebuilding = clientsWithPagedRebuilds(world);
  if (rebuilding.length !== 1) throw new Error(`"that rebuild" needs exactly one harness client that started a rebuild, not ${rebuilding.length}`);
  return rebuilding[0] as string;
}

Given('the rebuild took {int} pages', function (this: SyncWorld, count: number) {
  const attempt = latestPagedRebuild(this, rebuildingClient(this));
  const shape = attempt.pages.map((page) => `${page.status} has_more=${page.json?.has_more}`);
  const expected = attempt.pages.map((_, index) => `200 has_more=${index < attempt.pages.length - 1}`);
  this.assert.equal(attempt.pages.length, count, `pages of the rebuild of ${attempt.scope}: ${shape.join('; ')}`);
  this.assert.equal(shape, expected, `the pages of the rebuild of ${attempt.scope}`);
});

Then(/^the response body is byte-identical to the first response to page (\d+) of that rebuild$/, function (this: SyncWorld, page: string) {
  const reply = this.lastReply();
  const first = pageExchange(this, rebuildingClient(this), Number(page));
  this.assert.equal(reply.endpoint, 'rebuild', `the last answer is a rebuild answer: ${reply.text.slice(0, 300)}`);
  this.assert.equal(reply.requestText, first.requestText, `the repeated request carries the bytes of the request for page ${page}`);
  this.assert.equal({ status: reply.status, text: reply.text }, { status: first.status, text: first.text }, `the answer to the repeated request for page ${page} against the first answer`);
});

