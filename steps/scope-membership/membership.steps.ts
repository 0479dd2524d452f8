/**
 * Deterministic scope membership: where a table's rows belong (placements
 * listed with their repeats), the membership edges server inspection shows
 * for a row, and membership functions that fail for one row so that capture
 * must block rather than empty the row's scopes.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Given, Then, When } from '@cucumber/cucumber';
import type { InspectControl } from '../../harness/adapters/server.ts';
import { byteSorted } from '../scopes/exchanges.ts';
import { sourceSql } from '../scopes/roles.ts';
import type { SyncWorld } from '../support/world.ts';
import { badAnswer, fanoutOf, listedFunctionSql, reconfigure } from './functions.ts';

interface MembershipState {
  /** The membership function the scenario last registered, by table name. */
  functions: Map<string, string>;
  /** Edge lists a step recorded under a label. */
  edges: Map<string, string[]>;
}

const states = new WeakMap<SyncWorld, MembershipState>();

function membershipState(world: SyncWorld): MembershipState {
  let state = states.get(world);
  if (!state) {
    state = { functions: new Map(), edges: new Map() };
    states.set(world, state);
  }
  return state;
}

const relationOf = (table: string) => `public.${table}`;

/**
 * Each listed placement, repeats included. The table is installed with the
 * model's own function, which merges repeats itself; the step then moves it
 * to a function that returns every placement as listed, so merging is left
 * to the server. Each call gets a function of its own (a registered body is
 * not edited in place).
 */
Given('table {string} places each row in scopes {string}', async function (this: SyncWorld, name: string, list: string) {
  const table = this.model.table(name);
  table.placements.push(...list.split(',').map((template) => template.trim()));
  await this.readyServer();
  const state = membershipState(this);
  const fn = `public.${name}_listed_scopes_${state.functions.size + 1}_${table.placements.length}`;
  const sql = await sourceSql(this);
  await sql.query(listedFunctionSql(fn, table, this.model.keyColumn(name)));
  await reconfigure(this, relationOf(name), fn);
  state.functions.set(name, fn);
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
