/**
 * Shared steps (used by several requirements).
 * The last answer the harness got (status, error body, members, the changes
 * and outcomes it lists) and the server-side state it should have left.
 */
import { type DataTable, Given, Then } from '@cucumber/cucumber';
import { RawNumber } from '../../harness/codec/index.ts';
import { validate } from '../../harness/wire/index.ts';
import { quoted } from '../support/client-lifecycle/observe.ts';
import { errorOf } from '../support/client-lifecycle/server-errors.ts';
import { exchangesOf } from '../support/exchanges.ts';
import { integrity, manifests } from '../support/integrity/context.ts';
import { parseStrict, verifyRowMessage, wireText } from '../support/integrity/oracle.ts';
import { keyText } from '../support/integrity/row-digest.ts';
import { processWriteOutcomes } from '../support/offline-writes/first-connect.ts';
import { member } from '../support/reply.ts';
import { lastPull as lastPullAnswer, listed } from '../support/scope-generations/invalidation.ts';
import { generationsState, scopeList } from '../support/scope-generations/state.ts';
import { addedScopes, answerOf, connectOf, focus } from '../support/seeds/seeded-sync.ts';
import { snapshotServerState, stateDifferences } from '../support/server-state.ts';
import { expectedValue } from '../support/values.ts';
import type { Json } from '../support/wire-client.ts';
import { INTEGER_TOKEN } from '../support/wire-values/integers.ts';
import { assertMemberContains } from '../support/wire-values/member-contains.ts';
import { changesOf, lastPull } from '../support/wire-values/operations.ts';
import { outcomeAnywhere, outcomesOf, thatOutcome } from '../support/wire-values/outcomes.ts';
import { keyValue, numberTokens, type Obj, tableNamed } from '../support/wire-values/recorded.ts';
import { rebuiltRecord } from '../support/rebuilt-rows.ts';
import { lastMutation } from '../support/wire-values/requests.ts';
import type { SyncWorld } from '../support/world.ts';

Then(/^the error body has "retryable" (true|false)$/, function (this: SyncWorld, flag: string) {
  this.assert.equal(errorOf(this).retryable, flag === 'true', 'retryable member of the error body');
});

Then(/^the response has none of the members (.+)$/, function (this: SyncWorld, list: string) {
  const body = this.lastReply().json;
  const names = quoted(list);
  this.assert.ok(names.length > 0, `no member could be read from: ${list}`);
  const present = names.filter((n) => body !== null && typeof body === 'object' && Object.hasOwn(body, n));
  this.assert.equal(present, [], `success members in the answer ${this.lastReply().text}`);
});

/** The outcome of `mutationId` in the last push response that carried it (the last push response when none did). */
function outcomeOf(world: SyncWorld, mutationId: string): Record<string, unknown> {
  const pushes = [...world.replies].reverse().filter((r) => r.endpoint === 'push');
  const reply = pushes.find((r) => r.requestText.includes(mutationId)) ?? pushes[0];
  if (!reply) throw new Error('no push response has been received in this scenario');
  world.assert.equal(reply.status, 200, `the push was answered ${reply.status}: ${reply.text}`);
  const outcomes = [...(reply.json.accepted ?? []), ...(reply.json.rejected ?? [])] as Record<string, unknown>[];
  const outcome = outcomes.find((o) => o.mutation_id === mutationId);
  world.assert.ok(outcome, `the push response has no outcome for mutation ${mutationId}: ${reply.text}`);
  return outcome;
}

Then('the push outcome of mutation {string} is {string}', function (this: SyncWorld, mutationId: string, status: string) {
  this.assert.equal(outcomeOf(this, mutationId).status, status, `outcome status of ${mutationId}`);
});

Then('the push outcome of mutation {string} is {string} with code {string}', function (this: SyncWorld, mutationId: string, status: string, code: string) {
  const outcome = outcomeOf(this, mutationId);
  this.assert.equal({ status: outcome.status, code: outcome.code }, { status, code }, `outcome of ${mutationId}: ${JSON.stringify(outcome)}`);
});

Then('the response status is {int}', function (this: SyncWorld, status: number) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, status, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

Then('the response status is {int} with error code {string}', function (this: SyncWorld, status: number, code: string) {
  const reply = this.lastReply();
  this.assert.equal({ status: reply.status, code: reply.json?.error?.code }, { status, code }, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

Then(/^the response member "([^"]*)" equals (.+)$/, function (this: SyncWorld, pointer: string, expected: string) {
  const reply = this.lastReply();
  const actual = member(reply.json, pointer);
  this.assert.equal(actual, expectedValue(expected, this.noted), `member ${pointer} of the ${reply.endpoint} response ${reply.text.slice(0, 500)}`);
});

Then('the response has no member {string}', function (this: SyncWorld, pointer: string) {
  const reply = this.lastReply();
  this.assert.equal(member(reply.json, pointer), undefined, `the ${reply.endpoint} response has member ${pointer}: ${reply.text.slice(0, 500)}`);
});

Then('the response has no member {string} and no member {string}', function (this: SyncWorld, first: string, second: string) {
  const reply = this.lastReply();
  this.assert.equal([member(reply.json, first), member(reply.json, second)], [undefined, undefined], `the ${reply.endpoint} response ${reply.text.slice(0, 500)}`);
});

Given('the harness notes the scope_set_version of client {string} as {word}', async function (this: SyncWorld, name: string, label: string) {
  if (!/^[A-Z]$/.test(label)) throw new Error(`a noted value is named by one capital letter, not "${label}"`);
  let version: number;
  if (this.hasWire(name)) version = this.wire(name).scopeSetVersion;
  else {
    const client = await this.process(name);
    version = (await client.call<{ scopeSetVersion: number }>('inspectScopes')).scopeSetVersion;
  }
  this.noted.set(label, version);
});

Then('no durable state changed on the server', async function (this: SyncWorld) {
  if (!this.serverSnapshot) throw new Error('no server state was captured before the first action of this scenario');
  const now = await snapshotServerState(await this.readyServer(), this.deadlineMs);
  this.assert.equal(stateDifferences(this.serverSnapshot, now), [], 'durable server state changed');
});

Then('the row checksum of that change verifies against the harness codec', async function (this: SyncWorld) {
  const message = integrity(this).lastMessage;
  if (message === undefined) throw new Error('no change was singled out by an earlier step');
  const verdict = verifyRowMessage(await manifests(this), message);
  this.assert.ok(verdict.ok, `row checksum of row ${keyText(message)}: ${verdict.problem ?? ''}`);
});

Then('the response member {string} contains {string}', function (this: SyncWorld, pointer: string, item: string) {
  assertMemberContains(this.assert, this.lastReply(), pointer, item);
});

Then('the pull response lists no change for scope {string}', function (this: SyncWorld, scope: string) {
  const reply = this.lastReply();
  this.assert.equal({ endpoint: reply.endpoint, status: reply.status }, { endpoint: 'pull', status: 200 }, `the last response is a pull page: ${reply.text.slice(0, 400)}`);
  const changes = (reply.json.changes ?? []) as { scope: string }[];
  this.assert.equal(changes.filter((c) => c.scope === scope), [], `the pull page lists no change for ${scope}`);
});

Then(/^the error member "([^"]+)" equals (.+)$/, function (this: SyncWorld, name: string, expected: string) {
  const reply = this.lastReply();
  this.assert.equal(member(reply.json, `/error/${name}`), JSON.parse(expected), `error member ${name} of ${reply.text.slice(0, 300)}`);
});

function assertListed(world: SyncWorld, scopes: string[], member: string): void {
  const list = listed(world, member);
  world.assert.equal(
    scopes.filter((scope) => !list.includes(scope)),
    [],
    `scopes missing from "${member}" of the pull response (it lists ${JSON.stringify(list)})`,
  );
}

Then('the pull response lists scope {string} in {string}', function (this: SyncWorld, scope: string, member: string) {
  assertListed(this, [scope], member);
});

Then('the pull response lists scopes {string} in {string}', function (this: SyncWorld, scopes: string, member: string) {
  assertListed(this, scopeList(scopes), member);
});

Then('the pull response lists no change in scope {string}', function (this: SyncWorld, scope: string) {
  const changes = (lastPullAnswer(this).json?.changes ?? []) as { scope?: unknown }[];
  this.assert.equal(
    changes.filter((change) => change.scope === scope),
    [],
    `changes of scope "${scope}" in the pull response`,
  );
});

// SYNC-CAP-006 and SYNC-CAP-013: a row a reset's baseline or catch-up must have brought, by its title.
Then('the rebuild pages hold row {string} of table {string} with title {string}', async function (this: SyncWorld, pk: string, table: string, title: string) {
  const record = await rebuiltRecord(this, table, pk);
  this.assert.equal(record.title, title, `the title of the rebuilt ${table} row ${pk}`);
});

Then('the rebuild pages hold exactly these records:', function (this: SyncWorld, table: DataTable) {
  const last = generationsState(this).lastRebuild;
  if (last === undefined) throw new Error('no rebuild was fetched to its final page in this scenario');
  const final = last.run.pages.at(-1);
  this.assert.equal(final?.status, 200, `a rebuild page of ${last.scope} was answered ${final?.status}: ${final?.text.slice(0, 500)}`);
  const client = [...this.clientUsers.keys()].find((name) => this.hasWire(name) && this.wire(name).manifest !== undefined);
  if (client === undefined) throw new Error('no harness client holds a manifest to name the tables of rebuild records');
  const wire = this.wire(client);
  const named = (tableId: string) => wire.manifest?.tables.find((t) => t.table_id === tableId)?.name ?? tableId;
  // Columns beyond table and pk, when the step lists any, are compared too: a record must show the row as staged.
  const columns = (table.raw()[0] ?? []).filter((column) => column !== 'table' && column !== 'pk');
  const describe = (tableName: string, pk: unknown, value: (column: string) => unknown) => [`${tableName}/${String(pk)}`, ...columns.map((column) => `${column}=${String(value(column))}`)].join(' ');
  const actual = last.run.records
    .map((record) => {
      const tableName = named(String(record.table));
      return describe(tableName, keyValue(record.pk), (column) => record.row?.[wire.fieldId(tableName, column)]);
    })
    .sort();
  const expected = table.hashes().map((row) => describe(row.table ?? '', row.pk, (column) => row[column])).sort();
  this.assert.equal(actual, expected, `records of the rebuild of ${last.scope}`);
});

Then(/^the error body has "retryable" (true|false) and "reason" "([^"]+)"$/, function (this: SyncWorld, flag: string, reason: string) {
  const reply = this.lastReply();
  const error = (reply.json?.error ?? {}) as Obj;
  this.assert.equal({ retryable: error.retryable, reason: error.reason }, { retryable: flag === 'true', reason }, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`);
});

Then('member {string} does not list {string}', function (this: SyncWorld, pointer: string, scope: string) {
  const body = this.lastReply().json as Obj;
  const list = pointer.split('.').reduce<unknown>((v, k) => (v as Obj | undefined)?.[k], body) as { id?: string }[] | undefined;
  this.assert.ok(Array.isArray(list), `member ${pointer} is a list`);
  this.assert.ok(!(list ?? []).some((s) => s.id === scope), `${pointer} does not list ${scope}: ${JSON.stringify(list)}`);
});

Then('the connect response lists {string} in {string} with cursor null', async function (this: SyncWorld, scope: string, _where: string) {
  const { response } = await connectOf(this);
  const entry = addedScopes(response).find((s) => s.id === scope);
  this.assert.ok(entry !== undefined, `the connect lists ${scope} in scopes.add`);
  this.assert.equal(entry?.cursor, null, `the cursor of ${scope} in scopes.add`);
});

Then('the error body has no success members', function (this: SyncWorld) {
  const reply = this.lastReply();
  const body = (reply.json ?? {}) as Obj;
  const success = ['changes', 'checksums', 'scopes', 'scope_updates', 'scope_cursor_updates', 'has_more', 'cursor', 'records', 'accepted', 'rejected', 'client_generation', 'scope_set_version'];
  this.assert.equal(
    Object.keys(body).filter((k) => success.includes(k)),
    [],
    `success members in the error body ${reply.text}`,
  );
  this.assert.ok(typeof (body.error as Obj | undefined)?.code === 'string', `the body is an error body: ${reply.text}`);
});

Then('the push outcome of that mutation is {string} with code {string}', async function (this: SyncWorld, status: string, code: string) {
  const name = focus.get(this) ?? 'S';
  const pushes = (await exchangesOf(this, name, { orUserCredential: true })).filter((e) => e.endpoint === 'push');
  const outcomes = pushes.flatMap((e) => {
    const body = answerOf(e)?.body;
    return [...((body?.accepted ?? []) as Obj[]), ...((body?.rejected ?? []) as Obj[])];
  });
  this.assert.equal(outcomes.length, 1, `push outcomes client "${name}" received`);
  this.assert.equal({ status: outcomes[0]?.status, code: outcomes[0]?.code }, { status, code }, `the outcome of the pushed update: ${JSON.stringify(outcomes[0])}`);
});

Then(/^the response member "([^"]+)" is an integer in (-?[0-9]+)\.\.(-?[0-9]+)$/, function (this: SyncWorld, pointer: string, low: string, high: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the response was ${reply.status}: ${reply.text}`);
  const token = (numberTokens(Buffer.from(reply.text, 'utf8')) ?? []).find((t) => t.pointer === pointer);
  this.assert.ok(token, `the ${reply.endpoint} response has no number at ${pointer}: ${reply.text}`);
  this.assert.match(token.text, INTEGER_TOKEN, `${pointer} must be an integer token`);
  const value = BigInt(token.text);
  this.assert.ok(value >= BigInt(low) && value <= BigInt(high), `${pointer} = ${token.text} lies outside ${low}..${high}`);
});

Then('the response status is not 200', function (this: SyncWorld) {
  const reply = this.lastReply();
  this.assert.notEqual(reply.status, 200, `the ${reply.endpoint} request was answered 200: ${reply.text}`);
});

Then('the pull response lists exactly these changes:', async function (this: SyncWorld, table: DataTable) {
  const reply = lastPull(this);
  // Columns beyond scope, table, op and pk, when listed, are compared too: an upsert must carry those values, a delete none.
  const columns = (table.raw()[0] ?? []).filter((c) => !['scope', 'table', 'op', 'pk'].includes(c));
  const describe = (c: { scope: unknown; table: unknown; op: unknown; pk: unknown }, value: (column: string) => unknown) =>
    [`${String(c.scope)} ${String(c.table)} ${String(c.op)} ${String(c.pk)}`, ...columns.map((column) => `${column}=${String(value(column) ?? '')}`)].join(' ');
  const expected: string[] = [];
  for (const row of table.hashes()) {
    const tableId = (await tableNamed(this, String(row.table))).table_id;
    expected.push(describe({ scope: row.scope, table: tableId, op: row.op, pk: row.pk }, (column) => row[column]));
  }
  const actual: string[] = [];
  for (const c of changesOf(reply)) {
    const shape = await tableNamed(this, String(c.table));
    const row = (c.row ?? {}) as Obj;
    actual.push(describe({ scope: c.scope, table: c.table, op: c.op, pk: keyValue(c.pk) }, (column) => (c.op === 'upsert' ? row[shape.fields.find((f) => f.name === column)?.field_id ?? column] : '')));
  }
  // The set of changes, not their order: the merge order is another requirement's business.
  this.assert.equal([...actual].sort(), [...expected].sort(), `changes of the pull response: ${reply.text}`);
});

Then('the pull response holds {int} changes', function (this: SyncWorld, count: number) {
  const reply = lastPull(this);
  this.assert.equal(changesOf(reply).length, count, `changes in the pull response: ${reply.text.slice(0, 2000)}`);
});

Then('the pull response lists no change for table {string}', async function (this: SyncWorld, name: string) {
  const reply = lastPull(this);
  const tableId = (await tableNamed(this, name)).table_id;
  this.assert.equal(changesOf(reply).filter((c) => c.table === tableId), [], `changes for ${name} in the pull response`);
});

Then('the push outcome of that mutation is {string}', async function (this: SyncWorld, status: string) {
  // A client process wrote "that mutation" through application SQL: its outcome is in what the proxy delivered to it.
  if (lastMutation.get(this) === undefined && this.clients.size > 0) {
    const { name, id, outcomes } = await processWriteOutcomes(this);
    this.assert.equal([...new Set(outcomes.map((o) => String(o.status)))], [status], `outcomes the server gave mutation ${id} of client "${name}"`);
    return;
  }
  const id = thatMutation(this);
  const outcome = outcomeAnywhere(this, id);
  const sent = [...this.replies].reverse().find((r) => r.endpoint === 'push' && r.requestText.includes(id))?.requestText;
  this.assert.ok(outcome, `no push response carried an outcome for mutation ${id}`);
  this.assert.equal(outcome.status, status, `outcome of ${id}: ${JSON.stringify(outcome)}; the request was ${sent}`);
});

Then('the outcome carries no server_row, no row_checksum and no server_version', function (this: SyncWorld) {
  const outcome = thatOutcome(this);
  const present = ['server_row', 'row_checksum', 'server_version'].filter((name) => Object.hasOwn(outcome, name));
  this.assert.equal(present, [], `the outcome carries ${present.join(', ')}: ${JSON.stringify(outcome)}`);
});

function thatMutation(world: SyncWorld): string {
  const id = lastMutation.get(world);
  if (id === undefined) throw new Error('no push request with a fixed batch_id was sent in this scenario');
  return id;
}

Then(/^member "([^"]+)" is (true|false)$/, function (this: SyncWorld, name: string, flag: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the ${reply.endpoint} request was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  this.assert.equal(reply.json?.[name], flag === 'true', `member "${name}" of the ${reply.endpoint} response`);
});

function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object' || value instanceof RawNumber) return value;
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortedKeys((value as Record<string, unknown>)[k])]));
}

// A member compared as JSON text: the canonical form of what the server wrote against the canonical form of the expected value.
Then(/^member "([^"]+)" is (\[.*\]|\{.*\})$/, function (this: SyncWorld, name: string, json: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the ${reply.endpoint} request was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const expected = parseStrict(Buffer.from(json, 'utf8'));
  if (expected === undefined) throw new Error(`${json} is not JSON`);
  const body = parseStrict(Buffer.from(reply.text, 'utf8')) as unknown as Record<string, unknown> | undefined;
  // A dotted name reads a nested member (`scopes.add`); object members compare in canonical (sorted) key order on both sides.
  const actual = name.split('.').reduce<unknown>((v, k) => (v !== null && typeof v === 'object' && !(v instanceof RawNumber) ? (v as Record<string, unknown>)[k] : undefined), body);
  this.assert.equal(actual === undefined ? undefined : wireText(sortedKeys(actual)), wireText(sortedKeys(expected)), `member "${name}" of the ${reply.endpoint} response`);
});

Then('the response has member {string}', function (this: SyncWorld, pointer: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the ${reply.endpoint} request was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  this.assert.notEqual(member(reply.json, pointer), undefined, `the ${reply.endpoint} response has no member ${pointer}: ${reply.text.slice(0, 500)}`);
});

/** A dotted member path of the last answer (an object keyed by scope, or a list of scopes or entries with an `id`) does not name the scope. */
Then('member {string} has no entry for {string}', function (this: SyncWorld, pointer: string, scope: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the ${reply.endpoint} was answered: ${reply.text.slice(0, 400)}`);
  const value = pointer.split('.').reduce<unknown>((v, k) => (v as Json | undefined)?.[k], reply.json);
  const entries = Array.isArray(value) ? value.map((e) => (typeof e === 'string' ? e : String((e as Json)?.id))) : Object.keys((value ?? {}) as Json);
  this.assert.ok(!entries.includes(scope), `${pointer} has an entry for ${scope}: ${JSON.stringify(value)}`);
});

Then('the connect response has schema action {string}', function (this: SyncWorld, action: string) {
  // The last connect answered in the scenario, even when other requests followed it.
  const reply = [...this.replies].reverse().find((r) => r.endpoint === 'connect');
  this.assert.ok(reply !== undefined, 'no connect was answered in this scenario');
  this.assert.equal({ status: reply?.status, action: reply?.json?.schema?.action }, { status: 200, action }, `the connect answer ${reply?.text.slice(0, 400)}`);
});

Then('member {string} matches schema {string}', function (this: SyncWorld, path: string, kind: string) {
  const reply = this.lastReply();
  const result = validate(kind as never, path.split('.').reduce<unknown>((v, k) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), reply.json));
  this.assert.ok(result.ok, `member ${path} against schema ${kind}: ${JSON.stringify(result.ok ? [] : result.errors).slice(0, 600)}`);
});

// The insert is found by its mutation_id in the request, and must have exactly one outcome.
Then('the push response lists the insert of {string} as {string}', function (this: SyncWorld, key: string, status: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the push was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  const insert = ((JSON.parse(reply.requestText) as Obj).mutations as Obj[]).find((m) => m.op === 'insert' && Object.values((m.pk ?? {}) as Obj).includes(key));
  if (insert === undefined) throw new Error(`the last push sent no insert of "${key}"`);
  const listed = outcomesOf(reply.json).filter((o) => o.mutation_id === insert.mutation_id);
  this.assert.equal(listed.map((o) => o.status), [status], `outcomes of the insert of "${key}" in ${reply.text.slice(0, 300)}`);
});
