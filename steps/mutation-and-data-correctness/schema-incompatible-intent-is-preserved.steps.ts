/**
 * SYNC-MUT-020 Schema Incompatible Intent Is Preserved
 * (features/mutation-and-data-correctness/schema-incompatible-intent-is-preserved.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { baseFromCell } from '../support/push-ledger/mutation-table.ts';
import { deliveredOutcomes, pushesOf, rowMatcher } from '../support/mutations/pushes.ts';
import { lastPush } from '../support/push-ledger/state.ts';
import { describeQueue, queueOf, recordNamed } from '../support/mutations/queue.ts';
import { byteOrder, fieldIdOf, labelledManifest, notedIntent, noteIntent, refOf } from '../support/mutations/schema-incompatible.ts';
import { labelled, queueState } from '../support/mutations/state.ts';
import { ident, publishChange } from '../support/schema-and-versions/manifests.ts';
import { cellValue } from '../support/values.ts';
import { labelledVersion } from '../support/version-labels.ts';
import type { Obj } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the proxy delivered to client "([^"]+)" a rejected_terminal outcome/);
processPhrase(/^the proxy recorded the mutation ID of the update of row "[^"]+" in no push request of client "([^"]+)"/);

/** The mutation ID the last outcome check looked at ("that outcome"). */
const checkedOutcome = new WeakMap<SyncWorld, Obj>();

Given(/^the operator publishes a new schema version in which table "([^"]+)" no longer has fields "([^"]+)" and "([^"]+)"$/, async function (this: SyncWorld, table: string, first: string, second: string) {
  // Removing fields is an incompatible (class 4) transition.
  await publishChange(this, table, `ALTER TABLE public.${ident(table)} DROP COLUMN ${ident(first)}, DROP COLUMN ${ident(second)};`, 'class_4');
  const spec = this.model.table(table);
  spec.columns = spec.columns.filter((c) => c.name !== first && c.name !== second);
});

/**
 * A push under the client's current schema whose mutations say which schema
 * they were authored under (`authored_schema` cell, a remembered label). The
 * column cells are named by the column names of that authored schema, so a
 * field the current schema removed is sent under the field ID it had.
 */
When('client {string} pushes a batch under the new schema with:', async function (this: SyncWorld, name: string, table: DataTable) {
  const client = this.wire(name);
  const mutations: Obj[] = [];
  for (const row of table.hashes()) {
    const { mutation_id, operation, table: tableName, pk, base_version, authored_schema, ...columns } = row;
    if (!operation || !tableName || pk === undefined || !authored_schema) throw new Error('every mutation row needs operation, table, pk and authored_schema');
    const pkValue = cellValue(this.model.keyColumn(tableName), pk);
    const base = baseFromCell(this, client, tableName, pkValue, base_version);
    const mutation = client.mutation({ op: operation as 'update', table: tableName, pk: pkValue, ...(mutation_id ? { mutation_id } : {}), ...(base === undefined ? {} : { base_version: base }) });
    const values: Obj = {};
    for (const [column, text] of Object.entries(columns)) if (text !== '') values[await fieldIdOf(this, tableName, column)] = text;
    if (operation !== 'delete') mutation.columns = values;
    mutation.authored_schema = refOf(labelledManifest(this, authored_schema));
    mutations.push(mutation);
  }
  await client.post('/sync/push', client.pushBody(mutations), { endpoint: 'push' });
});

Then(
  /^the rejected outcome of mutation "([^"]+)" has status "([a-z_]+)", code "([a-z_]+)", "retryable": (true|false), authored_schema "([^"]+)", current_schema "([^"]+)" and incompatible_field_ids \[(.*)\] as field IDs in increasing byte order$/,
  async function (this: SyncWorld, id: string, status: string, code: string, retryable: string, authored: string, current: string, names: string) {
    const reply = lastPush(this);
    this.assert.equal(reply.status, 200, `the push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
    const body = reply.json as Obj;
    const outcome = ((body.rejected ?? []) as Obj[]).find((o) => o.mutation_id === id);
    this.assert.ok(outcome !== undefined, `the rejected list holds mutation ${id}: ${reply.text.slice(0, 1000)}`);
    this.assert.equal(((body.accepted ?? []) as Obj[]).filter((o) => o.mutation_id === id).length, 0, `the accepted list also holds mutation ${id}`);
    checkedOutcome.set(this, outcome as Obj);
    const columns = [...names.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
    const fields: string[] = [];
    for (const column of columns) fields.push(await fieldIdOf(this, 'notes', column));
    this.assert.equal(
      {
        status: outcome?.status,
        code: outcome?.code,
        retryable: outcome?.retryable,
        authored_schema: outcome?.authored_schema,
        current_schema: outcome?.current_schema,
        incompatible_field_ids: outcome?.incompatible_field_ids,
      },
      {
        status,
        code,
        retryable: retryable === 'true',
        authored_schema: refOf(labelledManifest(this, authored)),
        current_schema: refOf(labelledManifest(this, current)),
        incompatible_field_ids: byteOrder(fields),
      },
      `the outcome of ${id}: ${JSON.stringify(outcome)}`,
    );
  },
);

Then('that outcome has no member {string}, {string} or {string}', function (this: SyncWorld, a: string, b: string, c: string) {
  const outcome = checkedOutcome.get(this);
  if (outcome === undefined) throw new Error('no outcome was checked earlier in this scenario');
  this.assert.equal([a, b, c].filter((m) => Object.hasOwn(outcome, m)), [], `members of ${JSON.stringify(outcome)}`);
});

// --- the client -------------------------------------------------------------------------------

Given(
  /^client "([^"]+)" shows the (update of row "[^"]+") with mutation ID, authored fields, authored schema, base version, client version and local order, remembered as "([^"]+)"$/,
  async function (this: SyncWorld, name: string, phrase: string, label: string) {
    const records = await queueOf(this, name);
    const record = recordNamed(records, phrase);
    if (record === undefined) throw new Error(`client "${name}" shows no ${phrase}: ${describeQueue(records)}`);
    const missing = (['id', 'columns', 'authoredSchema', 'baseVersion', 'clientVersion', 'localOrder'] as const).filter((k) => record[k] === undefined || record[k] === null);
    if (missing.length > 0) throw new Error(`client "${name}" shows the ${phrase} without ${missing.join(', ')}: ${JSON.stringify(record)}`);
    noteIntent(this, label, record);
    queueState(this).labels.set(label, record.id);
  },
);

Then(
  /^the proxy delivered to client "([^"]+)" a (rejected_terminal|conflict) outcome with code "([a-z_]+)" for the mutation ID of "([^"]+)"$/,
  async function (this: SyncWorld, name: string, status: string, code: string, label: string) {
    const id = labelled(this, label);
    const outcomes = await deliveredOutcomes(this, name, id);
    this.assert.ok(outcomes.length > 0, `the proxy delivered no outcome for ${id} ("${label}") to client "${name}"`);
    this.assert.equal(
      outcomes.map((o) => ({ status: o.status, code: o.code })),
      outcomes.map(() => ({ status, code })),
      `outcomes delivered for ${id} ("${label}")`,
    );
  },
);

/** `body "oat" and tag "b"` as [column, value] pairs. */
function fieldsOf(text: string): [string, string][] {
  return [...text.matchAll(/(\w+) "([^"]*)"/g)].map((m) => [m[1] as string, m[2] as string]);
}

async function rejectionCode(world: SyncWorld, name: string, id: string): Promise<unknown[]> {
  const { rejections } = await (await world.process(name)).call<{ rejections: { mutationId: string; code: string }[] }>('inspectRejections');
  return rejections.filter((r) => r.mutationId === id).map((r) => r.code);
}

Then(
  /^client "([^"]+)" shows the record of "([^"]+)" with status "([a-z_]+)", rejection code "([a-z_]+)", and mutation ID, authored fields (.+), authored schema "([^"]+)", base version "([^"]+)", client version and local order all equal to "([^"]+)"$/,
  async function (this: SyncWorld, name: string, label: string, status: string, code: string, fields: string, schema: string, base: string, same: string) {
    const was = notedIntent(this, same);
    const records = await queueOf(this, name);
    const record = records.find((r) => r.id === was.id);
    this.assert.ok(record !== undefined, `client "${name}" no longer shows "${label}" (${was.id}): ${describeQueue(records)}`);
    this.assert.equal(record?.status, status, `status of "${label}"`);
    this.assert.equal(await rejectionCode(this, name, was.id), [code], `rejection code of "${label}"`);
    const expected = Object.fromEntries(fieldsOf(fields));
    this.assert.equal(record?.columns, expected, `authored fields of "${label}"`);
    this.assert.equal(record?.columns, was.columns, `authored fields of "${label}" against when it was remembered`);
    this.assert.equal(record?.authoredSchema, refOf(labelledManifest(this, schema)), `authored schema of "${label}" (${schema})`);
    this.assert.equal(record?.baseVersion, labelledVersion(this, base), `base version of "${label}" (${base})`);
    this.assert.equal(
      { op: record?.op, recordId: record?.recordId, authoredSchema: record?.authoredSchema, baseVersion: record?.baseVersion, clientVersion: record?.clientVersion, localOrder: record?.localOrder },
      { op: was.op, recordId: was.recordId, authoredSchema: was.authoredSchema, baseVersion: was.baseVersion, clientVersion: was.clientVersion, localOrder: was.localOrder },
      `"${label}" against when it was remembered`,
    );
  },
);

/** The update mutations of `row` client `name` sent, each with the index of the push that carried it. */
async function sentUpdates(world: SyncWorld, name: string, row: string): Promise<{ mutation: Obj; push: number }[]> {
  const matches = await rowMatcher(world, 'notes', row);
  return (await pushesOf(world, name)).flatMap((p, push) => p.mutations.filter((m) => matches(m) && m.op === 'update').map((mutation) => ({ mutation, push })));
}

/**
 * A push the server answered 422 (the request schema was stale) leaves its
 * mutations unresolved, and they rightly go out again in a successor batch;
 * once an answer gave the intent its schema_incompatible outcome, nothing
 * sends it again.
 */
Then('the proxy recorded the mutation ID of the update of row {string} in no push request of client {string} after the one answered with its schema_incompatible outcome', async function (this: SyncWorld, row: string, name: string) {
  const matches = await rowMatcher(this, 'notes', row);
  const pushes = await pushesOf(this, name);
  const original = pushes.flatMap((p) => p.mutations).find((m) => matches(m) && m.op === 'update')?.mutation_id;
  this.assert.ok(original !== undefined, `client "${name}" sent no update of ${row}`);
  const outcomeOf = (p: (typeof pushes)[number]) => [...((p.answerBody?.accepted ?? []) as Obj[]), ...((p.answerBody?.rejected ?? []) as Obj[])].find((o) => o.mutation_id === original);
  const answered = pushes.findIndex((p) => outcomeOf(p)?.code === 'schema_incompatible');
  this.assert.ok(answered >= 0, `no push answer gave ${String(original)} its schema_incompatible outcome: ${pushes.map((p) => p.answer?.status).join(', ')}`);
  this.assert.equal(
    pushes.slice(0, answered).filter((p) => outcomeOf(p) !== undefined).map((p) => p.batchId),
    [],
    `batches that answered ${String(original)} before its schema_incompatible outcome`,
  );
  this.assert.equal(
    pushes.slice(answered + 1).filter((p) => p.mutations.some((m) => m.mutation_id === original)).map((p) => p.batchId),
    [],
    `push requests carrying ${String(original)} after it was answered schema_incompatible`,
  );
});

Then(/^no push request of client "([^"]+)" carries a mutation of row "([^"]+)" setting (\w+) "([^"]*)" without (\w+)$/, async function (this: SyncWorld, name: string, row: string, column: string, value: string, kept: string) {
  const sent = await sentUpdates(this, name, row);
  this.assert.ok(sent.length > 0, `client "${name}" sent no update of ${row}`);
  const setField = await fieldIdOf(this, 'notes', column);
  const keptField = await fieldIdOf(this, 'notes', kept);
  const stripped = sent.filter((s) => {
    const columns = (s.mutation.columns ?? {}) as Obj;
    return columns[setField] === value && !Object.hasOwn(columns, keptField);
  });
  this.assert.equal(stripped.map((s) => `${String(s.mutation.mutation_id)} in push #${s.push + 1}: ${JSON.stringify(s.mutation.columns)}`), [], `updates of ${row} setting ${column} "${value}" without ${kept}`);
});

Then(/^client "([^"]+)" still shows the update of row "([^"]+)" with status "([a-z_]+)" and code "([a-z_]+)"$/, async function (this: SyncWorld, name: string, row: string, status: string, code: string) {
  const phrase = `update of row "${row}"`;
  const sent = await sentUpdates(this, name, row);
  this.assert.ok(sent.length > 0, `client "${name}" sent no update of ${row}`);
  const original = String(sent[0]?.mutation.mutation_id);
  const records = await queueOf(this, name);
  const record = recordNamed(records, phrase);
  this.assert.ok(record !== undefined, `client "${name}" shows no ${phrase}: ${describeQueue(records)}`);
  this.assert.equal({ id: record?.id, status: record?.status }, { id: original, status }, `the ${phrase} client "${name}" shows`);
  this.assert.equal(await rejectionCode(this, name, original), [code], `rejection code of ${original}`);
});

Given('client {string} has connected again with "schema_reset" true and received the new schema', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const before = client.schema.version;
  // After a class 4 change a plain connect answers `unsupported`; a reset is the one way on.
  const reply = await client.connect({ schema_reset: true });
  if (reply.status !== 200) throw new Error(`client "${name}" could not reconnect with schema_reset: ${reply.status} ${reply.text.slice(0, 300)}`);
  if (client.schema.version <= before) throw new Error(`client "${name}" still has schema version ${client.schema.version} after its reset connect: ${reply.text.slice(0, 300)}`);
});
