/**
 * SYNC-CAP-004 Idempotent WAL Replay
 * (features/server-change-capture/idempotent-wal-replay.feature): the steps
 * only this requirement uses. "That transaction" is the newest source
 * transaction that wrote rows of "tasks" (steps/support/capture/replay-records.ts);
 * its records are read through the inspect capability. A "row version" of
 * the materialization is its projection record: the version fence itself is
 * written by the source transaction, before capture sees it.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { inspectRows } from '../support/capture/inspection.ts';
import { crashIfArmed } from '../support/database-crash/index.ts';
import { footprint, lastSourceTransaction, remember, remembered } from '../support/capture/replay-records.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import type { SyncWorld } from '../support/world.ts';

const TABLE = 'tasks';

/** The WAL insert position read when a hold was armed: the held transaction commits after it. */
const armedAt = new WeakMap<SyncWorld, string>();

const keysOf = (list: string) => list.split(',').map((k) => k.trim());

Then('server inspection shows no transaction record, event, row version, membership edge or pull effect for that transaction', async function (this: SyncWorld) {
  const tx = await lastSourceTransaction(this, TABLE);
  const seen = await footprint(this, tx);
  this.assert.equal(
    { transactions: seen.transactions, events: seen.rowEvents, rowVersions: seen.projections, edges: seen.edges, effects: seen.effects },
    { transactions: [], events: 0, rowVersions: [], edges: [], effects: [] },
    `what capture made durable for the transaction that wrote ${tx.keys.join(', ')}`,
  );
});

Then('server inspection shows exactly {int} transaction record and {int} event records for that transaction', async function (this: SyncWorld, transactions: number, events: number) {
  const tx = await lastSourceTransaction(this, TABLE);
  const seen = await footprint(this, tx);
  this.assert.equal(
    { transactions: seen.transactions.length, events: seen.events.length, eventsOfRows: seen.rowEvents },
    { transactions, events, eventsOfRows: events },
    `records of the transaction that wrote ${tx.keys.join(', ')}: ${JSON.stringify(seen.transactions)}`,
  );
});

Then('server inspection shows the slot acknowledgement at or after the end of that transaction', async function (this: SyncWorld) {
  const seen = await footprint(this, await lastSourceTransaction(this, TABLE));
  const end = seen.transactions[0]?.end;
  this.assert.ok(end !== undefined, 'the transaction has a durable record naming its end');
  if (end === undefined) return;
  const [positions] = await inspectRows<{ ack: string; confirmed: string | null; ack_ok: boolean; slot_ok: boolean }>(
    this,
    `SELECT w.acknowledged_end_lsn::text AS ack, s.confirmed_flush_lsn::text AS confirmed,
            w.acknowledged_end_lsn >= $1::pg_lsn AS ack_ok, s.confirmed_flush_lsn >= $1::pg_lsn AS slot_ok
       FROM synchro.wal_progress w LEFT JOIN pg_replication_slots s ON s.slot_name = w.slot_name`,
    [end],
  );
  this.assert.equal({ recorded: positions?.ack_ok, slot: positions?.slot_ok }, { recorded: true, slot: true }, `acknowledged ${positions?.ack}, slot ${positions?.confirmed}, transaction end ${end}`);
});

/**
 * The reference writes a transaction's events in a few batched statements of
 * one database transaction, so the latest point where some but not all of
 * its work may be durable is the hold before its materialization commit:
 * every event is written there and nothing committed. A worker that made
 * events durable one by one has made them all durable by then.
 */
Given('the capture worker is held after materializing 1 of the events of the next transaction', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.holdBeforeCommit) return undeterminedWithout(this, `server adapter "${server.id}" offers no capture.holdBeforeCommit() to hold the worker inside a materialization`);
  await server.capture.holdBeforeCommit();
  const [at] = await inspectRows<{ l: string }>(this, 'SELECT pg_current_wal_insert_lsn()::text AS l');
  armedAt.set(this, at?.l as string);
  return undefined;
});

Then('server inspection shows no event record, pull effect or acknowledgement for that transaction', async function (this: SyncWorld) {
  const tx = await lastSourceTransaction(this, TABLE);
  const seen = await footprint(this, tx);
  const armed = armedAt.get(this);
  if (armed === undefined) throw new Error('no hold was armed earlier in this scenario');
  // The held transaction committed after the hold was armed: an acknowledgement at or below that position cannot cover it.
  const [progress] = await inspectRows<{ ack: string; covered: boolean }>(
    this,
    'SELECT acknowledged_end_lsn::text AS ack, acknowledged_end_lsn > $1::pg_lsn AS covered FROM synchro.wal_progress',
    [armed],
  );
  this.assert.equal(
    { transactions: seen.transactions, events: seen.rowEvents, effects: seen.effects, acknowledgedPastHold: progress?.covered },
    { transactions: [], events: 0, effects: [], acknowledgedPastHold: false },
    `the transaction that wrote ${tx.keys.join(', ')} (hold armed at ${armed}, acknowledged ${progress?.ack})`,
  );
});

When('the harness runs on the source database and rolls back:', async function (this: SyncWorld, sql: string) {
  const server = await this.readyServer();
  if (!server.sourceSql?.session) return undeterminedWithout(this, `server adapter "${server.id}" offers no sourceSql.session() to run an explicit transaction`);
  const session = await server.sourceSql.session();
  try {
    await session.query('BEGIN');
    await session.query(sql);
    await session.query('ROLLBACK');
  } finally {
    await session.close();
  }
  return undefined;
});

Then(
  'server inspection shows no transaction record, event, row version, write fence, membership edge or pull effect for row {string}',
  async function (this: SyncWorld, key: string) {
    const [tableRow] = await inspectRows<{ id: string }>(this, "SELECT table_id AS id FROM synchro.relations WHERE active AND physical_relation = 'tasks'");
    const seen = await footprint(this, { xid: '-1', tableId: tableRow?.id as string, keys: [key] });
    this.assert.equal(
      { events: seen.rowEvents, rowVersions: seen.projections, fences: seen.fences, edges: seen.edges, effects: seen.effects },
      { events: 0, rowVersions: [], fences: [], edges: [], effects: [] },
      `what the server holds for row ${key}`,
    );
  },
);

/**
 * Waits until the armed kill has happened (the worker refuses to catch up
 * once it is down), performs the immediate database shutdown and restart
 * when one was armed to follow the kill, then records the fences of the rows
 * and whatever transaction record the worker made durable before it died.
 */
When('the harness records the server versions that inspection reports for rows {string}', async function (this: SyncWorld, list: string) {
  const server = await this.readyServer();
  if (!server.capture) throw new Error(`server adapter "${server.id}" has no capture capability`);
  const caughtUp = await server.capture.awaitMaterialized(this.deadlineMs).then(
    () => true,
    () => false,
  );
  this.assert.ok(!caughtUp, 'the capture worker was killed at the armed point (it still caught up)');
  if ((await crashIfArmed(this)) === 'skipped') return 'skipped';
  const tx = await lastSourceTransaction(this, TABLE);
  this.assert.equal(tx.keys, keysOf(list), 'the rows of the transaction under test');
  remember(this, { tx, before: await footprint(this, tx) });
  return undefined;
});

Then(
  'server inspection shows exactly 1 transaction record for that transaction, with the same stream generation and commit position as before the kill',
  async function (this: SyncWorld) {
    const { tx, before } = remembered(this);
    const after = await footprint(this, tx);
    const identity = (t: { generation: string; commit: string }) => `${t.generation}@${t.commit}`;
    this.assert.equal(after.transactions.length, 1, `transaction records after the restart: ${JSON.stringify(after.transactions)}`);
    // A kill after the materialization commit leaves the record durable: the replay keeps it. A kill before leaves none to compare.
    if (before.transactions.length > 0) this.assert.equal(after.transactions.map(identity), before.transactions.map(identity), 'the transaction identity across the kill');
  },
);

Then('server inspection shows each event identity of that transaction exactly once', async function (this: SyncWorld) {
  const { tx } = remembered(this);
  const seen = await footprint(this, tx);
  this.assert.equal(
    { events: seen.events.length, distinct: new Set(seen.events).size, eventsOfRows: seen.rowEvents },
    { events: 3, distinct: 3, eventsOfRows: 3 },
    `event identities: ${seen.events.join(', ')}`,
  );
});

Then('server inspection shows each pull effect position exactly once', async function (this: SyncWorld) {
  const { tx } = remembered(this);
  const seen = await footprint(this, tx);
  const positions = seen.effects.map((e) => e.split('|').slice(1).join('|') + e.split('|')[0]);
  const commits = new Set(seen.effects.map((e) => e.split('|')[2]));
  this.assert.equal(
    { positions: positions.length > 0 && new Set(positions).size === positions.length, commits: [...commits] },
    { positions: true, commits: seen.transactions.map((t) => t.commit) },
    `pull effects of the rows: ${seen.effects.join(', ')}`,
  );
});

Then('server inspection shows exactly one row version per fence of that transaction', async function (this: SyncWorld) {
  const { tx } = remembered(this);
  const seen = await footprint(this, tx);
  this.assert.equal(seen.projections, seen.fences, 'materialized row versions against the fences of the rows');
  this.assert.equal(seen.fences.map((f) => f.key), tx.keys, 'one fence per row');
});

Then('the server versions of rows {string} equal the recorded ones', async function (this: SyncWorld, list: string) {
  const { tx, before } = remembered(this);
  const after = await footprint(this, tx);
  this.assert.equal(
    { fences: after.fences, rowVersions: after.projections },
    { fences: before.fences, rowVersions: before.fences },
    `server versions of rows ${keysOf(list).join(', ')}`,
  );
});

type Counts = {
  transactions: string;
  events: string;
  versions: string;
  edges: string;
  effects: string;
};

const recordedCounts = new WeakMap<SyncWorld, Counts>();

async function counts(world: SyncWorld): Promise<Counts> {
  const [row] = await inspectRows<Counts>(
    world,
    `SELECT (SELECT count(*) FROM synchro.wal_transactions)::text AS transactions, (SELECT count(*) FROM synchro.wal_events)::text AS events,
            (SELECT count(*) FROM synchro.projections)::text AS versions, (SELECT count(*) FROM synchro.membership_edges)::text AS edges,
            (SELECT count(*) FROM synchro.scope_effects)::text AS effects`,
  );
  return row as Counts;
}

Given('the harness records the counts of transaction records, events, row versions, membership edges and pull effects', async function (this: SyncWorld) {
  recordedCounts.set(this, await counts(this));
});

Then('the counts of transaction records, events, row versions, membership edges and pull effects equal the recorded counts', async function (this: SyncWorld) {
  const before = recordedCounts.get(this);
  if (before === undefined) throw new Error('no counts were recorded earlier in this scenario');
  this.assert.equal(await counts(this), before, 'capture record counts after the replay');
});

Then('the membership edges of row {string} are exactly {string} in bytewise order', async function (this: SyncWorld, key: string, list: string) {
  const rows = await inspectRows<{ scope: string }>(
    this,
    `SELECT e.scope_id AS scope FROM synchro.membership_edges e JOIN synchro.relations r ON r.table_id = e.table_id
      WHERE r.active AND r.physical_relation = 'tasks' AND e.pk_text = $1 ORDER BY e.scope_id COLLATE "C"`,
    [key],
  );
  this.assert.equal(rows.map((r) => r.scope), keysOf(list), `membership edges of row ${key}`);
});

Given('client {string} has pulled until {string} is false', async function (this: SyncWorld, name: string, member: string) {
  if (member !== 'has_more') throw new Error(`a drain follows "has_more", not "${member}"`);
  const pages = await this.wire(name).pullAll();
  const last = pages.at(-1);
  if (last?.status !== 200 || last.json?.has_more !== false) throw new Error(`client "${name}" did not drain its pull: ${last?.status} ${last?.text.slice(0, 300)}`);
});
