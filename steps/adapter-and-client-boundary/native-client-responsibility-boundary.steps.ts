/**
 * SYNC-BOUND-003 Native Client Responsibility Boundary
 * (features/adapter-and-client-boundary/native-client-responsibility-boundary.feature):
 * the steps only this requirement uses. What the client computes (order of
 * its requests, verification, apply) is read from the proxy records and its
 * inspection; what the server decides (assignment, schema action, outcome)
 * is injected or made on the server and the client's next requests are
 * checked to follow it. Helpers are in steps/support/client-boundary/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { sentRequests, storedVersion, taskWriter, writeTask } from '../support/client-boundary/requests.ts';
import { processPhrase } from '../support/client-mode.ts';
import { clientIdOf, exchangesOf } from '../support/exchanges.ts';
import { localKeys } from '../support/local-queue/provenance.ts';
import { rejectionsOf } from '../support/local-queue/rejections.ts';
import { pushesOf, serverOutcomes } from '../support/mutations/pushes.ts';
import { queueOf } from '../support/mutations/queue.ts';
import { runApplicationSql, thatMutationOf } from '../support/mutations/writes.ts';
import { aliasRelay } from '../support/opaque-tokens/tokens.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { keyValue, type Obj, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" (?:is started and left running|state log contains|has rows "|inspection shows (?:no mutation for|the row version of|the rejection with code)|does not have row |had synced before that update|reports state "error" with failure operation )/);

Given('client {string} has pushed an insert of task {string} owned by {string} with title {string}', async function (this: SyncWorld, name: string, id: string, owner: string, title: string) {
  await writeTask(this, name, 'insert', id, { owner_id: owner, title });
});

const boundState = new WeakMap<SyncWorld, { updated?: { row: string; version: string } }>();

Given('client {string} has pushed an update of task {string} owned by {string} setting {string} to {string}', async function (this: SyncWorld, name: string, id: string, owner: string, column: string, value: string) {
  // The task exists first at a version the client under test syncs; the update then moves the server past it.
  const created = await writeTask(this, name, 'insert', id, { owner_id: owner, title: `${value} (before)` });
  boundState.set(this, { updated: { row: id, version: String(created.server_version) } });
  const process = [...this.clients.keys()][0];
  if (process !== undefined) {
    const result = await this.syncProcess(process);
    if ('error' in result || result.completion !== 'idle') throw new Error(`client "${process}" could not sync the created task ${id}: ${JSON.stringify(result)}`);
  }
  await writeTask(this, name, 'update', id, { [column]: value }, String(created.server_version));
});

When('client {string} had synced before that update and then executes SQL:', async function (this: SyncWorld, name: string, sql: string) {
  const updated = boundState.get(this)?.updated;
  if (updated === undefined) throw new Error('no update by another client was made earlier in this scenario');
  const held = await storedVersion(this, name, updated.row);
  if (held !== updated.version) throw new Error(`client "${name}" does not hold task ${updated.row} at the version before the update (it holds ${String(held)})`);
  await runApplicationSql(this, name, sql);
});

Then('the proxy recorded from client {string}, in order, a connect, a push, then a pull', async function (this: SyncWorld, name: string) {
  const requests = await sentRequests(this, name);
  const window = this.syncWindows.filter((w) => w.client === name).at(-1);
  const order = requests.map((r) => r.endpoint);
  const connect = order.indexOf('connect');
  const push = order.findIndex((e, i) => e === 'push' && i > connect);
  const pull = order.findIndex((e, i) => e === 'pull' && i > push);
  this.assert.ok(connect >= 0 && push > connect && pull > push, `requests of client "${name}" in order: ${order.join(', ')}`);
  // In the sync with work to push, nothing was pulled before the push.
  if (window !== undefined) {
    const inWindow = await sentRequests(this, name, { from: window.from, ...(window.to === undefined ? {} : { to: window.to }) });
    const firstPush = inWindow.findIndex((r) => r.endpoint === 'push');
    const firstPull = inWindow.findIndex((r) => r.endpoint === 'pull');
    this.assert.ok(firstPush >= 0 && (firstPull === -1 || firstPush < firstPull), `requests of the last sync of client "${name}": ${inWindow.map((r) => r.endpoint).join(', ')}`);
  }
});

Then('client {string} has rows {string} and {string} of {string}', async function (this: SyncWorld, name: string, first: string, second: string, table: string) {
  const keys = await localKeys(this, name, table);
  this.assert.equal([first, second].filter((k) => !keys.includes(k)), [], `rows of ${table} client "${name}" lacks (it holds ${keys.join(', ') || 'none'})`);
});

Then('client {string} inspection shows no mutation for {string}', async function (this: SyncWorld, name: string, row: string) {
  const records = (await queueOf(this, name)).filter((r) => r.recordId === row);
  this.assert.equal(records.map((r) => `${r.op} ${r.status}`), [], `mutations client "${name}" shows for ${row}, a row it only received`);
});

Given('the proxy replaces the {string} of {string} in the next pull response to client {string} with {string} and keeps its "row_checksum"', async function (this: SyncWorld, column: string, row: string, name: string, value: string) {
  const client = await this.process(name);
  const proxy = await this.proxy();
  await taskWriter(this, 'W');
  const table = await tableNamed(this, 'tasks');
  const field = table.fields.find((f) => f.name === column)?.field_id;
  if (field === undefined) throw new Error(`table tasks has no field ${column}`);
  proxy.inject({
    endpoint: 'pull',
    when: (request) => (request as Obj | undefined)?.client_id === client.clientId,
    fault: {
      kind: 'rewrite',
      describe: `${column} of ${row} replaced, row_checksum kept`,
      transform: (body) => {
        for (const change of (body.changes ?? []) as Obj[]) if (String(keyValue(change.pk)) === row && change.row !== undefined && change.row !== null) (change.row as Obj)[field] = value;
        return body;
      },
    },
  });
});

Then('client {string} does not have row {string} of {string} with {string} {string}', async function (this: SyncWorld, name: string, row: string, table: string, column: string, value: string) {
  const key = this.model.keyColumn(table).name;
  const { rows } = await (await this.process(name)).call<{ rows: Obj[] }>('query', { sql: `SELECT CAST("${column}" AS TEXT) AS v FROM "${table}" WHERE CAST("${key}" AS TEXT) = ?`, params: [row] });
  this.assert.equal(rows.filter((r) => r.v === value).length, 0, `client "${name}" applied the altered ${column} of ${row}`);
});

Then('no pull of client {string} after the revocation names scope {string}', async function (this: SyncWorld, name: string, scope: string) {
  const requests = await sentRequests(this, name);
  const told = requests.findIndex((r) => r.status === 200 && ((((r.answer?.scope_updates as Obj | undefined)?.remove ?? (r.answer?.scopes as Obj | undefined)?.remove) ?? []) as string[]).includes(scope));
  this.assert.ok(told >= 0, `no answer to client "${name}" removed ${scope}`);
  const later = requests.slice(told + 1).filter((r) => r.endpoint === 'pull' && Object.hasOwn((r.body?.scopes ?? {}) as Obj, scope));
  this.assert.equal(later.length, 0, `pulls of client "${name}" that still named ${scope} after it was removed`);
  this.assert.ok(requests.slice(told + 1).some((r) => r.endpoint === 'pull'), `client "${name}" pulled no more after ${scope} was removed`);
});

Then('client {string} presented in each pull the "scope_set_version" of the previous response', async function (this: SyncWorld, name: string) {
  const requests = (await sentRequests(this, name)).filter((r) => r.endpoint === 'connect' || r.endpoint === 'pull');
  let previous: unknown;
  const wrong: string[] = [];
  let checked = 0;
  for (const r of requests) {
    if (r.endpoint === 'pull' && previous !== undefined) {
      checked += 1;
      if (r.body?.scope_set_version !== previous) wrong.push(`pull presented ${String(r.body?.scope_set_version)} after ${String(previous)}`);
    }
    if (r.status === 200 && r.answer?.scope_set_version !== undefined) previous = r.answer.scope_set_version;
  }
  this.assert.ok(checked > 0, `client "${name}" made no pull after an answer`);
  this.assert.equal(wrong, [], `scope_set_version client "${name}" presented`);
});

Then('the push outcome of that update is {string} with code {string}', async function (this: SyncWorld, status: string, code: string) {
  const name = this.syncWindows.at(-1)?.client as string;
  const id = thatMutationOf(this, name);
  const outcomes = serverOutcomes(await pushesOf(this, name), id);
  this.assert.equal([...new Set(outcomes.map((o) => `${String(o.status)} ${String(o.code)}`))], [`${status} ${code}`], `outcomes of mutation ${id} of client "${name}"`);
});

Then('client {string} inspection shows the row version of {string} equal to the "server_version" of the outcome', async function (this: SyncWorld, name: string, row: string) {
  const id = thatMutationOf(this, name);
  const outcome = serverOutcomes(await pushesOf(this, name), id)[0];
  this.assert.ok(typeof outcome?.server_version === 'string', `the outcome carries a server_version: ${JSON.stringify(outcome)}`);
  this.assert.equal(await storedVersion(this, name, row), outcome?.server_version, `the version client "${name}" holds for ${row}`);
});

Then('client {string} inspection shows the rejection with code {string}', async function (this: SyncWorld, name: string, code: string) {
  const id = thatMutationOf(this, name);
  const rejection = (await rejectionsOf(this, name)).find((r) => r.mutationId === id);
  this.assert.equal(rejection?.code, code, `the rejection client "${name}" shows for ${id}: ${JSON.stringify(rejection)}`);
});

Then('the proxy recorded exactly one push carrying that mutation ID', async function (this: SyncWorld) {
  const name = this.syncWindows.at(-1)?.client as string;
  const id = thatMutationOf(this, name);
  const carrying = (await pushesOf(this, name)).filter((p) => p.mutations.some((m) => m.mutation_id === id));
  this.assert.equal(carrying.length, 1, `push requests of client "${name}" carrying mutation ${id}`);
});

Then('the proxy recorded no push, pull or rebuild of client {string} after that connect', async function (this: SyncWorld, name: string) {
  const requests = await sentRequests(this, name);
  const last = requests.map((r) => r.endpoint).lastIndexOf('connect');
  this.assert.ok(last >= 0, `client "${name}" sent no connect`);
  this.assert.equal(requests.slice(last + 1).map((r) => r.endpoint), [], `requests of client "${name}" after its last connect`);
});

const isTerminalPullOf = (clientId: string) => (request: unknown) => (request as Obj | undefined)?.client_id === clientId;

/** Where the proxy log stood when a server decision was injected: what the client did about it comes after. */
const injectedAt = new WeakMap<SyncWorld, number>();

async function markInjection(world: SyncWorld): Promise<void> {
  injectedAt.set(world, (await world.proxy()).exchanges.length);
}

function sinceInjection(world: SyncWorld): { from: number } {
  const from = injectedAt.get(world);
  if (from === undefined) throw new Error('no server decision was injected earlier in this scenario');
  return { from };
}

Given(
  /^the proxy rewrites the next terminal pull response to client "([^"]+)" so that "rebuild" lists "([^"]+)" and "scope_cursors" and "checksums" are adjusted to match$/,
  async function (this: SyncWorld, name: string, scope: string) {
    const client = await this.process(name);
    const proxy = await this.proxy();
    await markInjection(this);
    // A server may answer any terminal pull with "rebuild this scope": no cursor, checksum or change for it then.
    proxy.inject({
      endpoint: 'pull',
      when: isTerminalPullOf(client.clientId),
      fault: {
        kind: 'rewrite',
        describe: `terminal pull answer sends ${scope} to rebuild`,
        transform: (body) => {
          if (body.has_more !== false) return body;
          // Terminal checksums still cover every active scope, the one sent to rebuild included: only its cursor and changes go.
          delete body.scope_cursors?.[scope];
          body.changes = (body.changes ?? []).filter((c: Obj) => c.scope !== scope);
          body.rebuild = [...new Set([...(body.rebuild ?? []), scope])].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
          return body;
        },
      },
    });
  },
);

Then(/^client "([^"]+)" rebuilt "([^"]+)" from "cursor" null and its next pull presents that rebuild's "final_scope_cursor"$/, async function (this: SyncWorld, name: string, scope: string) {
  const requests = await sentRequests(this, name, sinceInjection(this));
  const rebuilds = requests.filter((r) => r.endpoint === 'rebuild' && r.body?.scope === scope);
  this.assert.ok(rebuilds[0]?.body?.cursor === null, `the sync of client "${name}" started a rebuild of ${scope} from cursor null (requests: ${requests.map((r) => r.endpoint).join(', ')})`);
  const final = rebuilds.find((r) => r.status === 200 && r.answer?.has_more === false)?.answer?.final_scope_cursor;
  this.assert.ok(typeof final === 'string', `the rebuild of ${scope} by client "${name}" reached a final page with a final_scope_cursor`);
  const finalAt = requests.findIndex((r) => r.endpoint === 'rebuild' && r.answer?.final_scope_cursor === final);
  const nextPull = requests.slice(finalAt + 1).find((r) => r.endpoint === 'pull');
  this.assert.equal(((nextPull?.body?.scopes as Obj | undefined)?.[scope] as Obj | undefined)?.cursor, final, `the cursor the pull after the rebuild of client "${name}" presented for ${scope}`);
});

Given(
  /^the proxy rewrites the next terminal pull response to client "([^"]+)" so that the cursor issued for "([^"]+)" is aliased as "([^"]+)" and mapped back when presented$/,
  async function (this: SyncWorld, name: string, scope: string, alias: string) {
    const relay = await aliasRelay(this);
    await markInjection(this);
    relay.aliasCursors(await clientIdOf(this, name), scope, [alias]);
  },
);

Then(/^the next pull of client "([^"]+)" presents exactly "([^"]+)" for "([^"]+)"$/, async function (this: SyncWorld, name: string, alias: string, scope: string) {
  const requests = await sentRequests(this, name, sinceInjection(this));
  const issued = requests.findIndex((r) => r.endpoint === 'pull' && r.status === 200 && (r.answer?.scope_cursors as Obj | undefined)?.[scope] === alias);
  this.assert.ok(issued >= 0, `no pull answer to client "${name}" issued the alias ${alias} for ${scope}`);
  const next = requests.slice(issued + 1).find((r) => r.endpoint === 'pull');
  this.assert.ok(next !== undefined, `client "${name}" did not pull again after it was issued the alias (it must sync once more)`);
  this.assert.equal(((next?.body?.scopes as Obj | undefined)?.[scope] as Obj | undefined)?.cursor, alias, `the cursor client "${name}" presented for ${scope} after being issued ${alias}`);
});

// A React Native binding and a native client on the same database are a client adapter capability (@cap:reactNative);
// an adapter without it never reaches these steps, and one that declares it must offer the controls below.
Given('client {string} is the React Native binding on {string} for user {string}', function (this: SyncWorld, name: string, platform: string, _user: string) {
  return undeterminedWithout(this, `the client adapter protocol has no call that opens client "${name}" as a React Native binding on ${platform}`);
});

When('the harness opens the same database with the native {string} client {string} directly, without JavaScript', function (this: SyncWorld, platform: string, name: string) {
  return undeterminedWithout(this, `the client adapter protocol has no call that opens the ${platform} native client "${name}" on a binding's database`);
});

Then('the push of client {string} carries the insert of {string} with the mutation ID client {string} inspected', function (this: SyncWorld, name: string, _row: string, binding: string) {
  return undeterminedWithout(this, `no native client "${name}" was opened on the database of binding "${binding}"`);
});

/** Push requests of client `name` as the proxy received them, oldest first, with their arrival time. */
async function pushArrivals(world: SyncWorld, name: string): Promise<{ at: number | undefined; bytes: Buffer }[]> {
  return (await exchangesOf(world, name, { endpoints: ['push'] })).map((e) => ({ at: e.receivedAt, bytes: e.requestBody }));
}

When(/^client "([^"]+)" is started and left running for (\d+) seconds without further calls$/, async function (this: SyncWorld, name: string, seconds: string) {
  const client = await this.process(name);
  const before = (await pushArrivals(this, name)).length;
  await client.call('start');
  // The client alone must send the retry: the harness makes no call and only watches the proxy log, up to the stated time.
  const until = Date.now() + Number(seconds) * 1000;
  while (Date.now() < until && (await pushArrivals(this, name)).length < before + 2) await new Promise((resolve) => setTimeout(resolve, 100));
});

Then(/^the proxy recorded a second push of client "([^"]+)" at least (\d+) seconds after the first$/, async function (this: SyncWorld, name: string, seconds: string) {
  const pushes = await pushArrivals(this, name);
  this.assert.ok(pushes.length >= 2, `client "${name}" sent ${pushes.length} push requests`);
  const [first, second] = pushes;
  this.assert.ok(first?.at !== undefined && second?.at !== undefined, 'the proxy recorded when each push arrived');
  this.assert.ok((second?.at ?? 0) - (first?.at ?? 0) >= Number(seconds) * 1000, `the second push came ${(second?.at ?? 0) - (first?.at ?? 0)} ms after the first`);
});

Then('the second push is byte-identical to the first', async function (this: SyncWorld) {
  const name = [...this.clients.keys()][0] as string;
  const [first, second] = await pushArrivals(this, name);
  this.assert.ok(first !== undefined && second !== undefined, `client "${name}" sent fewer than two push requests`);
  this.assert.ok(first !== undefined && second !== undefined && Buffer.compare(first.bytes, second.bytes) === 0, `the second push of client "${name}" differs from the first`);
});

Then(/^client "([^"]+)" state log contains "([a-z_]+)", "([a-z_]+)", "([a-z_]+)" in that order$/, async function (this: SyncWorld, name: string, a: string, b: string, c: string) {
  const { statusLog } = await (await this.process(name)).call<{ statusLog: string[] }>('getStatus');
  let at = 0;
  for (const state of [a, b, c]) {
    const found = statusLog.indexOf(state, at);
    this.assert.ok(found >= 0, `client "${name}" state log ${statusLog.join(' > ')} lacks "${state}" after position ${at}`);
    at = found + 1;
  }
});
