/**
 * Cursors the harness's protocol client keeps under a label (C0) so a later
 * pull can present exactly that cursor again, whatever the client received
 * in between; and the Retry-After header of the last answer.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { isValidRetryAfter } from '../../harness/wire/index.ts';
import type { SyncWorld } from '../support/world.ts';

interface HeldCursor {
  client: string;
  scope: string;
  cursor: string;
}

const held = new WeakMap<SyncWorld, Map<string, HeldCursor>>();

function labels(world: SyncWorld): Map<string, HeldCursor> {
  let map = held.get(world);
  if (map === undefined) {
    map = new Map();
    held.set(world, map);
  }
  return map;
}

/** A scope id as one JSON pointer token. */
const pointerToken = (text: string) => text.replaceAll('~', '~0').replaceAll('/', '~1');

Given(/^client "([^"]+)" has pulled and holds its cursor ([A-Z][A-Za-z0-9]*) for scope "([^"]+)"$/, async function (this: SyncWorld, name: string, label: string, scope: string) {
  await this.readyServer();
  const client = this.wire(name);
  const pages = await client.pullAll();
  const last = pages[pages.length - 1];
  if (last?.status !== 200) throw new Error(`client "${name}" could not pull: ${last?.status} ${last?.text}`);
  const cursor = client.cursors.get(scope);
  if (typeof cursor !== 'string') throw new Error(`client "${name}" holds no cursor for scope "${scope}" after pulling (${JSON.stringify(cursor)})`);
  labels(this).set(label, { client: name, scope, cursor });
});

When(/^client "([^"]+)" pulls presenting ([A-Z][A-Za-z0-9]*)$/, async function (this: SyncWorld, name: string, label: string) {
  const cursor = labels(this).get(label);
  if (cursor === undefined) throw new Error(`no cursor is held under the label ${label}`);
  if (cursor.client !== name) throw new Error(`cursor ${label} was taken by client "${cursor.client}", not "${name}"`);
  await this.wire(name).pull({ [`/scopes/${pointerToken(cursor.scope)}/cursor`]: cursor.cursor });
});

Then('the response has a valid "Retry-After" header', function (this: SyncWorld) {
  const reply = this.lastReply();
  // Repeated headers arrive joined by ", ", which is no valid value: two headers fail here as they should.
  const value = reply.headers.get('retry-after');
  this.assert.ok(value !== null, `the ${reply.endpoint} answer (${reply.status}) has no Retry-After header`);
  this.assert.ok(isValidRetryAfter(value ?? '', 'sender'), `Retry-After "${value}" of the ${reply.endpoint} answer is neither integer seconds nor an IMF-fixdate`);
});
