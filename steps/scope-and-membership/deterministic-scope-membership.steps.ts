/**
 * SYNC-SCOPE-001 Deterministic Scope Membership
 * (features/scope-and-membership/deterministic-scope-membership.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import type { InspectControl } from '../../harness/adapters/server.ts';
import { badAnswer, fanoutOf, listedFunctionSql, reconfigure } from '../support/scope-membership/functions.ts';
import { membershipState, relationOf } from '../support/scope-membership/membership.ts';
import { byteSorted } from '../support/scopes/exchanges.ts';
import { sourceSql } from '../support/scopes/roles.ts';
import type { RebuildRun } from '../support/wire-client.ts';
import { keyValue, type Obj } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';
import { bodyOf, exchangesOf, upstreamOf } from '../support/exchanges.ts';

/** Every pull change the server answered client `name` during the scenario. */
Then(/^no response to client "([^"]+)" ever lists a "delete" of row "([^"]+)"$/, async function (this: SyncWorld, name: string, key: string) {
  const deletes: string[] = [];
  let answered = 0;
  for (const exchange of await exchangesOf(this, name, { endpoints: ['pull'] })) {
    const answer = upstreamOf(exchange);
    if (answer === undefined) continue;
    answered += 1;
    const changes = ((bodyOf(answer.body) as Obj | undefined)?.changes ?? []) as Obj[];
    for (const change of changes) if (change.op === 'delete' && String(keyValue(change.pk)) === key) deletes.push(`#${exchange.seq}: ${JSON.stringify(change)}`);
  }
  // With no answer at all the check would hold for a client that never asked.
  this.assert.ok(answered > 0, `client "${name}" got no pull answer in this scenario`);
  this.assert.equal(deletes, [], `deletes of row ${key} sent to client "${name}"`);
});

async function inspection(world: SyncWorld): Promise<InspectControl> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability`);
  return server.inspect;
}

/** The scope IDs of the row's edges, as stored, in the order the server keeps for them (bytewise). */
async function edgesOf(world: SyncWorld, table: string, key: string): Promise<string[]> {
  const rows = await (await inspection(world)).query<{ scope_id: string }>(
    `SELECT e.scope_id FROM synchro.membership_edges e JOIN synchro.relations r ON r.table_id = e.table_id
      WHERE r.physical_relation_oid = to_regclass($1) AND r.active AND e.pk_text = $2 ORDER BY e.scope_id COLLATE "C"`,
    [relationOf(table), key],
  );
  return rows.map((row) => row.scope_id);
}

Then(
  'server inspection shows the membership edges of row {string} of table {string} exactly as {string} in bytewise order',
  async function (this: SyncWorld, key: string, table: string, list: string) {
    const expected = list.split(', ');
    if (JSON.stringify(byteSorted(expected)) !== JSON.stringify(expected)) throw new Error(`the expected list "${list}" is not in bytewise order`);
    this.assert.equal(await edgesOf(this, table, key), expected, `membership edges of ${table} row ${key}`);
  },
);

When('the harness records the membership edges of row {string} of table {string} as {string}', async function (this: SyncWorld, key: string, table: string, label: string) {
  // The row may still be on its way through capture (a worker armed to crash gives no other signal):
  // wait until it has edges, up to the scenario deadline.
  const deadline = Date.now() + this.deadlineMs;
  let edges = await edgesOf(this, table, key);
  while (edges.length === 0 && Date.now() < deadline) {
    await delay(50);
    edges = await edgesOf(this, table, key);
  }
  // A recording of nothing would make the later comparison pass for a row capture never placed.
  if (edges.length === 0) throw new Error(`server inspection shows no membership edge for ${table} row ${key} to record`);
  membershipState(this).edges.set(label, edges);
});

Then('the membership edges of row {string} of table {string} equal the recorded {string} byte for byte', async function (this: SyncWorld, key: string, table: string, label: string) {
  const recorded = membershipState(this).edges.get(label);
  if (recorded === undefined) throw new Error(`no membership edges were recorded as "${label}"`);
  const bytes = (scopes: readonly string[]) => scopes.map((scope) => Buffer.from(scope, 'utf8').toString('hex'));
  this.assert.equal(bytes(await edgesOf(this, table, key)), bytes(recorded), `membership edges of ${table} row ${key} (hex of each scope ID) against "${label}"`);
});

/**
 * Replaces the body of the table's registered membership function (same
 * identity) by one answering badly for one row. A variant exceeding a fanout
 * bound first registers that bound with the current, well-behaved body.
 */
Given(/^the membership function of table "([^"]+)" is replaced by one that (.+) for row "([^"]+)"$/, async function (this: SyncWorld, table: string, failure: string, row: string) {
  const fn = membershipState(this).functions.get(table);
  if (fn === undefined) throw new Error(`table "${table}" has no membership function of this scenario: a step "table ${table} places each row in scopes ..." must come first`);
  const spec = this.model.table(table);
  const key = this.model.keyColumn(table);
  const answer = badAnswer(failure, key);
  const bound = fanoutOf(failure);
  if (bound !== undefined) await reconfigure(this, relationOf(table), fn, bound);
  await (await sourceSql(this)).query(listedFunctionSql(fn, spec, key, { row, answer }));
});

/** How many generated sets "many" stands for: one source transaction each. */
const GENERATED_SETS = 12;

/** A small page, so each rebuild walks several pages to its final one. */
const PAGE_LIMIT = 7;

const rebuilds = new WeakMap<SyncWorld, Map<string, RebuildRun[]>>();

const names = (list: string) => list.split(',').map((name) => name.trim());

Given(
  'the harness commits many generated sets of {int} to {int} rows of table {string} with owners from {string} and teams from {string}',
  async function (this: SyncWorld, min: number, max: number, table: string, owners: string, teams: string) {
    const spec = this.model.table(table);
    for (const column of ['id', 'owner_id', 'team', 'title']) {
      if (!spec.columns.some((c) => c.name === column)) throw new Error(`table "${table}" has no column ${column}, which generated rows fill`);
    }
    const row = fc.record({ owner: fc.constantFrom(...names(owners)), team: fc.constantFrom(...names(teams)), title: fc.string({ unit: 'grapheme', maxLength: 16 }).filter((text) => !text.includes('\u0000')) });
    const seed = Date.now() | 0;
    this.attach(`generated row sets: fast-check seed ${seed}`, 'text/plain');
    const sets = fc.sample(fc.array(row, { minLength: min, maxLength: max }), { numRuns: GENERATED_SETS, seed });
    const sql = await sourceSql(this);
    for (const [n, set] of sets.entries()) {
      const values = set.map((_, i) => `($${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}, $${4 * i + 4})`);
      const params = set.flatMap((r, i) => [`gen-${n + 1}-${i + 1}`, r.owner, r.team, r.title]);
      // One statement per set: one source transaction per generated set.
      await sql.query(`INSERT INTO public."${table}" (id, owner_id, team, title) VALUES ${values.join(', ')}`, params);
    }
  },
);

When('client {string} rebuilds every assigned scope to its final page twice', async function (this: SyncWorld, name: string) {
  const client = this.wire(name);
  const runs = new Map<string, RebuildRun[]>();
  for (const scope of client.cursors.keys()) {
    runs.set(scope, [await client.rebuildAll(scope, PAGE_LIMIT), await client.rebuildAll(scope, PAGE_LIMIT)]);
  }
  if (runs.size === 0) throw new Error(`client "${name}" has no assigned scope to rebuild`);
  rebuilds.set(this, runs);
});

Then('both rebuilds of each scope hold the same records with the same row checksums and the same final scope checksum', function (this: SyncWorld) {
  const runs = rebuilds.get(this);
  if (!runs) throw new Error('no scope was rebuilt twice in this scenario');
  for (const [scope, [first, second]] of runs) {
    for (const run of [first, second]) {
      const last = run?.pages[run.pages.length - 1];
      this.assert.equal(last?.status, 200, `a rebuild of ${scope} ended with ${last?.status}: ${last?.text.slice(0, 500)}`);
    }
    // Records carry their row checksum, so equal records mean equal checksums too.
    this.assert.ok((first?.records.length ?? 0) > 0, `the rebuild of ${scope} holds no record, so there is nothing to compare`);
    this.assert.equal(second?.records, first?.records, `records of the two rebuilds of ${scope}`);
    this.assert.equal(second?.checksum, first?.checksum, `final scope checksum of the two rebuilds of ${scope}`);
  }
});
