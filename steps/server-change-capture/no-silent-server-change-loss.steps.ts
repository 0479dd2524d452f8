/**
 * SYNC-CAP-001 No Silent Server Change Loss
 * (features/server-change-capture/no-silent-server-change-loss.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/capture/.
 *
 * The quarantine and slot checks read the reference's capture records
 * through the inspect capability (synchro.wal_poison, synchro.wal_progress,
 * the slot in pg_replication_slots, synchro.wal_transactions and
 * synchro.wal_events).
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { inspectRows, tableIdOf } from '../support/capture/inspection.ts';
import { breakMembershipFunction, injectionOf, injectUndecodableFence, rejectProjectionWrites, repairMembershipFunction } from '../support/capture/failure-injection.ts';
import { readReply } from '../support/reply.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

/** Down, as a stopped process would be: the worker reads, materializes and acknowledges nothing until restarted. */
Given('the capture worker is stopped', async function (this: SyncWorld) {
  const server = await this.readyServer();
  if (!server.capture?.stopWorker) throw new Error(`server adapter "${server.id}" declares "capture" but offers no capture.stopWorker()`);
  await server.capture.stopWorker();
});

/** The harness client keeps the cursors of the last pull the server answered 200; a refused pull left them as they were. */
When('client {string} pulls with its last issued cursors', async function (this: SyncWorld, name: string) {
  await this.wire(name).pull();
});

When('the harness makes the next source transaction fail with a membership function that returns NULL for the row', async function (this: SyncWorld) {
  await breakMembershipFunction(this, 'tasks');
});

When('the harness makes the next source transaction fail with an injected undecodable fence message', async function (this: SyncWorld) {
  await injectUndecodableFence(this, 'tasks');
});

When('the harness makes the next source transaction fail with a materialization write that the database rejects', async function (this: SyncWorld) {
  await rejectProjectionWrites(this, 'tasks');
});

When('the harness repairs the membership function and requests a retry of the quarantined transaction', async function (this: SyncWorld) {
  // The retry is for the quarantined transaction: a worker slower than the harness (a loaded machine) may still be
  // evaluating the broken function, and a repair made before its quarantine is recorded would be retried by nothing.
  const deadline = Date.now() + this.deadlineMs;
  while ((await inspectRows(this, "SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active'")).length === 0) {
    if (Date.now() > deadline) throw new Error('the capture worker recorded no quarantine for the transaction the broken membership function failed');
  }
  await repairMembershipFunction(this);
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to request a retry`);
  await server.provision.exec('SELECT synchro.synchro_retry_wal_poison()');
});

type QuarantineRecord = {
  generation: string;
  commit: string;
  failure_class: string;
  table_id: string | null;
  /** The commit position lies after the WAL position read when the failure was injected. */
  after_injection: boolean;
  /** Nothing of the transaction at that position was materialized. */
  materialized: boolean;
};

async function activeQuarantine(world: SyncWorld): Promise<QuarantineRecord[]> {
  return inspectRows<QuarantineRecord>(
    world,
    `SELECT q.stream_generation AS generation, q.commit_lsn::text AS commit, q.failure_class, q.table_id,
            q.commit_lsn > $1::pg_lsn AS after_injection,
            EXISTS (SELECT 1 FROM synchro.wal_transactions t WHERE t.stream_generation = q.stream_generation AND t.commit_lsn = q.commit_lsn) AS materialized
       FROM synchro.wal_poison q WHERE q.lifecycle = 'active' ORDER BY q.id`,
    [injectionOf(world).walBefore],
  );
}

Then('server inspection shows one active quarantine record for that transaction with failure class {string}', async function (this: SyncWorld, failureClass: string) {
  const records = await activeQuarantine(this);
  this.assert.equal(
    records.map((r) => ({ failureClass: r.failure_class, afterInjection: r.after_injection, materialized: r.materialized })),
    [{ failureClass, afterInjection: true, materialized: false }],
    `active quarantine records (the injection was at WAL ${injectionOf(this).walBefore}): ${JSON.stringify(records)}`,
  );
});

Then('the quarantine record names the stream generation, the commit position and the relation of table {string}', async function (this: SyncWorld, table: string) {
  const [record] = await activeQuarantine(this);
  const [progress] = await inspectRows<{ generation: string }>(this, 'SELECT stream_generation AS generation FROM synchro.wal_progress');
  this.assert.equal(
    { generation: record?.generation, commitAfterInjection: record?.after_injection, table: record?.table_id },
    { generation: progress?.generation, commitAfterInjection: true, table: await tableIdOf(this, table) },
    `the active quarantine record ${JSON.stringify(record)}`,
  );
});

Then('server inspection shows the slot acknowledgement at or before the commit position of the poison transaction', async function (this: SyncWorld) {
  const [record] = await activeQuarantine(this);
  this.assert.ok(record !== undefined, 'an active quarantine record names the poison transaction');
  if (record === undefined) return;
  const [positions] = await inspectRows<{ acknowledged: string; confirmed: string | null; ack_ok: boolean; slot_ok: boolean }>(
    this,
    `SELECT w.acknowledged_end_lsn::text AS acknowledged, s.confirmed_flush_lsn::text AS confirmed,
            w.acknowledged_end_lsn <= $1::pg_lsn AS ack_ok, s.confirmed_flush_lsn <= $1::pg_lsn AS slot_ok
       FROM synchro.wal_progress w LEFT JOIN pg_replication_slots s ON s.slot_name = w.slot_name`,
    [record.commit],
  );
  this.assert.equal(
    { recorded: positions?.ack_ok, slot: positions?.slot_ok },
    { recorded: true, slot: true },
    `acknowledged ${positions?.acknowledged}, slot confirmed ${positions?.confirmed}, poison commit ${record.commit}`,
  );
});

Then('server inspection shows no transaction record for the transaction that inserted {string}', async function (this: SyncWorld, pk: string) {
  const tableId = await tableIdOf(this, 'tasks');
  const [record] = await activeQuarantine(this);
  const events = await inspectRows<{ commit: string }>(this, 'SELECT commit_lsn::text AS commit FROM synchro.wal_events WHERE table_id = $1 AND pk_text = $2', [tableId, pk]);
  const later = record === undefined ? [] : await inspectRows<{ commit: string }>(this, 'SELECT commit_lsn::text AS commit FROM synchro.wal_transactions WHERE commit_lsn > $1::pg_lsn', [record.commit]);
  this.assert.equal(
    { eventsOfRow: events.map((e) => e.commit), transactionsAfterPoison: later.map((t) => t.commit) },
    { eventsOfRow: [], transactionsAfterPoison: [] },
    `durable transaction records past the poison at ${record?.commit}`,
  );
});

Then('the readiness response is 503 with body exactly:', async function (this: SyncWorld, body: string) {
  const proxy = await this.proxy();
  const reply = await readReply('ready', await fetch(`${proxy.url}/ready`, { signal: AbortSignal.timeout(this.deadlineMs) }), '');
  this.assert.equal({ status: reply.status, body: reply.text }, { status: 503, body }, 'GET /ready');
});

Then(
  'the pull either answers 503 {string} with reason {string} or lists no change for rows {string}',
  function (this: SyncWorld, code: string, reason: string, list: string) {
    const reply = this.lastReply();
    const detail = `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 500)}`;
    if (reply.status === 503) {
      this.assert.equal({ code: reply.json?.error?.code, reason: reply.json?.error?.reason }, { code, reason }, detail);
      return;
    }
    const keys = new Set(list.split(',').map((k) => k.trim()));
    const listed = ((reply.json?.changes ?? []) as Array<{ pk?: unknown }>).map((c) => String(keyValue(c.pk))).filter((pk) => keys.has(pk));
    this.assert.equal({ status: reply.status, listed }, { status: 200, listed: [] }, detail);
  },
);
