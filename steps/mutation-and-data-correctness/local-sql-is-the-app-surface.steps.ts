/**
 * SYNC-MUT-001 Local SQL Is The App Surface
 * (features/mutation-and-data-correctness/local-sql-is-the-app-surface.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Then } from '@cucumber/cucumber';
import { exchangesOf } from '../support/exchanges.ts';
import { outcomesGiven, pushesOf, rowMatcher } from '../support/mutations/pushes.ts';
import { describeQueue, ofRow, queueOf } from '../support/mutations/queue.ts';
import { queueState } from '../support/mutations/state.ts';
import { lastWrite, lastWriteOf } from '../support/mutations/writes.ts';
import { tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

Then(
  'the proxy recorded pushes from client {string} carrying, in this order, operations {string}, {string} and {string} of row {string} of table {string}',
  async function (this: SyncWorld, name: string, first: string, second: string, third: string, row: string, table: string) {
    const matches = await rowMatcher(this, table, row);
    // A retried batch carries the same mutation again: each mutation counts once, at its first sending.
    const seen = new Set<string>();
    const ops: string[] = [];
    for (const push of await pushesOf(this, name)) {
      for (const m of push.mutations.filter(matches)) {
        if (seen.has(String(m.mutation_id))) continue;
        seen.add(String(m.mutation_id));
        ops.push(String(m.op));
      }
    }
    this.assert.equal(ops, [first, second, third], `operations client "${name}" pushed for ${table} ${row}`);
  },
);

Then('every pushed mutation of client {string} was accepted', async function (this: SyncWorld, name: string) {
  const pushes = await pushesOf(this, name);
  const outcomes = outcomesGiven(pushes);
  const ids = [...new Set(pushes.flatMap((p) => p.mutations.map((m) => String(m.mutation_id))))];
  this.assert.ok(ids.length > 0, `client "${name}" pushed no mutation`);
  this.assert.equal(
    ids.filter((id) => !(outcomes.get(id) ?? []).some((o) => o.status === 'applied')),
    [],
    `mutations of client "${name}" that no push answer accepted`,
  );
  const records = await queueOf(this, name);
  this.assert.equal(
    records.filter((r) => ids.includes(r.id) && r.status !== 'accepted').map((r) => `${r.op} ${r.recordId} ${r.status}`),
    [],
    `client "${name}" does not show every pushed mutation as accepted (${describeQueue(records)})`,
  );
});

/** Reads the source row directly: whether a delete left a tombstone or removed the row is the server's storage, not a wire fact. */
Then(/^the source table on the server holds row "([^"]+)" of table "([^"]+)" as (a tombstone|deleted)$/, async function (this: SyncWorld, row: string, table: string, how: string) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability`);
  const key = this.model.keyColumn(table).name;
  const spec = this.model.table(table);
  const rows = await server.sourceSql.query(`SELECT * FROM public."${table}" WHERE "${key}"::text = $1`, [row]);
  if (how === 'deleted') {
    this.assert.equal(rows.length, 0, `the source table ${table} still holds row ${row}: ${JSON.stringify(rows)}`);
    return;
  }
  this.assert.equal(rows.length, 1, `the source table ${table} holds no tombstone of row ${row}`);
  const deletedAt = spec.deletedAtColumn;
  if (deletedAt === undefined) throw new Error(`table "${table}" has no deletion column: it keeps no tombstone`);
  this.assert.ok(rows[0]?.[deletedAt] !== null && rows[0]?.[deletedAt] !== undefined, `row ${row} of ${table} is not marked deleted: ${JSON.stringify(rows[0])}`);
});

Then('the proxy recorded no request from client {string} since the write', async function (this: SyncWorld, name: string) {
  const mark = queueState(this).writeMarks.get(name);
  if (mark === undefined) throw new Error(`client "${name}" made no write in this scenario`);
  const sent = await exchangesOf(this, name, { from: mark, unfinished: true, orUserCredential: true });
  this.assert.equal(
    sent.map((e) => `${e.method} ${e.path}`),
    [],
    `requests client "${name}" sent after its write, before any sync was asked for`,
  );
});

Then('the statement succeeds', function (this: SyncWorld) {
  const statement = lastWrite(this).write;
  // The row count is not asked for: a hard delete that the capture trigger turns into a soft delete reports no changed row in SQLite.
  this.assert.ok(statement.error === undefined, `the local database refused "${statement.sql}": ${statement.error?.message}`);
});

Then('client {string} shows one new mutation record with operation {string} for row {string} of table {string}', async function (this: SyncWorld, name: string, op: string, row: string, table: string) {
  const statement = lastWriteOf(this, name);
  const tableId = (await tableNamed(this, table)).table_id;
  const records = await queueOf(this, name);
  const fresh = records.filter((r) => !statement.before.has(r.id));
  this.assert.equal(
    fresh.map((r) => ({ op: r.op, row: r.recordId, table: r.tableId ?? r.table })),
    [{ op, row, table: fresh[0]?.tableId === undefined ? table : tableId }],
    `records client "${name}" captured for "${statement.sql}" (${describeQueue(ofRow(records, row))})`,
  );
});

const PROTOCOL_ENDPOINTS = new Set(['/sync/connect', '/sync/push', '/sync/pull', '/sync/rebuild']);

Then(/^every request the proxy recorded from client "([^"]+)" went to POST \/sync\/connect, \/sync\/push, \/sync\/pull or \/sync\/rebuild$/, async function (this: SyncWorld, name: string) {
  // Requests carrying the client's id or its user's credential: an upload that names no client is still the client's.
  const sent = await exchangesOf(this, name, { orUserCredential: true, unfinished: true });
  this.assert.ok(sent.some((e) => e.endpoint === 'push'), `client "${name}" sent no push at all`);
  this.assert.equal(
    sent.filter((e) => e.method !== 'POST' || !PROTOCOL_ENDPOINTS.has(e.path.split('?')[0] ?? '')).map((e) => `${e.method} ${e.path}`),
    [],
    `requests of client "${name}" outside the protocol endpoints`,
  );
});

const APPLICATION_CALLS: Record<string, string> = { open: 'open', execute: 'exec', transaction: 'exec', query: 'query', syncNow: 'sync' };

Then('the harness made no call to client {string} other than open, exec, query, sync and inspect', async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  const kinds = client.process.calls.map((method) => APPLICATION_CALLS[method] ?? (method.startsWith('inspect') || method === 'getStatus' ? 'inspect' : method));
  this.assert.ok(kinds.includes('exec') && kinds.includes('sync'), `the harness never wrote or synced through client "${name}": ${kinds.join(', ')}`);
  this.assert.equal(
    kinds.filter((kind) => !['open', 'exec', 'query', 'sync', 'inspect'].includes(kind)),
    [],
    `calls the harness needed besides the SQL surface and sync`,
  );
});
