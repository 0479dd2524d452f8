/**
 * SYNC-PROTO-011 Canonical Operation Vocabulary
 * (features/protocol/canonical-operation-vocabulary.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { changesOf, lastPull } from '../support/wire-values/operations.ts';
import { outcomeAnywhere } from '../support/wire-values/outcomes.ts';
import { exchanges, keyValue, type Obj } from '../support/wire-values/recorded.ts';
import { applyEdits, fillerInsert, lastMutation, type RequestEndpoint, sendEdited, sendExact, stepValue } from '../support/wire-values/requests.ts';
import type { SyncWorld } from '../support/world.ts';
import { bodyOf, exchangesOf, upstreamOf } from '../support/exchanges.ts';

const quotedList = (text: string) => [...text.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);

Then(/^every change in the pull response has "op" equal to ((?:"[^"]+"(?:, | or ))+"[^"]+")$/, function (this: SyncWorld, list: string) {
  const allowed = quotedList(list);
  const changes = changesOf(lastPull(this));
  this.assert.ok(changes.length > 0, 'the pull response carries no change');
  this.assert.equal(changes.filter((c) => !allowed.includes(String(c.op))), [], `changes whose op is not one of ${allowed.join(', ')}`);
});

function opsFor(world: SyncWorld, pks: readonly string[]): Record<string, unknown> {
  const changes = changesOf(lastPull(world));
  const out: Record<string, unknown> = {};
  for (const pk of pks) {
    const matching = changes.filter((c) => String(keyValue(c.pk)) === pk);
    world.assert.equal(matching.length, 1, `the pull response carries ${matching.length} changes for row ${pk}`);
    out[pk] = matching[0]?.op;
  }
  return out;
}

Then('the change for row {string} has op {string}', function (this: SyncWorld, pk: string, op: string) {
  this.assert.equal(opsFor(this, [pk]), { [pk]: op }, `op of the change for row ${pk}`);
});

Then(/^the changes for rows ((?:"[^"]+"(?:, | and ))+"[^"]+") have op "([^"]+)"$/, function (this: SyncWorld, list: string, op: string) {
  const pks = quotedList(list);
  this.assert.equal(opsFor(this, pks), Object.fromEntries(pks.map((pk) => [pk, op])), 'ops of the changes');
});

Then(/^across every pull response recorded in this scenario, every change has "op" equal to ((?:"[^"]+"(?:, | or ))+"[^"]+")$/, async function (this: SyncWorld, list: string) {
  const allowed = quotedList(list);
  const changes = (await exchanges(this)).filter((e) => e.endpoint === 'pull').flatMap((e) => {
    const answer = upstreamOf(e);
    return answer?.status === 200 ? (((bodyOf(answer.body) as Obj | undefined)?.changes ?? []) as Obj[]).map((c) => ({ seq: e.seq, change: c })) : [];
  });
  this.assert.ok(changes.length > 0, 'no pull change was recorded in this scenario');
  const other = changes.filter(({ change }) => !allowed.includes(String(change.op))).map(({ seq, change }) => `#${seq}: ${JSON.stringify(change)}`);
  this.assert.equal(other, [], `recorded pull changes whose op is not one of ${allowed.join(', ')}`);
});

Then('no rebuild record recorded in this scenario has an {string} member', async function (this: SyncWorld, member: string) {
  const records = (await exchanges(this)).filter((e) => e.endpoint === 'rebuild').flatMap((e) => {
    const answer = upstreamOf(e);
    return answer?.status === 200 ? (((bodyOf(answer.body) as Obj | undefined)?.records ?? []) as Obj[]) : [];
  });
  this.assert.ok(records.length > 0, 'no rebuild record was recorded in this scenario');
  this.assert.equal(records.filter((r) => Object.hasOwn(r, member)), [], `rebuild records carrying "${member}"`);
});

/** Every mutation of every push request client `name` sent, in the order sent. */
async function pushedMutations(world: SyncWorld, name: string): Promise<Obj[]> {
  return (await exchangesOf(world, name, { endpoints: ['push'] })).flatMap((e) => ((bodyOf(e.requestBody) as Obj | undefined)?.mutations ?? []) as Obj[]);
}

Then(/^every mutation in every push request client "([^"]+)" sent has "op" equal to ((?:"[^"]+"(?:, | or ))+"[^"]+")$/, async function (this: SyncWorld, name: string, list: string) {
  const allowed = quotedList(list);
  const mutations = await pushedMutations(this, name);
  this.assert.ok(mutations.length > 0, `client "${name}" sent no mutation at all`);
  this.assert.equal(mutations.filter((m) => !allowed.includes(String(m.op))), [], `mutations whose op is not one of ${allowed.join(', ')}`);
});

Then(/^the push requests client "([^"]+)" sent for row "([^"]+)" carried, in order, ops ((?:"[^"]+"(?:, | and ))+"[^"]+")$/, async function (this: SyncWorld, name: string, pk: string, list: string) {
  const ops = (await pushedMutations(this, name)).filter((m) => String(keyValue(m.pk)) === pk).map((m) => m.op);
  // A retried batch repeats its bytes; each mutation counts once.
  this.assert.equal(dedupeConsecutive(ops), quotedList(list), `ops client "${name}" pushed for row ${pk}`);
});

function dedupeConsecutive(values: readonly unknown[]): unknown[] {
  return values.filter((v, k) => k === 0 || v !== values[k - 1]);
}

Given('client {string} has pushed an insert of row {string} and a delete of it, and holds the delete\'s server version', async function (this: SyncWorld, name: string, pk: string) {
  await this.readyServer();
  const client = this.wire(name);
  const insert = fillerInsert(this, client, pk);
  const inserted = await client.push([insert]);
  const applied = (inserted.json?.accepted ?? []) as Obj[];
  this.assert.equal(applied[0]?.status, 'applied', `the insert of ${pk} was not applied: ${inserted.text}`);
  const table = [...this.model.tables.values()][0];
  if (table === undefined) throw new Error('no table declared');
  const deletion = client.mutation({ op: 'delete', table: table.name, pk, base_version: String(applied[0]?.server_version) });
  const deleted = await client.push([deletion]);
  const outcome = ((deleted.json?.accepted ?? []) as Obj[])[0];
  this.assert.equal(outcome?.status, 'applied', `the delete of ${pk} was not applied: ${deleted.text}`);
  this.assert.equal(typeof outcome?.server_version, 'string', `the applied delete of ${pk} carries no server_version: ${deleted.text}`);
});

Then('the row {string} of table {string} is still deleted at the source', async function (this: SyncWorld, pk: string, name: string) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to read the source table`);
  const table = this.model.table(name);
  const key = this.model.keyColumn(name);
  const ident = (text: string) => `"${text.replaceAll('"', '""')}"`;
  const rows = await server.sourceSql.query<Record<string, unknown>>(`SELECT * FROM public.${ident(name)} WHERE ${ident(key.name)}::text = $1`, [pk]);
  if (table.deletedAtColumn === undefined) {
    this.assert.equal(rows.length, 0, `row ${pk} of ${name} is back at the source`);
    return;
  }
  // A soft-deleting table keeps the row with its deletion mark set.
  this.assert.ok(rows.every((r) => r[table.deletedAtColumn as string] !== null), `row ${pk} of ${name} lost its deletion mark: ${JSON.stringify(rows)}`);
});

Then(/^the push outcomes of mutations ((?:"[^"]+"(?:, | and ))+"[^"]+") are "([^"]+)"$/, function (this: SyncWorld, list: string, status: string) {
  const ids = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
  for (const id of ids) {
    const outcome = outcomeAnywhere(this, id);
    this.assert.ok(outcome, `no push response carried an outcome for mutation ${id}`);
    this.assert.equal(outcome.status, status, `outcome of ${id}: ${JSON.stringify(outcome)}`);
  }
});

When(/^client "([^"]+)" sends its next (connect|push|pull|rebuild) request with "([^"]+)" removed$/, async function (this: SyncWorld, name: string, endpoint: RequestEndpoint, pointer: string) {
  await sendEdited(this, name, endpoint, [{ pointer, remove: true }]);
});

When(/^client "([^"]+)" sends a push request with batch_id "([^"]+)" whose mutation has "([^"]+)" set to (null|true|false|-?[0-9][^ ]*|"(?:[^"\\]|\\.)*"|\{.*\}|\[.*\]|[A-Z](?: [+-] [0-9]+)?)$/, async function (this: SyncWorld, name: string, batchId: string, pointer: string, value: string) {
  await this.readyServer();
  const client = this.wire(name);
  const mutation = fillerInsert(this, client);
  lastMutation.set(this, String(mutation.mutation_id));
  await sendExact(client, 'push', applyEdits(client.pushBody([mutation], batchId), [{ pointer: `/mutations/0${pointer}`, value: stepValue(this, value) }]));
});

When(/^client "([^"]+)" sends a push request with batch_id "([^"]+)" whose mutation is a valid insert of row "([^"]+)"$/, async function (this: SyncWorld, name: string, batchId: string, pk: string) {
  await this.readyServer();
  const client = this.wire(name);
  const mutation = fillerInsert(this, client, pk);
  lastMutation.set(this, String(mutation.mutation_id));
  await sendExact(client, 'push', client.pushBody([mutation], batchId));
});
