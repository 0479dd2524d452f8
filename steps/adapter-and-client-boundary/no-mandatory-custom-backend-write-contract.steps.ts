/**
 * SYNC-BOUND-004 No Mandatory Custom Backend Write Contract
 * (features/adapter-and-client-boundary/no-mandatory-custom-backend-write-contract.feature):
 * the steps only this requirement uses. A row written by application SQL on
 * one client is read back on another as that client's application would read
 * it; a push of the harness's own client is checked through what the server
 * then serves to a second client's pull. Helpers are in steps/support/boundary/.
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import { lastDeliveredChange, localRow, pushOneOf, rowOfWrites, sourceRow, updatedColumns } from '../support/boundary/write-contract.ts';
import { processPhrase } from '../support/client-mode.ts';
import { exchangesOf } from '../support/exchanges.ts';
import { queueOf } from '../support/mutations/queue.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { lastMutation } from '../support/wire-values/requests.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" has the row as updated by client "[^"]+"$/);
processPhrase(/^client "([^"]+)" shows the row deleted as the table's lifecycle says$/);

Then('client {string} has the row as updated by client {string}', async function (this: SyncWorld, reader: string, writer: string) {
  const row = rowOfWrites(this);
  if (row.client !== writer) throw new Error(`the row was written by client "${row.client}", not "${writer}"`);
  const [theirs, ours] = [await localRow(this, reader, row), await localRow(this, writer, row)];
  this.assert.ok(theirs !== undefined, `client "${reader}" holds no row ${row.key} of ${row.table}`);
  // What the update assigned must be what the other client reads, and the two local rows must agree on every column.
  const updated = await updatedColumns(this, row);
  this.assert.ok(Object.keys(updated).length > 0, `client "${writer}" shows no column its update of ${row.table} ${row.key} assigned`);
  for (const [column, value] of Object.entries(updated)) this.assert.equal(theirs?.[column], value, `column ${column} of ${row.table} ${row.key} on client "${reader}" after the update of client "${writer}"`);
  this.assert.equal(theirs, ours, `row ${row.key} of ${row.table} on client "${reader}" against client "${writer}"`);
});

Then("client {string} shows the row deleted as the table's lifecycle says", async function (this: SyncWorld, reader: string) {
  const row = rowOfWrites(this);
  const held = await localRow(this, reader, row);
  const deletedAt = this.model.table(row.table).deletedAtColumn;
  if (deletedAt === undefined) {
    // A table without a deletion column forgets the row.
    this.assert.equal(held, undefined, `client "${reader}" still holds hard-deleted row ${row.key} of ${row.table}`);
    return;
  }
  // A soft-delete table keeps the source tombstone: the row with its deletion time set, and the server holds the same.
  const source = await sourceRow(this, row);
  this.assert.ok(source !== undefined && source[deletedAt] !== null, `the server source holds no tombstone of ${row.table} ${row.key}: ${JSON.stringify(source)}`);
  // The reader may keep the tombstone or drop the row; it must not show it live.
  if (held !== undefined) this.assert.ok(held[deletedAt] !== null && held[deletedAt] !== undefined, `client "${reader}" shows row ${row.key} of ${row.table} live: ${JSON.stringify(held)}`);
});

Then(
  'client {string} inspection shows an accepted {string}, {string} and {string} for the row, each with its own stable mutation ID',
  async function (this: SyncWorld, name: string, first: string, second: string, third: string) {
    const row = rowOfWrites(this);
    const captured = row.captured;
    const records = await queueOf(this, name);
    const shown = captured.map((id) => records.find((r) => r.id === id));
    this.assert.equal(
      shown.map((r) => (r === undefined ? '(gone)' : `${r.op} ${r.status}`)),
      [first, second, third].map((op) => `${op} accepted`),
      `the records client "${name}" shows for the mutation IDs its three writes captured (${captured.join(', ')})`,
    );
    this.assert.equal(new Set(captured).size, 3, `mutation IDs of the three writes: ${captured.join(', ')}`);
    // Stable: the IDs the client pushed for the row are exactly the ones captured at write time.
    const pushed = new Set<string>();
    for (const e of await exchangesOf(this, name, { endpoints: ['push'] })) {
      const body = JSON.parse(Buffer.from(e.requestBody).toString('utf8')) as { mutations?: { mutation_id: string; pk: Record<string, unknown> }[] };
      for (const m of body.mutations ?? []) if (String(Object.values(m.pk)[0]) === row.key) pushed.add(m.mutation_id);
    }
    this.assert.equal([...pushed].sort(), [...captured].sort(), `mutation IDs client "${name}" pushed for ${row.table} ${row.key}`);
  },
);

const PROTOCOL_REQUESTS = /^"(POST \/sync\/[a-z]+)", "(POST \/sync\/[a-z]+)", "(POST \/sync\/[a-z]+)" and "(POST \/sync\/[a-z]+)"$/;

Then(/^every request the proxy recorded from clients "([^"]+)" and "([^"]+)" is one of (.+)$/, async function (this: SyncWorld, a: string, b: string, list: string) {
  const allowed = PROTOCOL_REQUESTS.exec(list)?.slice(1);
  if (allowed === undefined) throw new Error(`"${list}" is not a list of four protocol requests`);
  for (const name of [a, b]) {
    // Requests carrying the client's id or its user's credential: an upload that names no client is still the client's.
    const sent = await exchangesOf(this, name, { orUserCredential: true, unfinished: true });
    this.assert.ok(sent.some((e) => e.endpoint === 'push' || e.endpoint === 'pull'), `the proxy recorded no sync request from client "${name}"`);
    this.assert.equal(
      sent.map((e) => `${e.method} ${e.path.split('?')[0]}`).filter((r) => !allowed.includes(r)),
      [],
      `requests of client "${name}" outside ${allowed.join(', ')}`,
    );
  }
});

Given('nothing else is required', async function (this: SyncWorld) {
  // The scenario pushes onto a key the server does not hold yet: nothing was prepared for it.
  await this.readyServer();
});

const TABLE_OF_NOUN: Record<string, string> = { task: 'tasks', counter: 'counters' };

Given(/^(task|counter) "([^"]+)" exists at (?:a version the harness knows|a known version)$/, async function (this: SyncWorld, noun: string, key: string) {
  const table = TABLE_OF_NOUN[noun] as string;
  const columns: Record<string, unknown> = table === 'tasks' ? { owner_id: 'alice', title: 'Existing' } : { owner_id: 'alice', value: 0 };
  // The scenario's harness client is "H": it creates the row and so holds its version.
  const reply = await pushOneOf(this, 'H', { op: 'insert', table, key, columns });
  const outcome = (reply.json?.accepted ?? []).find((o: { status?: string }) => o.status === 'applied');
  if (reply.status !== 200 || outcome === undefined) throw new Error(`the harness could not create ${table} ${key}: ${reply.status} ${reply.text.slice(0, 500)}`);
});

/** `with columns owner "alice", title "New"`, `with title "Changed" and that base version`, `with that base version`. */
function payloadOf(text: string): { columns?: Record<string, unknown>; base: boolean } {
  const body = text.replace(/^with (?:columns )?/, '');
  const base = /(?:^| and )that base version$/.test(body);
  const assignments = body.replace(/(?:^| and )that base version$/, '').trim();
  if (assignments === '') return { base };
  const columns: Record<string, unknown> = {};
  for (const part of assignments.split(/,\s*/)) {
    const m = /^(\w+) (?:"([^"]*)"|(-?\d+))$/.exec(part.trim());
    if (!m) throw new Error(`"${part}" is not a column assignment (<column> "<text>" or <column> <number>)`);
    columns[m[1] === 'owner' ? 'owner_id' : (m[1] as string)] = m[2] ?? Number(m[3]);
  }
  return { columns, base };
}

When(
  /^the harness client "([^"]+)" pushes a batch with one "(insert|update|delete)" mutation on "([^"]+)" for key "([^"]+)"\s*(with .+)$/,
  async function (this: SyncWorld, name: string, op: 'insert' | 'update' | 'delete', table: string, key: string, payload: string) {
    const { columns, base } = payloadOf(payload);
    const mutationId = randomUUID();
    await pushOneOf(this, name, { op, table, key, mutationId, ...(columns === undefined ? {} : { columns }), base });
    lastMutation.set(this, mutationId);
  },
);

Then('the next pull of client {string} reflects that {string} on {string}', async function (this: SyncWorld, name: string, op: string, table: string) {
  // The push committed on the source; the pull serves it once capture has materialized that commit.
  await awaitCapture(this);
  const change = await lastDeliveredChange(this, name, table);
  const pushed = change.pushed;
  this.assert.ok(change.delivered !== undefined, `the next pull of client "${name}" carried no change of ${table} ${pushed.key}: ${change.replyText.slice(0, 800)}`);
  const delivered = change.delivered;
  if (op === 'delete') {
    this.assert.equal(delivered?.op, 'delete', `the change of ${table} ${pushed.key} client "${name}" pulled`);
    const deletedAt = this.model.table(table).deletedAtColumn;
    if (deletedAt !== undefined && delivered?.row !== undefined) this.assert.ok(delivered.row[deletedAt] !== null, `the tombstone of ${table} ${pushed.key} has no ${deletedAt}: ${JSON.stringify(delivered.row)}`);
    return;
  }
  this.assert.equal(delivered?.op, 'upsert', `the change of ${table} ${pushed.key} client "${name}" pulled`);
  const expected = Object.fromEntries(Object.keys(pushed.columns ?? {}).map((column) => [column, delivered?.row?.[column]]));
  this.assert.equal(expected, pushed.columns ?? {}, `columns of ${table} ${pushed.key} in the pull of client "${name}" after the harness's ${op}`);
});
