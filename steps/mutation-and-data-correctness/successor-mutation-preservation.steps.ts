/**
 * SYNC-MUT-022 Successor Mutation Preservation
 * (features/mutation-and-data-correctness/successor-mutation-preservation.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then } from '@cucumber/cucumber';
import { bodyOf, deliveredOf, exchangesOf } from '../support/exchanges.ts';
import { canonicalMutation, pushesOf, rowMatcher, type SentPush } from '../support/mutations/pushes.ts';
import { batchesOf, describeQueue, ofRow, queueOf, written } from '../support/mutations/queue.ts';
import { labelled, type QueueRecord, queueState } from '../support/mutations/state.ts';
import { currentManifest, ident, notedManifest, publishChange } from '../support/schema-and-versions/manifests.ts';
import { keyValue, type Obj } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

/**
 * A schema the scenario remembered under a label (the shared step in
 * steps/common/schema-manifests.steps.ts keeps the manifest) as the reference
 * a mutation's authored_schema carries.
 */
function schemaNamed(world: SyncWorld, label: string): { version: number; hash: string } {
  const manifest = notedManifest(world, label);
  return { version: manifest.schema_version, hash: manifest.schema_hash };
}

// Publishing a schema that adds a nullable column is shared: steps/common/schema-manifests.steps.ts.

Given('the operator publishes a new schema version in which table {string} no longer has field {string}', async function (this: SyncWorld, table: string, column: string) {
  // Removing a field is an incompatible (class 4) transition: a client on the old schema must reset.
  await publishChange(this, table, `ALTER TABLE public.${ident(table)} DROP COLUMN ${ident(column)};`, 'class_4');
  const spec = this.model.table(table);
  spec.columns = spec.columns.filter((c) => c.name !== column);
});

Then('the next push request of client {string} has a new batch_id and the new request schema', async function (this: SyncWorld, name: string) {
  const [first, next] = await pushesOf(this, name);
  this.assert.ok(first !== undefined && next !== undefined, `client "${name}" sent fewer than two push requests`);
  this.assert.notEqual(next.batchId, first.batchId, 'batch_id of the next push request');
  const manifest = await currentManifest(this);
  this.assert.equal(next.schema, { version: manifest.schema_version, hash: manifest.schema_hash }, 'request schema of the next push request');
});

Then(/^each of its mutations has the same mutation_id as in the first request and a byte-identical canonical mutation, authored_schema "([^"]+)" included$/, async function (this: SyncWorld, label: string) {
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const [first, next] = await pushesOf(this, name);
  this.assert.ok(first !== undefined && next !== undefined, `client "${name}" sent fewer than two push requests`);
  this.assert.equal(next.mutations.map(canonicalMutation), first.mutations.map(canonicalMutation), 'mutations of the successor batch against the first request');
  const schema = schemaNamed(this, label);
  this.assert.equal(
    next.mutations.map((m) => m.authored_schema),
    next.mutations.map(() => schema),
    `authored_schema of each mutation (${label})`,
  );
});

Then('client {string} shows the first batch with its original request bytes', async function (this: SyncWorld, name: string) {
  const first = (await pushesOf(this, name))[0];
  this.assert.ok(first !== undefined, `client "${name}" sent no push`);
  const stored = (await batchesOf(this, name)).find((b) => b.batchId === first.batchId);
  this.assert.ok(stored !== undefined, `client "${name}" no longer shows batch ${first.batchId}`);
  this.assert.equal(Buffer.from(stored.requestBytes, 'base64').toString('utf8'), first.bytes.toString('utf8'), `stored request of batch ${first.batchId}`);
});

Then(/^the next push request of client "([^"]+)" has a new batch_id and carries the update of row "([^"]+)" with the same mutation_id and a byte-identical canonical mutation$/, async function (this: SyncWorld, name: string, row: string) {
  const [first, next] = await pushesOf(this, name);
  this.assert.ok(first !== undefined && next !== undefined, `client "${name}" sent fewer than two push requests`);
  this.assert.notEqual(next.batchId, first.batchId, 'batch_id of the next push request');
  const matches = await rowMatcher(this, 'notes', row);
  const before = first.mutations.filter((m) => matches(m) && m.op === 'update');
  const after = next.mutations.filter((m) => matches(m) && m.op === 'update');
  this.assert.equal(before.length, 1, `updates of ${row} in the first push request`);
  this.assert.equal(after.map(canonicalMutation), before.map(canonicalMutation), `the update of ${row} in the next push request against the first`);
});

Then(/^client "([^"]+)" shows the update of row "([^"]+)" with status "([a-z_]+)" and code "([a-z_]+)", remembered as "([^"]+)"$/, async function (this: SyncWorld, name: string, row: string, status: string, code: string, label: string) {
  const records = await queueOf(this, name);
  const record = written(ofRow(records, row)).find((r) => r.op === 'update' && r.status === status);
  this.assert.ok(record !== undefined, `client "${name}" shows no ${status} update of ${row}: ${describeQueue(records)}`);
  const { rejections } = await (await this.process(name)).call<{ rejections: { mutationId: string; code: string }[] }>('inspectRejections');
  this.assert.equal(rejections.filter((r) => r.mutationId === record.id).map((r) => r.code), [code], `rejection code of ${record.id}`);
  queueState(this).labels.set(label, record.id);
});

/** The update of `row` on the wire that set `column` to `value`, with the push that carried it. */
async function updatesSetting(world: SyncWorld, name: string, row: string, column: string, value: string): Promise<{ mutation: Obj; push: SentPush }[]> {
  const matches = await rowMatcher(world, 'notes', row);
  const fields = await fieldIdsNamed(world, 'notes', column);
  return (await pushesOf(world, name)).flatMap((push) =>
    push.mutations.filter((m) => matches(m) && m.op === 'update' && fields.some((f) => (m.columns as Obj | undefined)?.[f] === value)).map((mutation) => ({ mutation, push })),
  );
}

/** Field IDs a column name had in any manifest the server published in the scenario (a removed field keeps its old ID). */
async function fieldIdsNamed(world: SyncWorld, table: string, column: string): Promise<string[]> {
  const ids = new Set<string>();
  for (const e of (await world.proxy()).exchanges) {
    const answer = e.endpoint === 'connect' ? deliveredOf(e) : undefined;
    const tables = ((bodyOf(answer?.body) as Obj | undefined)?.schema_definition as { tables?: { name: string; fields: { field_id: string; name: string }[] }[] } | undefined)?.tables ?? [];
    for (const t of tables.filter((x) => x.name === table)) for (const f of t.fields) if (f.name === column) ids.add(f.field_id);
  }
  if (ids.size === 0) throw new Error(`no published manifest of this scenario has a field "${column}" in table "${table}"`);
  return [...ids];
}

Then(/^the proxy recorded an update of row "([^"]+)" setting (\w+) "([^"]*)" whose mutation_id differs from that of "([^"]+)"$/, async function (this: SyncWorld, row: string, column: string, value: string, label: string) {
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const found = await updatesSetting(this, name, row, column, value);
  this.assert.ok(found.length > 0, `client "${name}" sent no update of ${row} setting ${column} "${value}"`);
  this.assert.ok(
    found.every((f) => f.mutation.mutation_id !== labelled(this, label)),
    `the update setting ${column} "${value}" was sent under the mutation ID of "${label}"`,
  );
  queueState(this).labels.set('that update', String(found[0]?.mutation.mutation_id));
});

Then('that update was accepted', async function (this: SyncWorld) {
  const id = labelled(this, 'that update');
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const outcomes = (await pushesOf(this, name)).flatMap((p) => [...((p.answerBody?.accepted ?? []) as Obj[]), ...((p.answerBody?.rejected ?? []) as Obj[])]).filter((o) => o.mutation_id === id);
  this.assert.ok(outcomes.length > 0, `no push answer accounts for ${id}`);
  this.assert.equal(outcomes.map((o) => o.status), outcomes.map(() => 'applied'), `outcomes of ${id}`);
});

Then('for every mutation_id in the push requests the proxy recorded from client {string}, every occurrence has byte-identical canonical content', async function (this: SyncWorld, name: string) {
  const contents = new Map<string, Set<string>>();
  for (const push of await pushesOf(this, name)) for (const m of push.mutations) contents.set(String(m.mutation_id), (contents.get(String(m.mutation_id)) ?? new Set()).add(canonicalMutation(m)));
  this.assert.ok(contents.size > 0, `client "${name}" pushed no mutation`);
  this.assert.equal(
    [...contents.entries()].filter(([, seen]) => seen.size > 1).map(([id]) => id),
    [],
    'mutation IDs sent with more than one content',
  );
});

Then(/^the update setting (\w+) "([^"]*)" has a mutation_id that no earlier push request carried$/, async function (this: SyncWorld, column: string, value: string) {
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const pushes = await pushesOf(this, name);
  const fields = await fieldIdsNamed(this, 'notes', column);
  const index = pushes.findIndex((p) => p.mutations.some((m) => m.op === 'update' && fields.some((f) => (m.columns as Obj | undefined)?.[f] === value)));
  this.assert.ok(index >= 0, `client "${name}" sent no update setting ${column} "${value}"`);
  const id = pushes[index]?.mutations.find((m) => m.op === 'update' && fields.some((f) => (m.columns as Obj | undefined)?.[f] === value))?.mutation_id;
  const earlier = new Set(pushes.slice(0, index).flatMap((p) => p.mutations.map((m) => m.mutation_id)));
  this.assert.ok(!earlier.has(id), `the update setting ${column} "${value}" reuses mutation ID ${String(id)} of an earlier push`);
});

/** `body "oat" and tag "b"` as column checks. */
function fieldsOf(text: string): [string, string][] {
  return [...text.matchAll(/(\w+) "([^"]*)"/g)].map((m) => [m[1] as string, m[2] as string]);
}

Then(/^client "([^"]+)" shows the record of "([^"]+)" with its mutation ID, authored fields (.+) and authored schema "([^"]+)"$/, async function (this: SyncWorld, name: string, label: string, fields: string, schema: string) {
  const id = labelled(this, label);
  const records = await queueOf(this, name);
  const record = records.find((r) => r.id === id);
  this.assert.ok(record !== undefined, `client "${name}" no longer shows "${label}" (${id}): ${describeQueue(records)}`);
  for (const [column, value] of fieldsOf(fields)) this.assert.equal(record.columns?.[column], value, `authored ${column} of "${label}"`);
  this.assert.equal(record.authoredSchema, schemaNamed(this, schema), `authored schema of "${label}"`);
});

async function successorOf(world: SyncWorld, name: string): Promise<QueueRecord | undefined> {
  const original = labelled(world, 'R1');
  const records = await queueOf(world, name);
  const row = records.find((r) => r.id === original)?.recordId ?? 'n-1';
  return written(ofRow(records, row)).filter((r) => r.op === 'update' && r.id !== original).at(-1);
}

Then('client {string} shows the successor update with status {string}', async function (this: SyncWorld, name: string, status: string) {
  const successor = await successorOf(this, name);
  this.assert.ok(successor !== undefined, `client "${name}" shows no successor update`);
  this.assert.equal(successor.status, status, `status of the successor update ${successor.id}`);
});

Then('client {string} shows no record of {string}', async function (this: SyncWorld, name: string, label: string) {
  const id = labelled(this, label);
  const records = await queueOf(this, name);
  this.assert.equal(records.filter((r) => r.id === id).length, 0, `client "${name}" still shows "${label}" (${id})`);
});

Then(/^the proxy recorded the mutation_id of "([^"]+)" only with the content (.+)$/, async function (this: SyncWorld, label: string, fields: string) {
  const id = labelled(this, label);
  const name = this.syncWindows.at(-1)?.client ?? 'A';
  const sent = (await pushesOf(this, name)).flatMap((p) => p.mutations).filter((m) => m.mutation_id === id);
  this.assert.ok(sent.length > 0, `client "${name}" never sent "${label}"`);
  const expected: Record<string, string> = {};
  for (const [column, value] of fieldsOf(fields)) for (const f of await fieldIdsNamed(this, 'notes', column)) expected[f] = value;
  for (const m of sent) this.assert.equal(m.columns, expected, `content sent under the mutation ID of "${label}"`);
});

Then('no push response to client {string} has status {int} with error code {string}', async function (this: SyncWorld, name: string, status: number, code: string) {
  const answers = (await exchangesOf(this, name, { endpoints: ['push'] })).map((e) => deliveredOf(e)).filter((a) => a !== undefined);
  this.assert.ok(answers.length > 0, `client "${name}" got no push answer`);
  this.assert.equal(answers.filter((a) => a.status === status && (bodyOf(a.body) as Obj | undefined)?.error !== undefined && ((bodyOf(a.body) as Obj).error as Obj).code === code).length, 0, `push answers ${status} ${code}`);
});

Then(/^client "([^"]+)" shows the record of "([^"]+)" and the successor update as two records$/, async function (this: SyncWorld, name: string, label: string) {
  const id = labelled(this, label);
  const records = await queueOf(this, name);
  const successor = await successorOf(this, name);
  this.assert.ok(records.some((r) => r.id === id), `client "${name}" no longer shows "${label}"`);
  this.assert.ok(successor !== undefined && successor.id !== id, `client "${name}" shows no successor apart from "${label}": ${describeQueue(records)}`);
  this.assert.equal(keyValue(successor.recordId), records.find((r) => r.id === id)?.recordId, 'the successor is an update of the same row');
});
