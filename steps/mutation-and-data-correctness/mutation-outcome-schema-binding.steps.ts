/**
 * SYNC-MUT-016 Mutation Outcome Schema Binding
 * (features/mutation-and-data-correctness/mutation-outcome-schema-binding.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { isResponse } from '../../harness/proxy/records.ts';
import type { SchemaManifest } from '../../harness/wire/index.ts';
import { statusOf } from '../support/client-lifecycle/observe.ts';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf, deliveredOf } from '../support/exchanges.ts';
import { manifests } from '../support/integrity/context.ts';
import { rowMessages, verifyRowMessage } from '../support/integrity/oracle.ts';
import { arm } from '../support/integrity/tampering.ts';
import { deliveredOutcomes } from '../support/mutations/pushes.ts';
import { queueOf } from '../support/mutations/queue.ts';
import { capturedBy, writesOf } from '../support/mutations/writes.ts';
import { localRow } from '../support/push-ledger/client-outcomes.ts';
import { lastPush, type Obj, outcomeInLastPush, outcomesIn } from '../support/push-ledger/state.ts';
import { currentManifest, notedManifest } from '../support/schema-and-versions/manifests.ts';
import { stateOf } from '../support/schema-and-versions/state.ts';
import { scopeState } from '../support/integrity/context.ts';
import { outcomesOf } from '../support/wire-values/outcomes.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the proxy delivered to client "([^"]+)" an outcome/);
processPhrase(/^client "([^"]+)" (?:shows|still shows|is (?:not )?in state|did not write|marks scope)/);

const ref = (m: SchemaManifest) => ({ version: m.schema_version, hash: m.schema_hash });

/** A schema reference as `version/hash`, whatever the member order it came in. */
const refText = (value: unknown) => `${String((value as Obj | undefined)?.version)}/${String((value as Obj | undefined)?.hash)}`;

// Remembering the current schema under a label is shared: steps/common/schema-manifests.steps.ts.

// --- the binding the server gives ----------------------------------------------------------------

Then('every outcome in the response has outcome_schema equal to {string}', function (this: SyncWorld, label: string) {
  const reply = lastPush(this);
  const outcomes = outcomesIn(reply);
  this.assert.ok(outcomes.length > 0, `the push answer has outcomes: ${reply.text.slice(0, 300)}`);
  const expected = refText(ref(notedManifest(this, label)));
  this.assert.equal(outcomes.filter((o) => refText(o.outcome_schema) !== expected).map((o) => `${String(o.mutation_id)}: ${JSON.stringify(o.outcome_schema)}`), [], `outcomes not bound to ${label} (${expected})`);
});

/** The row-bearing outcomes of the last push answer as the client was given it. */
async function deliveredRowOutcomes(world: SyncWorld) {
  const push = (await world.proxy()).exchanges.filter((e) => e.endpoint === 'push' && e.done).at(-1);
  if (push === undefined) throw new Error('the proxy recorded no push');
  const messages = rowMessages([push], (e) => bodyOf(deliveredOf(e)?.body) as Obj | undefined);
  world.assert.ok(messages.length > 0, 'the last push answer carries rows');
  return messages;
}

Then(/^every row_checksum in the response equals the ADR 005 row digest of its server_row under (?:"([^"]+)" and its|its own outcome_schema and) server_version$/, async function (this: SyncWorld, label: string | null) {
  const known = await manifests(this);
  for (const message of await deliveredRowOutcomes(this)) {
    // Under a named manifest the digest is computed under it, whatever the outcome claims.
    const bound = typeof label === 'string' ? { ...message, schemaHash: notedManifest(this, label).schema_hash } : message;
    const verdict = verifyRowMessage(known, bound);
    this.assert.ok(verdict.ok, `row_checksum of ${JSON.stringify(message.raw)} under ${label ?? 'its outcome_schema'}: ${verdict.problem ?? ''}`);
  }
});

Then(/^the outcome of mutation "([^"]+)" has outcome_schema "([^"]+)" and a server_row (?:without field "(\w+)"|with field "(\w+)" null)$/, function (this: SyncWorld, id: string, label: string, without: string | null, withNull: string | null) {
  const outcome = outcomeInLastPush(this, id);
  const manifest = notedManifest(this, label);
  this.assert.equal(outcome.outcome_schema, ref(manifest), `outcome_schema of ${id}`);
  const row = (outcome.server_row ?? {}) as Obj;
  const column = (without ?? withNull) as string;
  // The field ID of the column comes from the newest manifest that has it.
  const latest = [...stateOf(this).manifests.values()].reverse().find((m) => m.tables.some((t) => t.fields.some((f) => f.name === column)));
  const field = latest?.tables.flatMap((t) => t.fields).find((f) => f.name === column)?.field_id;
  this.assert.ok(field !== undefined, `a remembered manifest names field ${column}`);
  if (typeof without === 'string') this.assert.ok(!Object.hasOwn(row, String(field)), `the server_row of ${id} has no field ${column}: ${JSON.stringify(row)}`);
  else this.assert.ok(Object.hasOwn(row, String(field)) && row[String(field)] === null, `the server_row of ${id} has field ${column} null: ${JSON.stringify(row)}`);
});

// --- what the client does with the binding -------------------------------------------------------

// Dropping the answer to a committed push is shared: steps/common/proxy-queue.steps.ts.

const ORDINAL: Record<string, number> = { first: 0, second: 1 };

/** The captured mutation a phrase names: "the insert of row X", "the first update of row X". */
function namedMutation(world: SyncWorld, name: string, phrase: string): string {
  const m = /^(?:the )?(?:(first|second) )?(insert|update|delete) of row "([^"]+)"$/.exec(phrase);
  if (!m) throw new Error(`no captured mutation is named "${phrase}"`);
  const verb = m[2] === 'insert' ? 'INSERT' : m[2] === 'update' ? 'UPDATE' : 'DELETE';
  return capturedBy(world, name, new RegExp(`^${verb}\\b[^]*'${m[3]}'`, 'i'), ORDINAL[m[1] ?? 'first']);
}

Then(/^the proxy delivered to client "([^"]+)" an outcome for (the (?:first |second )?(?:insert|update|delete) of row "[^"]+") with (?:outcome_schema "([^"]+)"|the old outcome_schema)$/, async function (this: SyncWorld, name: string, phrase: string, label: string | null) {
  const id = namedMutation(this, name, phrase);
  const outcomes = await deliveredOutcomes(this, name, id);
  this.assert.ok(outcomes.length > 0, `the proxy delivered an outcome for ${phrase} (${id}) to client "${name}"`);
  const last = outcomes.at(-1) as Obj;
  const expected = typeof label === 'string' ? ref(notedManifest(this, label)) : ref(notedManifest(this, 'S1'));
  this.assert.equal(last.outcome_schema, expected, `outcome_schema of the outcome of ${phrase}`);
  const current = ref(await currentManifest(this));
  this.assert.notEqual(refText(last.outcome_schema), refText(current), 'the outcome is bound to a schema older than the current one');
});

Then('client {string} is not in state {string}', async function (this: SyncWorld, name: string, state: string) {
  const status = await statusOf(await this.process(name));
  this.assert.notEqual(status.status, state, `state of client "${name}" (failure ${JSON.stringify(status.failure)})`);
});

Then('client {string} is in state {string} with a typed failure of operation {string}', async function (this: SyncWorld, name: string, state: string, operation: string) {
  const status = await statusOf(await this.process(name));
  this.assert.equal(status.status, state, `state of client "${name}"`);
  this.assert.equal(status.failure?.operation, operation, `operation of the failure of client "${name}": ${JSON.stringify(status.failure)}`);
  this.assert.ok(typeof status.failure?.code === 'string' && status.failure.code.length > 0, `the failure of client "${name}" has a code: ${JSON.stringify(status.failure)}`);
});

Then('client {string} still shows the update of row {string} with its mutation ID and authored fields', async function (this: SyncWorld, name: string, pk: string) {
  const id = namedMutation(this, name, `the update of row "${pk}"`);
  const mutation = (await queueOf(this, name)).find((m) => m.id === id);
  this.assert.ok(mutation, `client "${name}" still shows mutation ${id}`);
  const sql = writesOf(this, name).find((w) => w.captured.includes(id))?.sql ?? '';
  const authored = Object.fromEntries([...sql.matchAll(/(\w+) = '([^']*)'/g)].filter((m) => m[1] !== 'id').map((m) => [m[1], m[2]]));
  this.assert.equal({ op: mutation?.op, recordId: mutation?.recordId, columns: mutation?.columns }, { op: 'update', recordId: pk, columns: authored }, `the update of ${pk}`);
  this.assert.notEqual(mutation?.status, 'accepted', `the update of ${pk} was not taken as accepted`);
});

/** What the proxy does to the outcome in the next push answer, by the feature's wording. */
const REWRITES: Array<[RegExp, (outcome: Obj, match: RegExpExecArray, field: (column: string) => string) => void]> = [
  [
    /^outcome_schema member is removed$/,
    (o) => {
      delete o.outcome_schema;
    },
  ],
  [
    /^outcome_schema hash is replaced by 64 "([0-9a-f])" characters with version unchanged$/,
    (o, m) => {
      o.outcome_schema = { ...(o.outcome_schema as Obj), hash: (m[1] as string).repeat(64) };
    },
  ],
  [
    /^outcome_schema becomes version (\d+) with a hash no manifest of the client has$/,
    (o, m) => {
      o.outcome_schema = { version: Number(m[1]), hash: 'c'.repeat(64) };
    },
  ],
  [
    /^server_row (\w+) becomes "([^"]*)" while row_checksum stays$/,
    (o, m, field) => {
      const row = o.server_row as Obj | undefined;
      if (row !== undefined) row[field(m[1] as string)] = m[2];
    },
  ],
];

Given(/^the proxy will rewrite the next push response to client "([^"]+)" so that the outcome's (.+)$/, async function (this: SyncWorld, name: string, change: string) {
  const rewrite = REWRITES.map(([pattern, edit]) => ({ match: pattern.exec(change), edit })).find((r) => r.match !== null);
  if (rewrite === undefined || rewrite.match === null) throw new Error(`no known rewrite of an outcome reads "${change}"`);
  const { match, edit } = rewrite;
  const manifest = await currentManifest(this);
  const field = (column: string) => {
    const found = manifest.tables.flatMap((t) => t.fields).find((f) => f.name === column)?.field_id;
    if (found === undefined) throw new Error(`the current manifest has no field "${column}"`);
    return found;
  };
  await arm(this, name, 'push', `the outcome's ${change}`, (json) => {
    const outcomes = outcomesOf(json);
    if (outcomes.length === 0) return undefined;
    for (const outcome of outcomes) edit(outcome, match, field);
    return json;
  });
});

// --- a historical row the current schema cannot hold ---------------------------------------------

When('client {string} syncs while the proxy pauses pull and rebuild requests', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  const proxy = await this.proxy();
  const mine = (request: unknown) => (request as Obj | undefined)?.client_id === client.clientId;
  for (const endpoint of ['pull', 'rebuild'] as const) proxy.inject({ endpoint, when: mine, times: Number.POSITIVE_INFINITY, fault: { kind: 'pause' } });
  const window = await this.openSyncWindow(name, 'syncs');
  const running = this.syncProcess(name).then(async (result) => {
    await this.closeSyncWindow(window);
    return result;
  });
  // The sync has pushed and applied the push answer once it waits on its first pull or rebuild answer.
  const ended = running.then((result) => ({ result }));
  const outcome = await Promise.race([proxy.whenHeld(this.deadlineMs).then(() => undefined), ended]);
  if (outcome !== undefined) {
    const calls = proxy.exchanges.slice(window.from).map((e) => `${e.endpoint} ${isResponse(e.delivered) ? e.delivered.status : 'no answer'}`);
    throw new Error(`the sync of client "${name}" ended before it asked for a pull or rebuild: ${JSON.stringify(outcome.result)}; it sent ${calls.join(', ')}`);
  }
});

Then('client {string} did not write that outcome\'s server_row into table {string}', async function (this: SyncWorld, name: string, table: string) {
  const id = namedMutation(this, name, 'the first update of row "n-1"');
  const outcome = (await deliveredOutcomes(this, name, id)).at(-1) as Obj | undefined;
  const row = outcome?.server_row as Obj | undefined;
  this.assert.ok(row !== undefined, `the outcome of ${id} carries a server_row: ${JSON.stringify(outcome)}`);
  const manifest = notedManifest(this, 'S1');
  const shape = manifest.tables.find((t) => t.table_id === outcome?.table);
  const updatedAt = shape?.fields.find((f) => f.name === 'updated_at')?.field_id;
  this.assert.ok(updatedAt !== undefined, 'the old manifest names the update-time field');
  const pk = String(keyValue(outcome?.pk));
  const local = await localRow(this, name, table, pk);
  this.assert.ok(local !== undefined, `client "${name}" still holds row ${pk}`);
  // The update-time field is written by the server only: the local row carries the outcome's value only if the row was written.
  this.assert.notEqual(local?.updated_at, row?.[String(updatedAt)], `updated_at of the local row ${pk} against the historical server_row`);
});

Then('client {string} marks scope {string} as requiring a rebuild under the current schema', async function (this: SyncWorld, name: string, scope: string) {
  const state = await scopeState(this, name, scope);
  this.assert.equal(state?.rebuildRequired, true, `scope ${scope} of client "${name}" requires a rebuild: ${JSON.stringify(state)}`);
  const inspected = await (await this.process(name)).call<{ schema?: { version?: number; hash?: string } | null }>('inspectScopes');
  const current = await currentManifest(this);
  this.assert.equal({ version: inspected.schema?.version, hash: inspected.schema?.hash }, ref(current), `the schema client "${name}" installed`);
});

Then(/^client "([^"]+)" shows the second update of row "([^"]+)", setting (\w+) "([^"]*)", with its mutation ID and a status of "([^"]+)" or "([^"]+)"$/, async function (this: SyncWorld, name: string, pk: string, column: string, value: string, one: string, other: string) {
  const id = namedMutation(this, name, `the second update of row "${pk}"`);
  const mutation = (await queueOf(this, name)).find((m) => m.id === id);
  this.assert.ok(mutation, `client "${name}" still shows the second update ${id}`);
  this.assert.equal({ op: mutation?.op, recordId: mutation?.recordId, columns: mutation?.columns }, { op: 'update', recordId: pk, columns: { [column]: value } }, `the second update of ${pk}`);
  this.assert.ok([one, other].includes(String(mutation?.status)), `status of the second update: ${String(mutation?.status)}`);
});
