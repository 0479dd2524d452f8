/**
 * Steps of SYNC-SCHEMA-007 Strict Positive Limits: pull and rebuild page
 * limits and push size and count limits sent on the wire at and past their
 * bounds, the administrative limits set through the operator's SQL, and a
 * membership result over its fanout bound.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { bodyOf, exchangesOf, upstreamOf } from '../support/exchanges.ts';
import { generatedSeed } from '../support/generated-seed.ts';
import { activeGeneration } from '../support/scopes/function-contract.ts';
import { drawInvalidLimits } from '../support/strict-limits/limit-values.ts';
import { beginBackfill, compactWithBatchSize, describeOutcome, effectCount, lastOutcome, limitsState, registerAssignment, registerProjects, registrationError, retentionPicture, sqlInteger } from '../support/strict-limits/operator-limits.ts';
import { batchText, freshBatchId, sendPushText } from '../support/strict-limits/push-batches.ts';
import { addRows, rememberTable, tableChanges } from '../support/strict-limits/server-table.ts';
import { outcomesOf } from '../support/wire-values/outcomes.ts';
import type { Obj } from '../support/wire-values/recorded.ts';
import { type Edit, fillerInsert, sendEdited, stepValue } from '../support/wire-values/requests.ts';
import type { SyncWorld } from '../support/world.ts';

/** What each generated pull got: its limit text, status, error code and any member besides "error". */
interface DrawnPull {
  limit: string;
  status: number;
  code: unknown;
  success: string[];
}

const drawnPulls = new WeakMap<SyncWorld, { seed: number; answers: DrawnPull[] }>();

/** `(absent)` removes the member; anything else is the JSON text sent as written. */
function memberEdit(world: SyncWorld, name: string, text: string): Edit {
  return text === '(absent)' ? { pointer: `/${name}`, remove: true } : { pointer: `/${name}`, value: stepValue(world, text) };
}

When(/^the harness client "([^"]+)" sends a valid pull request with member "([^"]+)" set to (.+)$/, async function (this: SyncWorld, name: string, memberName: string, value: string) {
  await sendEdited(this, name, 'pull', [memberEdit(this, memberName, value)]);
});

When(/^the harness client "([^"]+)" sends a first rebuild request for scope "([^"]+)" with member "([^"]+)" set to (.+)$/, async function (this: SyncWorld, name: string, scope: string, memberName: string, value: string) {
  await sendEdited(this, name, 'rebuild', [memberEdit(this, memberName, value)], scope);
});

// The protocol lets a limit failure name its field and bounds, all three together or none of them.
Then('the error body is either without context members or has "field" "limit", "minimum" 1 and "maximum" 1000', function (this: SyncWorld) {
  const reply = this.lastReply();
  const error = (reply.json?.error ?? undefined) as Obj | undefined;
  this.assert.ok(error !== undefined && typeof error === 'object', `the answer is not an error body: ${reply.text.slice(0, 300)}`);
  const context = { field: error?.field, minimum: error?.minimum, maximum: error?.maximum };
  const none = Object.values(context).every((v) => v === undefined);
  this.assert.ok(none || (context.field === 'limit' && context.minimum === 1 && context.maximum === 1000), `the error context is neither absent nor field "limit" 1..1000: ${reply.text.slice(0, 300)}`);
});

Given(/^the server table "([^"]+)" gains (\d+) rows owned by "([^"]+)"$/, async function (this: SyncWorld, table: string, count: string, owner: string) {
  await addRows(this, table, Number(count), owner);
});

Then(/^member "changes" holds (\d+) changes and member "has_more" is true$/, function (this: SyncWorld, count: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the ${reply.endpoint} request was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  this.assert.equal({ changes: (reply.json?.changes ?? []).length, has_more: reply.json?.has_more }, { changes: Number(count), has_more: true }, `the page the ${reply.endpoint} returned`);
});

// The version the client held is what it presented in the refused pull: a refusal changes nothing it holds.
Then('member "scope_set_version" is one more than the version {string} held before the refused pull', async function (this: SyncWorld, name: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the ${reply.endpoint} request was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  const pulls = await exchangesOf(this, name, { endpoints: ['pull'] });
  const refused = pulls.filter((e) => upstreamOf(e)?.status === 400).at(-1);
  if (refused === undefined) throw new Error(`client "${name}" sent no pull the server refused`);
  const held = bodyOf(refused.requestBody)?.scope_set_version;
  if (typeof held !== 'number') throw new Error(`the refused pull carried no scope_set_version: ${JSON.stringify(bodyOf(refused.requestBody)).slice(0, 300)}`);
  this.assert.equal(reply.json?.scope_set_version, held + 1, `scope_set_version after the refused pull (the client held ${held})`);
});

When(/^the harness client "([^"]+)" pushes batch "([^"]+)" built as (.+)$/, async function (this: SyncWorld, name: string, batchId: string, description: string) {
  await this.readyServer();
  const client = this.wire(name);
  const text = batchText(this, client, description, batchId);
  await rememberTable(this, [...this.model.tables.keys()][0] ?? '');
  await sendPushText(client, text);
});

When(/^the harness client "([^"]+)" pushes a batch built as (.+)$/, async function (this: SyncWorld, name: string, description: string) {
  await this.readyServer();
  const client = this.wire(name);
  await sendPushText(client, batchText(this, client, description, freshBatchId()));
});

Then('the server table {string} is unchanged', async function (this: SyncWorld, table: string) {
  this.assert.equal(await tableChanges(this, table), [], `rows of "${table}" the server serves, against those before the refused request`);
});

When('the harness client {string} pushes batch {string} holding one valid insert of task {string}', async function (this: SyncWorld, name: string, batchId: string, key: string) {
  await this.readyServer();
  const client = this.wire(name);
  await client.push([fillerInsert(this, client, key)], { batch_id: batchId });
});

Then('every mutation of the batch has exactly one outcome', function (this: SyncWorld) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the push was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  const sent = ((JSON.parse(reply.requestText) as Obj).mutations as Obj[]).map((m) => String(m.mutation_id));
  const listed = outcomesOf(reply.json).map((o) => String(o.mutation_id));
  this.assert.equal([...listed].sort(), [...sent].sort(), `mutation IDs listed in the outcomes against the ${sent.length} sent`);
});

Given(/^a registered table "([^"]+)" with a string key "([^"]+)" and (\d+) nullable string columns "([a-z_]+)(\d+)" to "\4(\d+)"$/, function (this: SyncWorld, name: string, key: string, count: string, prefix: string, first: string, last: string) {
  const width = first.length;
  const numbers = Array.from({ length: Number(last) - Number(first) + 1 }, (_, i) => Number(first) + i);
  if (numbers.length !== Number(count)) throw new Error(`"${prefix}${first}" to "${prefix}${last}" are ${numbers.length} columns, not ${count}`);
  this.model.declareTable(name, [
    { name: key, type: 'string', key: true, nullable: false },
    ...numbers.map((n) => ({ name: `${prefix}${String(n).padStart(width, '0')}`, type: 'string', key: false, nullable: true })),
  ]);
});

Given('the harness client {string} has connected again to install the new manifest', async function (this: SyncWorld, name: string) {
  await this.readyServer();
  const client = this.wire(name);
  const reply = await client.connect();
  if (reply.status !== 200) throw new Error(`client "${name}" could not connect again: ${reply.status} ${reply.text.slice(0, 300)}`);
  for (const table of this.model.tables.keys()) client.tableSchema(table);
});

// The key counts among the authored columns; the others are the table's nullable columns in order.
When('the harness client {string} pushes a batch with one insert into {string} authoring {int} columns', async function (this: SyncWorld, name: string, table: string, count: number) {
  const client = this.wire(name);
  const key = this.model.keyColumn(table).name;
  const others = this.model.table(table).columns.filter((c) => !c.key).slice(0, count - 1);
  if (others.length !== count - 1) throw new Error(`table "${table}" has fewer than ${count - 1} columns besides its key`);
  const pk = `${table}-${count}`;
  const columns = Object.fromEntries([[key, pk], ...others.map((c) => [c.name, 'v'])]);
  await sendPushText(client, JSON.stringify(client.pushBody([client.mutation({ op: 'insert', table, pk, columns })])));
});

Given(/^a registered table "([^"]+)" with a string key "([^"]+)" and a string column "([^"]+)"$/, function (this: SyncWorld, name: string, key: string, column: string) {
  this.model.declareTable(name, [
    { name: key, type: 'string', key: true, nullable: false },
    { name: column, type: 'string', key: false, nullable: false },
  ]);
});

Given(/^table "([^"]+)" is registered with max_scope_fanout (\d+)$/, function (this: SyncWorld, name: string, fanout: string) {
  const table = this.model.table(name);
  if (table.installed) throw new Error(`table "${name}" is already installed: set its fanout bound before the first server step`);
  table.maxScopeFanout = Number(fanout);
});

Then(/^the error body has "reason" "([^"]+)" and "retryable" (true|false)$/, function (this: SyncWorld, reason: string, flag: string) {
  const reply = this.lastReply();
  const error = (reply.json?.error ?? {}) as Obj;
  this.assert.equal({ reason: error.reason, retryable: error.retryable }, { reason, retryable: flag === 'true' }, `the error body ${reply.text.slice(0, 300)}`);
});

Then('the response carries a {string} header', function (this: SyncWorld, header: string) {
  const reply = this.lastReply();
  const value = reply.headers.get(header);
  this.assert.ok(value !== null && /^\d+$/.test(value.trim()), `the ${reply.endpoint} response's ${header} header is ${JSON.stringify(value)}, not a number of seconds`);
});

Given('the harness client {string} has pulled and acknowledged every change', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const pages = await client.pullAll();
  // The next pull presents the cursors of the last page, which acknowledges them.
  const ack = await client.pull();
  if (pages.at(-1)?.status !== 200 || ack.status !== 200) throw new Error(`client "${name}" could not pull and acknowledge: ${ack.status} ${ack.text.slice(0, 300)}`);
});

When(/^the operator runs compaction with batch size (NULL|-?\d+)$/, async function (this: SyncWorld, value: string) {
  if ((await effectCount(this)) === 0) throw new Error('the server holds no effect, so a compaction could not show it deleted nothing');
  await compactWithBatchSize(this, sqlInteger(value));
});

Then('the operation fails with SQLSTATE {string}', function (this: SyncWorld, sqlstate: string) {
  const outcome = lastOutcome(this);
  this.assert.equal(outcome.ok ? 'succeeded' : outcome.code, sqlstate, describeOutcome(outcome));
});

Then('no effect was deleted and no resume floor moved', async function (this: SyncWorld) {
  const before = limitsState(this).retention;
  if (before === undefined) throw new Error('the effects and floors were not pictured before the compaction');
  this.assert.equal(await retentionPicture(this), before, 'effects and resume floors after the refused compaction against before it');
});

When(/^the operator registers table "([^"]+)" with (max_scope_fanout|max_impact_rows) (-?\d+)$/, async function (this: SyncWorld, table: string, setting: string, value: string) {
  await registerProjects(this, table, setting, Number(value));
});

Then('the operation fails with {string} and reason {string}', function (this: SyncWorld, code: string, reason: string) {
  const outcome = lastOutcome(this);
  const error = registrationError(outcome);
  this.assert.equal({ sqlstate: outcome.ok ? 'succeeded' : outcome.code, code: error.code, reason: error.reason }, { sqlstate: '22023', code, reason }, describeOutcome(outcome));
});

Then('the active registry generation is unchanged', async function (this: SyncWorld) {
  const before = limitsState(this).generation;
  if (before === undefined) throw new Error('the active registry generation was not recorded before the operation');
  this.assert.equal(await activeGeneration(this), before, 'active registry generation after the refused operation');
});

When(/^the operator starts a staged membership backfill with batch size (-?\d+)$/, async function (this: SyncWorld, value: string) {
  await beginBackfill(this, Number(value));
});

When(/^the operator registers assignment function "([^"]+)" with bound (-?\d+)$/, async function (this: SyncWorld, name: string, bound: string) {
  await registerAssignment(this, name, Number(bound));
});

// The function would give alice a project scope: had it been registered, her next connect would list it.
Then('the registered assignment function is unchanged', async function (this: SyncWorld) {
  const held = limitsState(this).scopeSetVersion;
  const reply = await this.wire('H').connect();
  this.assert.equal(reply.status, 200, `the connect after the refused registration was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  this.assert.equal({ scope_set_version: reply.json?.scope_set_version, add: reply.json?.scopes?.add, remove: reply.json?.scopes?.remove }, { scope_set_version: held, add: [], remove: [] }, `the scopes of alice after the refused registration: ${reply.text.slice(0, 300)}`);
});

When(/^the harness client "([^"]+)" sends (\d+) pull requests whose "limit" is drawn by fast-check from JSON values that are not an integer from 1 to 1000$/, async function (this: SyncWorld, name: string, count: string) {
  const seed = generatedSeed();
  const limits = drawInvalidLimits(Number(count), seed);
  this.attach(JSON.stringify({ seed, limits }), 'application/json');
  const answers: DrawnPull[] = [];
  for (const text of limits) {
    const reply = await sendEdited(this, name, 'pull', [{ pointer: '/limit', value: stepValue(this, text) }]);
    answers.push({ limit: text, status: reply.status, code: reply.json?.error?.code, success: Object.keys(reply.json ?? {}).filter((k) => k !== 'error') });
  }
  drawnPulls.set(this, { seed, answers });
});

Then('every one of those pulls is answered 400 with error code "invalid_request" and no other member', function (this: SyncWorld) {
  const drawn = drawnPulls.get(this);
  if (drawn === undefined) throw new Error('no generated pulls were sent in this scenario');
  const wrong = drawn.answers.filter((a) => a.status !== 400 || a.code !== 'invalid_request' || a.success.length > 0);
  this.assert.equal(wrong, [], `pulls with a generated limit that were not refused (seed ${drawn.seed}; replay with SYNCHRO_SEED=${drawn.seed})`);
});
