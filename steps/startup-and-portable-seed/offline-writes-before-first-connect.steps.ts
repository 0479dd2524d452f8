/**
 * SYNC-SEED-007 Offline Writes Before First Connect
 * (features/startup-and-portable-seed/offline-writes-before-first-connect.feature):
 * the steps only this requirement uses. A client is opened before it ever
 * reached the server (a bundled manifest, a seed, or nothing), writes through
 * application SQL with the network blocked, and is then followed through its
 * first sync on the wire (the proxy records) and through inspection. Helpers
 * are in steps/support/offline-writes/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import type { SchemaManifest } from '../../harness/wire/index.ts';
import { processPhrase } from '../support/client-mode.ts';
import { recordedQueue, recordQueue } from '../support/local-queue/recorded.ts';
import { goOffline, goOnline, rejectionsOf } from '../support/local-queue/rejections.ts';
import { holdRequest, releaseHeld, syncInBackground } from '../support/mutations/holds.ts';
import { pushesOf } from '../support/mutations/pushes.ts';
import { queueOf, written } from '../support/mutations/queue.ts';
import type { QueueRecord } from '../support/mutations/state.ts';
import { queueState } from '../support/mutations/state.ts';
import { lastWrite, thatMutationOf, writesOf } from '../support/mutations/writes.ts';
import { bundledManifest, bundledReference, currentManifest, localValue, outcomesFor, rememberBundled, requestsOf, typedCode } from '../support/offline-writes/first-connect.ts';
import { describeIntent, UNSENT, unresolvedView } from '../support/scope-cleanup/intent.ts';
import { servedRow } from '../support/server-rows.ts';
import { labelledVersion } from '../support/version-labels.ts';
import { keyValue, type Obj } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" of user "[^"]+" is opened (?:with the current manifest bundled|without a bundled manifest)/);
processPhrase(/^the harness restarts client "([^"]+)" with the network restored$/);
processPhrase(/^client "([^"]+)" (?:inspection shows (?:the captured|one pending)|has a local-only table|still has row |has row "[^"]+" of "[^"]+" with "[^"]+" \d+ after)/);

Given('client {string} of user {string} is opened with the current manifest bundled and the network blocked', async function (this: SyncWorld, name: string, user: string) {
  this.clientUsers.set(name, user);
  const manifest = await currentManifest(this);
  rememberBundled(this, name, manifest);
  await this.process(name, { bundledManifest: manifest });
  await goOffline(this, name);
});

Given('client {string} of user {string} is opened without a bundled manifest or seed and with the network blocked', async function (this: SyncWorld, name: string, user: string) {
  this.clientUsers.set(name, user);
  await this.process(name);
  await goOffline(this, name);
});

Then('the statements succeeded', function (this: SyncWorld) {
  const writes = [...queueState(this).writes.values()].flat();
  this.assert.ok(writes.length > 0, 'no application SQL ran in this scenario');
  this.assert.equal(
    writes.filter((w) => w.error !== undefined).map((w) => `${w.sql.trim()}: ${w.error?.message}`),
    [],
    'application statements that were refused',
  );
});

Then('the proxy recorded no request from client {string}', async function (this: SyncWorld, name: string) {
  const requests = await requestsOf(this, name);
  this.assert.equal(requests.map((r) => r.exchange.endpoint), [], `requests client "${name}" sent while it was never to reach the server`);
});

Then('client {string} inspection shows the captured mutations with status {string} and the bundled manifest as authored schema', async function (this: SyncWorld, name: string, status: string) {
  const records = await queueOf(this, name);
  const captured = writesOf(this, name).flatMap((w) => w.captured);
  this.assert.ok(captured.length > 0, `the writes of client "${name}" captured no mutation`);
  this.assert.equal(
    records.map((r) => ({ id: r.id, status: r.status, authoredSchema: r.authoredSchema })),
    captured.map((id) => ({ id, status, authoredSchema: bundledReference(this, name) })),
    `the mutations client "${name}" shows`,
  );
});

Given('the harness has recorded the mutation IDs, authored fields and local order client {string} inspects as {string}', async function (this: SyncWorld, name: string, label: string) {
  const records = await queueOf(this, name);
  // What is recorded is compared with what the client pushes later: it must hold the offline writes, each still unsent.
  this.assert.ok(records.length > 0, `client "${name}" shows no mutation to record as "${label}"`);
  this.assert.equal(records.filter((r) => r.status !== 'pending').map((r) => `${r.op} ${r.recordId} ${r.status}`), [], `mutations of client "${name}" recorded as "${label}" that are no longer pending`);
  recordQueue(this, label, records);
});

When('the harness restarts client {string} with the network restored', async function (this: SyncWorld, name: string) {
  goOnline(this, name);
  const client = await this.process(name);
  await client.process.restart();
});

Then('the first request of client {string} is a connect presenting the bundled manifest reference and no "client_generation"', async function (this: SyncWorld, name: string) {
  const [first] = await requestsOf(this, name);
  this.assert.equal(first?.exchange.endpoint, 'connect', `the first request of client "${name}"`);
  this.assert.equal(first?.body?.schema, bundledReference(this, name), `the schema the first connect of client "${name}" presented`);
  this.assert.ok(first?.body !== undefined && !Object.hasOwn(first.body, 'client_generation'), `the first connect of client "${name}" presents a client_generation: ${JSON.stringify(first?.body)}`);
});

/**
 * The last authored value of each field of a row's chain of records, in local
 * order (what one normalized mutation carries), keyed by the field IDs of the
 * manifest the client was opened with, as the wire keys them.
 */
function foldedColumns(manifest: SchemaManifest, records: readonly QueueRecord[]): Record<string, unknown> {
  const folded: Record<string, unknown> = {};
  for (const record of records) {
    const table = manifest.tables.find((t) => t.name === record.table || t.table_id === record.table || t.table_id === record.tableId);
    for (const [column, value] of Object.entries(record.columns ?? {})) folded[table?.fields.find((f) => f.name === column)?.field_id ?? column] = value;
  }
  return folded;
}

Then(
  'the mutations client {string} pushed are exactly those recorded as {string}, with the same IDs, fields and order after pre-send normalization',
  async function (this: SyncWorld, name: string, label: string) {
    const recorded = written(recordedQueue(this, label));
    const now = await queueOf(this, name);
    // A same-row chain is folded into one normalized mutation linked from every record of the chain; a lone record is sent under its own ID.
    const expected: { id: string; row: string; columns: Record<string, unknown> }[] = [];
    for (const row of [...new Set(recorded.map((r) => r.recordId))]) {
      const chain = recorded.filter((r) => r.recordId === row);
      const links = [...new Set(chain.map((r) => now.find((n) => n.id === r.id)?.links?.normalizedMutationId).filter((id): id is string => typeof id === 'string'))];
      const id = links.length === 1 && chain.length > 1 ? (links[0] as string) : (chain[0]?.id as string);
      expected.push({ id, row: String(row), columns: foldedColumns(bundledManifest(this, name), chain) });
    }
    const pushed = (await pushesOf(this, name)).flatMap((p) => p.mutations);
    const distinct = [...new Map(pushed.map((m) => [String(m.mutation_id), m])).values()];
    this.assert.equal(
      distinct.map((m) => ({ id: String(m.mutation_id), row: String(keyValue(m.pk)), columns: (m.columns ?? {}) as Record<string, unknown> })),
      expected,
      `the mutations client "${name}" pushed against those recorded as "${label}"`,
    );
  },
);

Then('every pushed mutation has outcome {string}', async function (this: SyncWorld, status: string) {
  const name = this.syncWindows.at(-1)?.client;
  if (name === undefined) throw new Error('no client synced in this scenario');
  const pushed = [...new Set((await pushesOf(this, name)).flatMap((p) => p.mutations.map((m) => String(m.mutation_id))))];
  this.assert.ok(pushed.length > 0, `client "${name}" pushed nothing`);
  for (const id of pushed) {
    const outcomes = await outcomesFor(this, name, id);
    this.assert.equal([...new Set(outcomes.map((o) => String(o.status)))], [status], `outcomes of mutation ${id} of client "${name}"`);
  }
});

Then('the connect response to client {string} has schema action {string}', async function (this: SyncWorld, name: string, action: string) {
  const connect = (await requestsOf(this, name)).find((r) => r.exchange.endpoint === 'connect' && r.status === 200);
  this.assert.equal((connect?.answer?.schema as Obj | undefined)?.action, action, `the schema action of the connect answer to client "${name}": ${JSON.stringify(connect?.answer?.schema)}`);
});

Then('client {string} pushed the insert of {string} with its original "mutation_id" and "authored_schema" equal to the bundled manifest reference', async function (this: SyncWorld, name: string, row: string) {
  const original = thatMutationOf(this, name);
  const inserts = (await pushesOf(this, name)).flatMap((p) => p.mutations).filter((m) => m.op === 'insert' && String(keyValue(m.pk)) === row);
  this.assert.ok(inserts.length > 0, `client "${name}" pushed no insert of ${row}`);
  for (const m of inserts) this.assert.equal({ id: m.mutation_id, authored: m.authored_schema }, { id: original, authored: bundledReference(this, name) }, `the insert of ${row} client "${name}" pushed`);
});

Then('the push request "schema" is the new manifest reference', async function (this: SyncWorld) {
  const name = this.syncWindows.at(-1)?.client as string;
  const current = await currentManifest(this);
  const pushes = await pushesOf(this, name);
  this.assert.ok(pushes.length > 0, `client "${name}" pushed nothing`);
  for (const p of pushes) this.assert.equal(p.schema, { version: current.schema_version, hash: current.schema_hash }, `the schema of push ${p.batchId} of client "${name}"`);
});

Then('client {string} inspection shows one pending update of {string} with base version {string}', async function (this: SyncWorld, name: string, row: string, label: string) {
  const records = await queueOf(this, name);
  this.assert.equal(
    records.map((r) => ({ op: r.op, row: r.recordId, status: r.status, base: r.baseVersion })),
    [{ op: 'update', row, status: 'pending', base: labelledVersion(this, label) }],
    `the mutations client "${name}" shows`,
  );
});

Then(/^the push of client "([^"]+)" carries the update of "([^"]+)" with "base_version" "([^"]+)"$/, async function (this: SyncWorld, name: string, row: string, label: string) {
  const updates = (await pushesOf(this, name)).flatMap((p) => p.mutations).filter((m) => m.op === 'update' && String(keyValue(m.pk)) === row);
  this.assert.ok(updates.length > 0, `client "${name}" pushed no update of ${row}`);
  for (const m of updates) this.assert.equal(m.base_version, labelledVersion(this, label), `the base_version of the update of ${row} client "${name}" pushed`);
});

Then('the server holds row {string} of table {string} with {string} {int}', async function (this: SyncWorld, row: string, table: string, column: string, value: number) {
  const served = await servedRow(this, table, row);
  this.assert.equal(served?.row[column], value, `${column} of row ${row} of ${table} as the server serves it`);
});

Then('client {string} inspection shows the rejection of that mutation with code {string}', async function (this: SyncWorld, name: string, code: string) {
  const id = thatMutationOf(this, name);
  const rejection = (await rejectionsOf(this, name)).find((r) => r.mutationId === id);
  this.assert.equal(rejection?.code, code, `the rejection client "${name}" shows for mutation ${id}: ${JSON.stringify(rejection)}`);
});

Then('client {string} inspection shows a stored receipt and no cursor for {string}', async function (this: SyncWorld, name: string, scope: string) {
  const client = await this.process(name);
  const { receipts } = await client.call<{ receipts: { scopeId: string }[] }>('inspectSeedReceipts');
  this.assert.equal(receipts.filter((r) => r.scopeId === scope).length, 1, `seed receipts client "${name}" stores for ${scope}: ${JSON.stringify(receipts)}`);
  const { scopes } = await client.call<{ scopes: { scopeId: string; cursor: string | null }[] }>('inspectScopes');
  this.assert.equal(scopes.find((s) => s.scopeId === scope)?.cursor ?? null, null, `the cursor client "${name}" holds for ${scope}`);
});

Then('the first pull of client {string} presents for {string} exactly the cursor its connect returned', async function (this: SyncWorld, name: string, scope: string) {
  const requests = await requestsOf(this, name);
  const connect = requests.find((r) => r.exchange.endpoint === 'connect' && r.status === 200);
  const returned = ((connect?.answer?.scopes as Obj | undefined)?.add as Obj[] | undefined)?.find((a) => a.id === scope)?.cursor;
  this.assert.ok(typeof returned === 'string', `the connect answer to client "${name}" returned no cursor for ${scope}: ${JSON.stringify(connect?.answer?.scopes)}`);
  const pull = requests.find((r) => r.exchange.endpoint === 'pull');
  this.assert.equal(((pull?.body?.scopes as Obj | undefined)?.[scope] as Obj | undefined)?.cursor, returned, `the cursor the first pull of client "${name}" presented for ${scope}`);
});

Given('client {string} is paused before sending its first push', async function (this: SyncWorld, name: string) {
  // The fault stage keeps the push from the server until the sync continues: what the client did before it is observable meanwhile.
  await holdRequest(this, name, 'push');
});

When('client {string} syncs up to that pause', async function (this: SyncWorld, name: string) {
  await syncInBackground(this, name);
});

When('client {string} continues its sync', async function (this: SyncWorld, _name: string) {
  await releaseHeld(this, 'request');
});

Then('client {string} still has row {string} of {string} with {string} {int}', async function (this: SyncWorld, name: string, row: string, table: string, column: string, value: number) {
  this.assert.equal(await localValue(this, name, table, row, column), value, `${column} of row ${row} of ${table} on client "${name}"`);
});

Then('client {string} has row {string} of {string} with {string} {int} after the rebuild', async function (this: SyncWorld, name: string, row: string, table: string, column: string, value: number) {
  const rebuilds = (await requestsOf(this, name)).filter((r) => r.exchange.endpoint === 'rebuild' && r.status === 200);
  this.assert.ok(rebuilds.some((r) => r.answer?.has_more === false), `client "${name}" finished no rebuild`);
  this.assert.equal(await localValue(this, name, table, row, column), value, `${column} of row ${row} of ${table} on client "${name}" after its rebuild`);
});

Then('client {string} inspection shows the update of {string} still unresolved and no other mutation', async function (this: SyncWorld, name: string, row: string) {
  const { records, answered } = await unresolvedView(this, name);
  this.assert.equal(
    records.map((r) => ({ op: r.op, row: r.recordId, unresolved: UNSENT.has(r.status) && !answered.has(r.id) })),
    [{ op: 'update', row, unresolved: true }],
    `the mutations client "${name}" shows (${describeIntent(records, answered)})`,
  );
});

Then(
  /^the proxy recorded from client "([^"]+)", in order, a connect, a push holding the update of "([^"]+)", then the rebuild of "([^"]+)"$/,
  async function (this: SyncWorld, name: string, row: string, scope: string) {
    const requests = await requestsOf(this, name);
    const holds = (r: (typeof requests)[number]) => ((r.body?.mutations ?? []) as Obj[]).some((m) => m.op === 'update' && String(keyValue(m.pk)) === row);
    const connect = requests.findIndex((r) => r.exchange.endpoint === 'connect');
    const push = requests.findIndex((r) => r.exchange.endpoint === 'push' && holds(r));
    const rebuild = requests.findIndex((r) => r.exchange.endpoint === 'rebuild' && r.body?.scope === scope);
    const order = requests.map((r) => `${r.exchange.endpoint}${r.exchange.endpoint === 'rebuild' ? ` ${String(r.body?.scope)}` : ''}`).join(', ');
    this.assert.ok(connect >= 0 && push > connect && rebuild > push, `requests of client "${name}" in order: ${order}`);
  },
);

Then('the push outcome of the update of {string} is {string}', async function (this: SyncWorld, row: string, status: string) {
  const name = this.syncWindows.at(-1)?.client as string;
  const ids = [...new Set((await pushesOf(this, name)).flatMap((p) => p.mutations).filter((m) => m.op === 'update' && String(keyValue(m.pk)) === row).map((m) => String(m.mutation_id)))];
  this.assert.equal(ids.length, 1, `mutation IDs of the updates of ${row} client "${name}" pushed`);
  const outcomes = await outcomesFor(this, name, ids[0] as string);
  this.assert.equal([...new Set(outcomes.map((o) => String(o.status)))], [status], `outcomes of the update of ${row}`);
});

Given('client {string} has a local-only table {string}', async function (this: SyncWorld, name: string, table: string) {
  const client = await this.process(name);
  await client.call('execute', { sql: `CREATE TABLE "${table}" (id TEXT PRIMARY KEY, body TEXT)` });
});

Then('the statement is refused with a typed error', function (this: SyncWorld) {
  const { name, write } = lastWrite(this);
  this.assert.ok(write.error !== undefined, `the last statement of client "${name}" was accepted: ${write.sql.trim()}`);
  this.assert.ok(typedCode(write.error) !== undefined, `the refusal of client "${name}" names no error code: ${write.error?.message}`);
});

Then('the statement succeeded', function (this: SyncWorld) {
  const { name, write } = lastWrite(this);
  this.assert.equal(write.error?.message, undefined, `the last statement of client "${name}" (${write.sql.trim()})`);
});

Given(
  'client {string} of user {string} is opened with the current manifest bundled, its {string} of table {string} altered but its "schema_hash" kept, and the network blocked',
  async function (this: SyncWorld, name: string, user: string, member: string, table: string) {
    this.clientUsers.set(name, user);
    const manifest = structuredClone(await currentManifest(this));
    const entry = manifest.tables.find((t) => t.name === table) as Record<string, unknown> | undefined;
    if (entry === undefined || typeof entry[member] !== 'string') throw new Error(`the manifest has no "${member}" of table ${table} to alter`);
    entry[member] = `${entry[member]}_altered`;
    rememberBundled(this, name, manifest);
    await this.process(name, { bundledManifest: manifest });
    await goOffline(this, name);
  },
);

Then('the statement is refused with a typed error or the client refused to open with a typed error', async function (this: SyncWorld) {
  const { name, write } = lastWrite(this);
  const status = await (await this.process(name)).call<{ status: string; failure?: { code?: string } }>('getStatus');
  const refusedToOpen = status.status === 'error' && typeof status.failure?.code === 'string';
  const refusedWrite = write.error !== undefined && typedCode(write.error) !== undefined;
  this.assert.ok(refusedToOpen || refusedWrite, `client "${name}" accepted the write under an unverified manifest (state ${status.status}; write ${write.error?.message ?? 'accepted'})`);
  this.assert.ok(write.error !== undefined, `the write of client "${name}" under an unverified manifest was accepted: ${write.sql.trim()}`);
});

Given('the harness has recorded the mutation ID of that insert as {string}', function (this: SyncWorld, label: string) {
  const { name } = lastWrite(this);
  queueState(this).labels.set(label, thatMutationOf(this, name));
});

function labelled(world: SyncWorld, label: string): string {
  const id = queueState(world).labels.get(label);
  if (id === undefined) throw new Error(`no mutation ID was recorded as "${label}" in this scenario`);
  return id;
}

Then('mutation {string} was applied exactly once on the server', async function (this: SyncWorld, label: string) {
  const id = labelled(this, label);
  const name = this.syncWindows.at(-1)?.client as string;
  const outcomes = await outcomesFor(this, name, id);
  this.assert.ok(outcomes.length > 0, `the server never answered mutation ${id} of client "${name}"`);
  // A replay answers with the stored outcome; a second application would carry another version.
  this.assert.equal([...new Set(outcomes.map((o) => `${String(o.status)} ${String(o.server_version)}`))], [`applied ${String(outcomes[0]?.server_version)}`], `every answer the server gave for mutation ${id}`);
});

Then('no push of client {string} carried the insert of {string} under another mutation ID', async function (this: SyncWorld, name: string, row: string) {
  const id = labelled(this, 'm5');
  const others = (await pushesOf(this, name)).flatMap((p) => p.mutations).filter((m) => m.op === 'insert' && String(keyValue(m.pk)) === row && m.mutation_id !== id);
  this.assert.equal(others.map((m) => String(m.mutation_id)), [], `other mutation IDs under which client "${name}" pushed the insert of ${row}`);
});
