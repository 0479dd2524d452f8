/**
 * Steps of SYNC-BOUND-005 No Arbitrary Client-Defined Replication Model:
 * otherwise valid connect, pull and rebuild requests of a harness client that
 * name a scope the server never assigned, or carry a filter, predicate or
 * SQL, and what the server answered and left behind.
 */
import { Then, When } from '@cucumber/cucumber';
import { type SmuggleEndpoint, sendSmuggled, sourceRowsNow } from '../support/boundary/smuggled-requests.ts';
import type { Json } from '../support/wire-client.ts';
import type { SyncWorld } from '../support/world.ts';

When('the harness client {string} pulls presenting its current cursors', async function (this: SyncWorld, name: string) {
  await this.wire(name).pull();
});

Then('every change in the response has {string} {string}', function (this: SyncWorld, member: string, value: string) {
  const body = this.lastReply().json as Json;
  const changes = (body.changes ?? []) as Json[];
  this.assert.equal(
    changes.filter((c) => c[member] !== value).map((c) => JSON.stringify(c).slice(0, 200)),
    [],
    `changes of the response whose "${member}" is not "${value}"`,
  );
  // The cursors the answer issues speak of the same scopes only.
  if (member === 'scope') this.assert.equal(Object.keys((body.scope_cursors ?? {}) as Json).filter((s) => s !== value), [], 'scopes the response issues cursors for');
});

// The scope text may hold quotes and semicolons (SQL placed in an identifier): everything between the outer double quotes is the scope.
When(/^the harness client "([^"]+)" sends a valid (pull|rebuild) request naming scope "(.*)" (with cursor null|as its "scope" with "cursor" null)$/, async function (this: SyncWorld, name: string, endpoint: 'pull' | 'rebuild', scope: string, how: string) {
  if ((endpoint === 'pull') !== how.startsWith('with')) throw new Error(`a ${endpoint} request names a scope ${endpoint === 'pull' ? 'in "scopes" (with cursor null)' : 'as its "scope" (with "cursor" null)'}`);
  await sendSmuggled(this, name, endpoint, (body) => {
    if (endpoint === 'pull') (body.scopes as Json)[scope] = { cursor: null };
    else body.scope = scope;
  });
});

When(/^the harness client "([^"]+)" sends a valid (connect|pull|rebuild) request with the extra top-level member (".+)$/, async function (this: SyncWorld, name: string, endpoint: SmuggleEndpoint, member: string) {
  const extra = JSON.parse(`{${member}}`) as Json;
  await sendSmuggled(this, name, endpoint, (body) => Object.assign(body, extra));
});

When('the harness client {string} connects presenting its installed schema and {string} with an extra entry {string} holding cursor null', async function (this: SyncWorld, name: string, member: string, scope: string) {
  if (member !== 'known_scopes') throw new Error(`a connect request lists scopes in "known_scopes", not "${member}"`);
  await sendSmuggled(this, name, 'connect', (body) => {
    (body.known_scopes as Json)[scope] = { cursor: null };
  });
});

Then('the response body does not contain {string}', function (this: SyncWorld, text: string) {
  const reply = this.lastReply();
  this.assert.ok(!reply.text.includes(text), `the ${reply.endpoint} answer (${reply.status}) holds "${text}": ${reply.text.slice(0, 400)}`);
});

Then('the source table {string} still holds rows {string} and {string} unchanged', async function (this: SyncWorld, table: string, first: string, second: string) {
  const { before, now } = await sourceRowsNow(this, table);
  const key = this.model.keyColumn(table).name;
  const pick = (rows: Record<string, unknown>[]) => rows.map((r) => r.row as Json).filter((r) => [first, second].includes(String(r[key])));
  this.assert.equal(pick(before).length, 2, `source table ${table} held rows ${first} and ${second} before the request`);
  this.assert.equal(now, before, `source rows of ${table} after the request against before it`);
});
