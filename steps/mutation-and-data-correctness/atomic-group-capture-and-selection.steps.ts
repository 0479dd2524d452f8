/**
 * SYNC-MUT-024 Atomic Group Capture And Selection: groups written through the
 * client's atomic write call, their group IDs and statuses as the client
 * shows them, and every push request the proxy recorded from the client.
 */
import { type DataTable, Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { processPhrase } from '../support/client-mode.ts';
import { atomicOutcomes, atomicWrite, bodyLengthFor, insertSql, lastAtomic, rowRange } from '../support/mutations/atomic-capture.ts';
import { pushesOf, type SentPush } from '../support/mutations/pushes.ts';
import { describeQueue, queueOf, recordNamed } from '../support/mutations/queue.ts';
import type { QueueRecord } from '../support/mutations/state.ts';
import { splitStatements } from '../support/mutations/writes.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { keyValue, type Obj } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';
import { generatedSeed } from '../support/generated-seed.ts';

processPhrase(/^client "([^"]+)" (?:runs an atomic write|is opened with push batch size)/);
processPhrase(/^the harness runs \d+ generated rounds through client "([^"]+)"/);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const octets = (text: string) => Number(text.replaceAll(',', ''));

async function reopen(world: SyncWorld, name: string, batchSize: number): Promise<void> {
  // The push batch size is application configuration: the application closes the client and opens it again on the same data directory.
  const client = await world.process(name);
  await client.call('close');
  await client.call('open', await world.openParams(client, client.userId, { pushBatchSize: batchSize }));
}

Given('client {string} is opened with push batch size {int}', async function (this: SyncWorld, name: string, size: number) {
  await reopen(this, name, size);
});

When('client {string} runs an atomic write with statements:', async function (this: SyncWorld, name: string, sql: string) {
  await atomicWrite(this, name, splitStatements(sql));
});

When('client {string} runs an atomic write with the statements {string} and {string}', async function (this: SyncWorld, name: string, a: string, b: string) {
  await atomicWrite(this, name, [a, b]);
});

When(/^client "([^"]+)" runs an atomic write with (\d+) inserts of rows "([^"]+)" to "([^"]+)" with body "([^"]*)"$/, async function (this: SyncWorld, name: string, count: string, first: string, last: string, body: string) {
  const rows = rowRange(first, last);
  if (rows.length !== Number(count)) throw new Error(`rows "${first}" to "${last}" are ${rows.length}, not ${count}`);
  await atomicWrite(this, name, rows.map((id) => insertSql('notes', id, this.clientUsers.get(name) ?? 'alice', body)));
});

When(/^client "([^"]+)" runs an atomic write with (\d+) inserts of rows "([^"]+)" to "([^"]+)" with bodies of ([\d,]+) characters each$/, async function (this: SyncWorld, name: string, count: string, first: string, last: string, size: string) {
  const rows = rowRange(first, last);
  if (rows.length !== Number(count)) throw new Error(`rows "${first}" to "${last}" are ${rows.length}, not ${count}`);
  await atomicWrite(this, name, rows.map((id) => insertSql('notes', id, this.clientUsers.get(name) ?? 'alice', 'b'.repeat(octets(size)))));
});

When(/^client "([^"]+)" runs an atomic write with one insert of row "([^"]+)" whose body is sized so that its normalized mutation is ([\d,]+) octets$/, async function (this: SyncWorld, name: string, id: string, size: string) {
  const owner = this.clientUsers.get(name) ?? 'alice';
  const length = await bodyLengthFor(this, name, 'notes', id, owner, octets(size));
  await atomicWrite(this, name, [insertSql('notes', id, owner, 'm'.repeat(length))]);
});

Then('the atomic write fails with error code {string} and reason {string}', function (this: SyncWorld, code: string, reason: string) {
  const last = lastAtomic(this);
  this.assert.equal({ ok: last.ok, errorCode: last.errorCode, reason: last.reason }, { ok: false, errorCode: code, reason }, `the atomic write's answer (${last.error ?? 'no error raised'})`);
});

Then('the atomic write succeeds', function (this: SyncWorld) {
  const last = lastAtomic(this);
  this.assert.equal(last.ok, true, `the atomic write was refused: ${last.errorCode ?? ''} ${last.reason ?? ''} ${last.error ?? ''}`);
});

Then('the atomic write fails', function (this: SyncWorld) {
  const last = lastAtomic(this);
  this.assert.equal(last.ok, false, 'the atomic write with a failing statement succeeded');
});

function insertOf(records: readonly QueueRecord[], row: string): QueueRecord {
  const record = recordNamed(records, `insert of row "${row}"`);
  if (record === undefined) throw new Error(`the client shows no insert of row ${row}: ${describeQueue(records)}`);
  return record;
}

Then(
  'client {string} shows the inserts of rows {string} and {string} with one and the same group ID, a lowercase canonical UUID',
  async function (this: SyncWorld, name: string, a: string, b: string) {
    const records = await queueOf(this, name);
    const [first, second] = [insertOf(records, a), insertOf(records, b)];
    this.assert.ok(typeof first.groupId === 'string' && UUID.test(first.groupId), `group ID of the insert of ${a}: ${first.groupId}`);
    this.assert.equal(second.groupId, first.groupId, `group IDs of the inserts of ${a} and ${b}`);
    const others = records.filter((r) => r.groupId === first.groupId && r.recordId !== a && r.recordId !== b);
    this.assert.equal(others.map((r) => r.recordId), [], `records outside the group carrying its ID ${first.groupId}`);
  },
);

Then('client {string} shows the insert of row {string} with no group ID', async function (this: SyncWorld, name: string, row: string) {
  const record = insertOf(await queueOf(this, name), row);
  this.assert.ok(record.groupId === null || record.groupId === undefined, `group ID of the insert of ${row}: ${record.groupId}`);
});

Then('client {string} shows the insert of row {string} with a group ID different from that of row {string}', async function (this: SyncWorld, name: string, row: string, other: string) {
  const records = await queueOf(this, name);
  const [mine, theirs] = [insertOf(records, row), insertOf(records, other)];
  this.assert.ok(typeof mine.groupId === 'string' && UUID.test(mine.groupId), `group ID of the insert of ${row}: ${mine.groupId}`);
  this.assert.notEqual(mine.groupId, theirs.groupId, `group IDs of the inserts of ${row} and ${other}`);
});

Then('client {string} shows {int} records sharing one group ID', async function (this: SyncWorld, name: string, count: number) {
  const captured = lastAtomic(this).captured;
  const groups = new Set(captured.map((r) => r.groupId));
  this.assert.equal(captured.length, count, `records the atomic write captured on client "${name}"`);
  this.assert.ok(groups.size === 1 && typeof [...groups][0] === 'string', `group IDs of those records: ${[...groups].join(', ')}`);
});

/** The request's "atomic" member as sent (undefined when absent). */
const atomicOf = (push: SentPush) => (JSON.parse(push.bytes.toString('utf8')) as Obj).atomic;

/** The row keys a push request carries, in its order. */
const rowsOf = (push: SentPush) => push.mutations.map((m) => String(keyValue(m.pk)));

Then('the proxy recorded these push requests from client {string}, in this order:', async function (this: SyncWorld, name: string, table: DataTable) {
  const pushes = await pushesOf(this, name);
  const seen = pushes.map((p) => ({ rows: rowsOf(p).join(', '), atomic: atomicOf(p) ?? 'absent' }));
  const expected = table.hashes().map((r) => ({ rows: r.rows as string, atomic: r.atomic === 'true' ? true : (r.atomic as string) }));
  this.assert.equal(seen, expected, `push requests of client "${name}"`);
});

/** The members of the scenario's last atomic write, as client `name` shows them now. */
async function lastGroup(world: SyncWorld, name: string): Promise<QueueRecord[]> {
  const groupId = lastAtomic(world).captured.find((r) => typeof r.groupId === 'string')?.groupId;
  if (groupId === undefined) throw new Error('the last atomic write captured no group member');
  return (await queueOf(world, name)).filter((r) => r.groupId === groupId);
}

Then('client {string} shows both group members with status {string}', async function (this: SyncWorld, name: string, status: string) {
  const members = await lastGroup(this, name);
  this.assert.equal(members.length, 2, `group members client "${name}" shows: ${describeQueue(members)}`);
  this.assert.equal(members.map((m) => m.status), [status, status], `statuses of the group members (${describeQueue(members)})`);
});

Then('the statuses of both group members changed in the same local transaction', async function (this: SyncWorld) {
  const name = [...this.clientUsers.keys()].find((n) => this.isProcess(n)) ?? 'A';
  const members = await lastGroup(this, name);
  if (members.some((m) => !Object.hasOwn(m, 'statusTransaction'))) return undeterminedWithout(this, 'the client adapter reports no statusTransaction in inspectMutations');
  const txns = members.map((m) => (m as QueueRecord & { statusTransaction?: string | null }).statusTransaction);
  this.assert.ok(txns.every((t) => typeof t === 'string' && t !== ''), `status transactions of the group members: ${JSON.stringify(txns)}`);
  this.assert.equal(new Set(txns).size, 1, `the group members' statuses were set by different local transactions: ${JSON.stringify(txns)}`);
});

Then('the proxy recorded no push request carrying either group member', async function (this: SyncWorld) {
  const name = [...this.clientUsers.keys()].find((n) => this.isProcess(n)) ?? 'A';
  const ids = new Set((await lastGroup(this, name)).map((m) => m.id));
  const carrying = (await pushesOf(this, name)).filter((p) => p.mutations.some((m) => ids.has(String(m.mutation_id))));
  this.assert.equal(carrying.map((p) => p.batchId), [], 'push requests carrying a group member');
});

// ---------------------------------------------------------------- generated workloads

interface RoundPlan {
  atomic: boolean;
  ops: { op: 'insert' | 'update' | 'delete'; row: number }[];
  sync: boolean;
  batchSize: number | null;
}

const ROUND = fc.record({
  atomic: fc.boolean(),
  ops: fc.array(fc.record({ op: fc.constantFrom('insert' as const, 'update' as const, 'delete' as const), row: fc.integer({ min: 1, max: 20 }) }), { minLength: 1, maxLength: 5 }),
  sync: fc.boolean(),
  batchSize: fc.option(fc.integer({ min: 1, max: 5 }), { freq: 5 }),
});

/**
 * Two fixed rounds before the drawn ones: an unsent ungrouped write right
 * before a group, the one queue shape in which a client could seal both into
 * one mixed batch. Random draws usually produce it, but a check must not
 * depend on luck to be able to fail.
 */
const OPENING: readonly RoundPlan[] = [
  { atomic: false, ops: [{ op: 'update', row: 1 }], sync: false, batchSize: null },
  { atomic: true, ops: [{ op: 'insert', row: 2 }, { op: 'insert', row: 3 }], sync: false, batchSize: null },
];

interface FailedAtomic {
  round: number;
  recordsBefore: number;
  recordsAfter: number;
  rowsBefore: string;
  rowsAfter: string;
}

const workloads = new WeakMap<SyncWorld, { seed: number; name: string; failed: FailedAtomic[]; atomicWrites: number }>();

function workload(world: SyncWorld) {
  const w = workloads.get(world);
  if (w === undefined) throw new Error('no generated workload ran in this scenario');
  return w;
}

function statementOf(op: RoundPlan['ops'][number], round: number, k: number, owner: string): string {
  const id = `n-${op.row}`;
  if (op.op === 'insert') return insertSql('notes', id, owner, `r${round}.${k}`);
  if (op.op === 'update') return `UPDATE notes SET body = 'r${round}.${k}' WHERE id = '${id}'`;
  return `DELETE FROM notes WHERE id = '${id}'`;
}

When(
  /^the harness runs (\d+) generated rounds through client "([^"]+)" mixing plain writes and atomic writes of 1 to 5 statements on rows "n-1" to "n-20", with push batch sizes from 1 to 5 and random syncs$/,
  async function (this: SyncWorld, count: string, name: string) {
    const seed = generatedSeed();
    const [drawn] = fc.sample(fc.array(ROUND, { minLength: Number(count), maxLength: Number(count) }), { seed, numRuns: 1 }) as RoundPlan[][];
    const plan = [...OPENING, ...(drawn ?? [])];
    const state = { seed, name, failed: [] as FailedAtomic[], atomicWrites: 0 };
    workloads.set(this, state);
    this.attach(`generated workload seed ${seed}`, 'text/plain');
    const client = await this.process(name);
    const owner = this.clientUsers.get(name) ?? 'alice';
    const rowsNow = async () => JSON.stringify((await client.call<{ rows: unknown[] }>('query', { sql: 'SELECT id, body FROM notes ORDER BY id' })).rows);
    for (const [round, step] of plan.entries()) {
      if (step.batchSize !== null) await reopen(this, name, step.batchSize);
      const statements = step.ops.map((op, k) => statementOf(op, round, k, owner));
      if (step.atomic) {
        state.atomicWrites += 1;
        const [recordsBefore, rowsBefore] = [(await queueOf(this, name)).length, await rowsNow()];
        const outcome = await atomicWrite(this, name, statements);
        if (!outcome.ok) state.failed.push({ round, recordsBefore, recordsAfter: (await queueOf(this, name)).length, rowsBefore, rowsAfter: await rowsNow() });
      } else {
        // A plain write that breaks a local constraint (an insert of a row that exists) is the application's error, not the client's.
        for (const sql of statements) await client.call('execute', { sql }).catch(() => undefined);
      }
      if (step.sync) await this.syncProcess(name);
    }
    await this.syncProcess(name);
  },
);

/** Every record client `name` ever showed, by ID, as last seen. */
async function groupsOf(world: SyncWorld, name: string): Promise<{ groupOf: Map<string, string | null>; members: Map<string, Set<string>>; records: QueueRecord[] }> {
  const records = await queueOf(world, name);
  const groupOf = new Map(records.map((r) => [r.id, r.groupId ?? null]));
  const members = new Map<string, Set<string>>();
  for (const r of records) {
    // A member folded into another record of its group before sealing is never sent itself.
    if (typeof r.groupId !== 'string' || r.status === 'superseded_before_send' || r.status === 'cancelled_before_send') continue;
    members.set(r.groupId, (members.get(r.groupId) ?? new Set()).add(r.id));
  }
  return { groupOf, members, records };
}

Then(
  'every push request the proxy recorded from client {string} with "atomic": true carries exactly all members of one group and nothing else',
  async function (this: SyncWorld, name: string) {
    const { seed } = workload(this);
    const { groupOf, members, records } = await groupsOf(this, name);
    const atomicPushes = (await pushesOf(this, name)).filter((p) => atomicOf(p) === true);
    this.assert.ok(workload(this).atomicWrites === 0 || atomicOutcomes(this).every((o) => !o.ok || o.captured.length === 0) || atomicPushes.length > 0, `no atomic push was recorded although groups committed (seed ${seed})`);
    for (const push of atomicPushes) {
      const ids = push.mutations.map((m) => String(m.mutation_id));
      const groups = new Set(ids.map((id) => groupOf.get(id) ?? null));
      this.assert.ok(groups.size === 1 && typeof [...groups][0] === 'string', `atomic push ${push.batchId} carries mutations of groups ${JSON.stringify([...groups])} (seed ${seed})`);
      const group = [...groups][0] as string;
      const shown = records.filter((r) => r.groupId === group).map((r) => ({ id: r.id, status: r.status, op: r.op, record: r.recordId, batch: r.batchId, links: r.links }));
      this.assert.equal([...ids].sort(), [...(members.get(group) ?? [])].sort(), `atomic push ${push.batchId} against the members of group ${group} (seed ${seed}); the client shows them as ${JSON.stringify(shown)}`);
    }
  },
);

Then('every push request the proxy recorded from client {string} without "atomic" carries no mutation that has a group ID', async function (this: SyncWorld, name: string) {
  const { seed } = workload(this);
  const { groupOf } = await groupsOf(this, name);
  const plain = (await pushesOf(this, name)).filter((p) => atomicOf(p) === undefined);
  this.assert.ok(plain.length > 0, `no plain push was recorded (seed ${seed})`);
  for (const push of plain) {
    const grouped = push.mutations.filter((m) => typeof groupOf.get(String(m.mutation_id)) === 'string');
    this.assert.equal(grouped.map((m) => m.mutation_id), [], `grouped mutations in plain push ${push.batchId} (seed ${seed})`);
  }
});

Then("no group's members were split across push requests", async function (this: SyncWorld) {
  const { seed, name } = workload(this);
  const { groupOf } = await groupsOf(this, name);
  const pushesByGroup = new Map<string, Set<string>>();
  for (const push of await pushesOf(this, name)) {
    for (const m of push.mutations) {
      const group = groupOf.get(String(m.mutation_id));
      if (typeof group === 'string') pushesByGroup.set(group, (pushesByGroup.get(group) ?? new Set()).add(push.batchId));
    }
  }
  const split = [...pushesByGroup].filter(([, batches]) => batches.size > 1);
  this.assert.ok(pushesByGroup.size > 0, `no group was sent at all (seed ${seed})`);
  this.assert.equal(split.map(([g]) => g), [], `groups sent in more than one batch (seed ${seed})`);
});

Then('every atomic write that failed left no record and no row behind', function (this: SyncWorld) {
  const { seed, failed } = workload(this);
  this.assert.ok(failed.length > 0, `no generated atomic write failed, so nothing was checked (seed ${seed})`);
  for (const f of failed) {
    this.assert.equal({ records: f.recordsAfter, rows: f.rowsAfter }, { records: f.recordsBefore, rows: f.rowsBefore }, `what the failed atomic write of round ${f.round} left behind (seed ${seed})`);
  }
});
