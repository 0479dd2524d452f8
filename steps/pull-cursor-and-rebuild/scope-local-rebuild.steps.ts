/**
 * Steps only SYNC-PULL-009 Scope-Local Rebuild uses: a table the application
 * keeps only on the device, a picture of one scope's state on the client
 * taken before another scope is repaired and compared after, and which
 * scopes the client refetched for that repair.
 */
import { type DataTable, Given, Then } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { deliveredOf, exchangesOf, objectBodyOf } from '../support/exchanges.ts';
import { pictureOf, repairState, type ScopePicture } from '../support/scope-repair/state.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" keeps a local-only table /);

processPhrase(/the scope state client "([^"]+)" inspects for /);

processPhrase(/^the proxy recorded rebuild requests from client "([^"]+)" for scope "[^"]+" only, since the checksum was corrupted$/);

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

Given('client {string} keeps a local-only table {string} with these rows:', async function (this: SyncWorld, name: string, table: string, rows: DataTable) {
  const columns = rows.raw()[0] ?? [];
  for (const identifier of [table, ...columns]) if (!IDENTIFIER.test(identifier)) throw new Error(`"${identifier}" is not a plain SQL identifier`);
  const client = await this.process(name);
  // The application's own table: created and filled through the client's SQL surface, never registered with the server.
  await client.call('execute', { sql: `CREATE TABLE ${table} (${columns.map((c, k) => `${c} TEXT${k === 0 ? ' PRIMARY KEY' : ''}`).join(', ')})` });
  const insert = `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`;
  await client.call('transaction', { statements: rows.hashes().map((row) => ({ sql: insert, params: columns.map((c) => row[c]) })) });
});

Given('the harness has recorded the scope state client {string} inspects for {string} as {string}', async function (this: SyncWorld, name: string, scope: string, label: string) {
  const picture = await pictureOf(this, name, scope);
  if (picture.scope === undefined || typeof picture.scope.cursor !== 'string' || picture.provenance.length === 0) {
    throw new Error(`client "${name}" holds no synced state of ${scope} to record: ${JSON.stringify(picture)}`);
  }
  repairState(this).pictures.set(label, { picture, logIndex: (await this.proxy()).exchanges.length });
});

Then('the scope state client {string} inspects for {string} equals {string}', async function (this: SyncWorld, name: string, scope: string, label: string) {
  const recorded = repairState(this).pictures.get(label);
  if (recorded === undefined) throw new Error(`no scope state was recorded as "${label}" earlier in this scenario`);
  const now = await pictureOf(this, name, scope);
  // The scope keeps syncing by pull meanwhile, and a pull may hand it a fresh cursor for the same position.
  // So its cursor must be the recorded one or one a pull delivered since; one from a rebuild, or none, is a touch.
  const pulled = await pulledCursors(this, name, scope, recorded.logIndex);
  const cursor = now.scope?.cursor;
  this.assert.ok(
    cursor === recorded.picture.scope?.cursor || pulled.includes(cursor),
    `client "${name}" holds for ${scope} a cursor neither recorded as "${label}" nor delivered by a pull since: ${JSON.stringify(cursor)?.slice(0, 120)}`,
  );
  const withoutCursor = (picture: ScopePicture) => ({ ...picture, scope: { ...picture.scope, cursor: undefined } });
  this.assert.equal(withoutCursor(now), withoutCursor(recorded.picture), `what client "${name}" reports for ${scope} (checksums, rebuild flag, provenance), against "${label}"`);
});

/** Every cursor of `scope` that the pull answers client `name` was given carried, from log index `from` on. */
async function pulledCursors(world: SyncWorld, name: string, scope: string, from: number): Promise<unknown[]> {
  return (await exchangesOf(world, name, { endpoints: ['pull'], from })).map((e) => {
    const answer = deliveredOf(e);
    return answer?.status === 200 ? (objectBodyOf(answer.body)?.scope_cursors as Record<string, unknown> | undefined)?.[scope] : undefined;
  }).filter((cursor) => cursor !== undefined);
}

Then('the proxy recorded rebuild requests from client {string} for scope {string} only, since the checksum was corrupted', async function (this: SyncWorld, name: string, scope: string) {
  const from = repairState(this).armedAt.get(name);
  if (from === undefined) throw new Error(`no checksum of client "${name}" was set to be corrupted in this scenario`);
  const rebuilds = await exchangesOf(this, name, { endpoints: ['rebuild'], from });
  const scopes = rebuilds.map((e) => objectBodyOf(e.requestBody)?.scope);
  this.assert.ok(scopes.length > 0, `client "${name}" sent no rebuild request after the checksum of ${scope} was corrupted`);
  this.assert.equal([...new Set(scopes)], [scope], `scopes client "${name}" rebuilt after the checksum of ${scope} was corrupted`);
});
