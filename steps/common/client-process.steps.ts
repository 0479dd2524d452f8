/**
 * Shared steps (used by several requirements).
 * The client under test driven as an application would: syncs, local SQL,
 * restarts and kills, queries of its local tables, and the sync outcome it
 * reports.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { backoffOf, lastFailure, lifecycle, statusOf, waitUntil } from '../support/client-lifecycle/observe.ts';
import { processPhrase } from '../support/client-mode.ts';
import { armCrashPoint } from '../support/client-lifecycle/crash-points.ts';
import { restartAfterCrash } from '../support/mutations/holds.ts';
import { runApplicationSql } from '../support/mutations/writes.ts';
import { connectedAndRebuilt } from '../support/protocol-client.ts';
import { localRows as capturedRows } from '../support/push-ledger/client-outcomes.ts';
import type { SyncWorld } from '../support/world.ts';

When('the Retry-After delay has passed', async function (this: SyncWorld) {
  const failure = lastFailure(this);
  const backoff = await backoffOf(await this.process(failure.client));
  // The client's own schedule is the condition: the harness waits for that instant, not for a guessed duration.
  this.assert.ok(backoff !== null, `client "${failure.client}" has no retry scheduled after "${failure.description}"`);
  await waitUntil(backoff.nextRetryAt, this.deadlineMs, `the retry of client "${failure.client}"`);
});

processPhrase(/^client "([^"]+)" uses rebuild page limit \d+$/);

processPhrase(/^client "([^"]+)" will be told by its next pull to rebuild scope /);

Given('client {string} uses rebuild page limit {int}', async function (this: SyncWorld, name: string, limit: number) {
  // The page limit is application configuration: the application reopens the client with it.
  const client = await this.process(name);
  await client.process.kill();
  client.process.start();
  await client.process.call('open', await this.openParams(client, client.userId, { rebuildLimit: limit }));
});

Given('client {string} will be told by its next pull to rebuild scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const client = await this.process(name);
  const proxy = await this.proxy();
  // A server may answer any pull with "rebuild this scope": the next pull answer says so, without a cursor or changes for it.
  proxy.inject({
    endpoint: 'pull',
    when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === client.clientId,
    fault: {
      kind: 'rewrite',
      describe: `scope ${scope} marked for rebuild`,
      transform: (body) => {
        delete body.scope_cursors?.[scope];
        body.changes = (body.changes ?? []).filter((c: { scope?: string }) => c.scope !== scope);
        body.rebuild = [...new Set([...(body.rebuild ?? []), scope])].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
        return body;
      },
    },
  });
});

processPhrase(/^the harness kills client "([^"]+)" and restarts it/);

When('the application asks client {string} to retry after the error', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  // The comparison of what follows starts at the state the client is in now.
  lifecycle(this).logMarks.set(name, (await statusOf(client)).statusLog.length - 1);
  await client.call('retryAfterError');
});

When('the harness kills client {string} and restarts it on the same database', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  await client.process.restart();
  lifecycle(this).restarted.set(name, { mark: (await this.proxy()).exchanges.length });
});

When('client {string} syncs', async function (this: SyncWorld, name: string) {
  await this.inSyncWindow(name, 'syncs', () => this.syncProcess(name));
});

async function syncedIdle(world: SyncWorld, name: string): Promise<void> {
  const result = await world.syncProcess(name);
  if ('error' in result) throw new Error(`client "${name}" could not sync: ${result.error.message}`);
  if (result.completion !== 'idle') throw new Error(`client "${name}" ended its sync "${result.completion}" in state ${result.status}, not idle`);
}

Given('client {string} of user {string} has synced', async function (this: SyncWorld, name: string, user: string) {
  this.clientUsers.set(name, user);
  await this.inSyncWindow(name, 'has synced', () => syncedIdle(this, name));
});

Given('client {string} has synced', async function (this: SyncWorld, name: string) {
  await this.inSyncWindow(name, 'has synced', () => syncedIdle(this, name));
});

When('client {string} executes SQL:', async function (this: SyncWorld, name: string, sql: string) {
  // Several statements run as one local transaction, as an application would write them.
  await runApplicationSql(this, name, sql);
});

function lastSync(world: SyncWorld, name: string) {
  const result = world.lastSync.get(name);
  if (!result) throw new Error(`client "${name}" has not synced in this scenario`);
  return result;
}

Then('the sync of client {string} ends with completion {string}', function (this: SyncWorld, name: string, completion: string) {
  const result = lastSync(this, name);
  this.assert.ok(!('error' in result), `the sync of client "${name}" raised ${'error' in result ? result.error.message : ''}`);
  this.assert.equal((result as { completion: string }).completion, completion, `completion of the sync of client "${name}" (state ${(result as { status: string }).status})`);
});

Then('the sync of client {string} finishes', function (this: SyncWorld, name: string) {
  const result = lastSync(this, name);
  this.assert.ok(!('error' in result), `the sync of client "${name}" did not finish: ${'error' in result ? result.error.message : ''}`);
});

async function localRows(world: SyncWorld, name: string, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = await world.process(name);
  return (await client.call<{ rows: Record<string, unknown>[] }>('query', { sql, params })).rows;
}

Then('client {string} no longer has rows {string} and {string} of {string}', async function (this: SyncWorld, name: string, first: string, second: string, table: string) {
  const key = this.model.keyColumn(table);
  const rows = await localRows(this, name, `SELECT CAST("${key.name}" AS TEXT) AS id FROM "${table}" ORDER BY 1`);
  const keys = rows.map((r) => String(r.id));
  this.assert.equal(
    keys.filter((k) => k === first || k === second),
    [],
    `rows of ${table} client "${name}" still holds (it holds ${keys.join(', ') || 'none'})`,
  );
});

Then('client {string} has no row {string} in table {string}', async function (this: SyncWorld, name: string, id: string, table: string) {
  const key = this.model.keyColumn(table);
  const rows = await localRows(this, name, `SELECT 1 FROM "${table}" WHERE CAST("${key.name}" AS TEXT) = ?`, [id]);
  this.assert.equal(rows.length, 0, `client "${name}" holds row ${id} in ${table}`);
});

Then('client {string} has neither row {string} nor row {string} in table {string}', async function (this: SyncWorld, name: string, first: string, second: string, table: string) {
  const key = this.model.keyColumn(table);
  const rows = await localRows(this, name, `SELECT CAST("${key.name}" AS TEXT) AS id FROM "${table}" WHERE CAST("${key.name}" AS TEXT) IN (?, ?)`, [first, second]);
  this.assert.equal(rows, [], `client "${name}" holds rows of ${table} it should not`);
});

Then('querying {string} on client {string} returns no row', async function (this: SyncWorld, sql: string, name: string) {
  this.assert.equal(await localRows(this, name, sql), [], `rows of ${sql} on client "${name}"`);
});

Then('querying {string} on client {string} returns:', async function (this: SyncWorld, sql: string, name: string, expected: DataTable) {
  const rows = await localRows(this, name, sql);
  // SQLite hands back numbers and text; the feature writes every cell as text.
  const actual = rows.map((row) => Object.fromEntries(Object.entries(row).map(([column, value]) => [column, value === null ? 'null' : String(value)])));
  this.assert.equal(actual, expected.hashes(), `rows of ${sql} on client "${name}"`);
});

// Polls, the quarantine record and the blocked answer are shared with the scope membership steps (steps/scope-membership/).

Given('client {string} has connected and rebuilt every assigned scope', async function (this: SyncWorld, name: string) {
  await connectedAndRebuilt(this, name, this.userOf(name));
});

processPhrase(/^client "([^"]+)" of user "[^"]+" (?:syncs|starts syncing) for the first time$/);

When('client {string} of user {string} syncs for the first time', async function (this: SyncWorld, name: string, user: string) {
  this.clientUsers.set(name, user);
  await this.process(name);
  await this.inSyncWindow(name, 'first time', () => this.syncProcess(name));
});

processPhrase(/^client "([^"]+)" has been restarted on the same database/);

/** A client that was ready syncs without reconnecting; a restarted one connects first, so its connect can be failed. */
Given(/^client "([^"]+)" has been restarted on the same database(?:, so that its next sync connects first| with no rebuild pending)$/, async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  await client.process.restart();
  const { scopes } = await client.call<{ scopes: { scopeId: string; rebuildRequired: boolean }[] }>('inspectScopes');
  this.assert.equal(
    scopes.filter((s) => s.rebuildRequired).map((s) => s.scopeId),
    [],
    `client "${name}" should come back with every scope rebuilt`,
  );
});

processPhrase(/^client "([^"]+)" query /);

Then('client {string} query {string} returns no row', async function (this: SyncWorld, name: string, sql: string) {
  this.assert.equal(await capturedRows(this, name, sql), [], `rows of ${sql} on client "${name}"`);
});

processPhrase(/^client "([^"]+)" (?:of user "[^"]+" is opened with rebuild limit|is armed to crash at|has crashed)/);

processPhrase(/^the harness restarts client "([^"]+)"$/);

Given('client {string} of user {string} is opened with rebuild limit {int}', async function (this: SyncWorld, name: string, user: string, limit: number) {
  this.clientUsers.set(name, user);
  if (this.clients.has(name)) throw new Error(`client "${name}" was already opened in this scenario; its rebuild limit must be set when it is first opened`);
  await this.process(name, { rebuildLimit: limit });
});

Given('client {string} is armed to crash at {string}', async function (this: SyncWorld, name: string, point: string) {
  return await armCrashPoint(this, name, point);
});

Then('client {string} has crashed', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  // The armed point ends the process on its own; waiting for that exit has the call deadline.
  const exit = client.process.alive ? await client.process.awaitExit() : 'already gone';
  this.assert.equal(client.process.alive, false, `client "${name}" is still running (${exit}) after its armed crash point`);
  const sync = this.lastSync.get(name);
  this.assert.ok(sync === undefined || 'error' in sync, `the sync of client "${name}" returned ${JSON.stringify(sync)} instead of dying at its crash point`);
});

When('the harness restarts client {string}', async function (this: SyncWorld, name: string) {
  await restartAfterCrash(this, name);
});

Given('client {string} is armed to crash at {string} for scope {string}', async function (this: SyncWorld, name: string, point: string, scope: string) {
  // Crash points are not scope-bound in the adapter protocol: the point is taken in whichever rebuild comes first.
  // So no other scope may be waiting for a rebuild when it is armed, or the crash could land in that one.
  const client = await this.process(name);
  const { scopes } = await client.call<{ scopes: { scopeId: string; rebuildRequired: boolean }[] }>('inspectScopes');
  const { rebuilds } = await client.call<{ rebuilds: { scopeId: string }[] }>('inspectRebuilds');
  const others = [...scopes.filter((s) => s.rebuildRequired).map((s) => s.scopeId), ...rebuilds.map((r) => r.scopeId)].filter((id) => id !== scope);
  if (others.length > 0) throw new Error(`client "${name}" also has ${others.join(', ')} waiting for a rebuild: a crash at "${point}" would not be bound to ${scope}`);
  return await armCrashPoint(this, name, point);
});

Then(
  /^client "([^"]+)" reports state "([a-z_]+)" with failure operation "([a-z_]+)" and recovery action "([a-z_]+)"$/,
  async function (this: SyncWorld, name: string, state: string, operation: string, action: string) {
    const status = await (await this.process(name)).call<{ status: string; failure?: { operation?: string; recoveryAction?: string } }>('getStatus');
    this.assert.equal(
      { state: status.status, operation: status.failure?.operation, recoveryAction: status.failure?.recoveryAction },
      { state, operation, recoveryAction: action },
      `the status client "${name}" reports: ${JSON.stringify(status.failure)}`,
    );
  },
);
