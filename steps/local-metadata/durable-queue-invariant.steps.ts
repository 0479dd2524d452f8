/**
 * Steps of SYNC-LOCAL-001 Durable Queue Invariant: what the client under test
 * keeps of its queue (identities, authored content, order, sealed batches)
 * across a SIGKILL at the points where loss is most likely, compared with
 * what it showed before the kill and with what the proxy saw on the wire.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { heldPush, holdNextPush } from '../support/local-queue/held-push.ts';
import { durablePart, recordedQueue, recordQueue } from '../support/local-queue/recorded.ts';
import { pushesOf, serverOutcomes } from '../support/mutations/pushes.ts';
import { describeQueue, queueOf } from '../support/mutations/queue.ts';
import { queueState } from '../support/mutations/state.ts';
import { scopesState } from '../support/scopes/state.ts';
import { servedRow } from '../support/server-rows.ts';
import { keyValue, type Obj, tableNamed } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^the harness kills client "([^"]+)"(?: while the proxy holds that request)?$/);
processPhrase(/^the harness has recorded the mutations client "([^"]+)" inspects/);
processPhrase(/^the proxy holds the next "push" request of client "([^"]+)" without forwarding it$/);
processPhrase(/^client "([^"]+)" has row "[^"]+" of "[^"]+" with "[^"]+" "[^"]*"$/);

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CLIENT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

Then('client {string} has row {string} of {string} with {string} {string}', async function (this: SyncWorld, name: string, id: string, table: string, column: string, value: string) {
  const key = this.model.keyColumn(table);
  const { rows } = await (await this.process(name)).call<{ rows: Record<string, unknown>[] }>('query', { sql: `SELECT "${column}" AS v FROM "${table}" WHERE CAST("${key.name}" AS TEXT) = ?`, params: [id] });
  this.assert.equal(
    rows.map((r) => r.v),
    [value],
    `${column} of row ${id} of ${table} on client "${name}"`,
  );
});

Then(
  /^client "([^"]+)" inspection shows exactly one mutation, an "(insert|update|delete)" of "([^"]+)" with status "([a-z_]+)", authored fields ((?:"[^"]+"(?:, | and )?)+), a canonical lowercase UUID "mutationID" and a "clientVersion" in the form "YYYY-MM-DDTHH:MM:SS\.ffffffZ"$/,
  async function (this: SyncWorld, name: string, op: string, row: string, status: string, fieldList: string) {
    const records = await queueOf(this, name);
    this.assert.equal(
      records.map((r) => ({ op: r.op, row: r.recordId, status: r.status })),
      [{ op, row, status }],
      `the mutations client "${name}" shows (${describeQueue(records)})`,
    );
    const record = records[0];
    if (record === undefined) return;
    const fields = [...fieldList.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
    // The key is kept as the record's identity (recordId), the other authored fields as its columns.
    const key = this.model.keyColumn(record.table);
    const authored = [...Object.keys(record.columns ?? {}), ...(record.recordId === row ? [key.name] : [])];
    this.assert.equal([...new Set(authored)].sort(), [...fields].sort(), `authored fields of the ${op} of ${row}`);
    // The authored values are the ones the row holds: the queue recorded what the application wrote.
    const { rows } = await (await this.process(name)).call<{ rows: Record<string, unknown>[] }>('query', { sql: `SELECT * FROM "${record.table}" WHERE CAST("${key.name}" AS TEXT) = ?`, params: [row] });
    const local = rows[0] ?? {};
    for (const field of fields) {
      if (field !== key.name && typeof local[field] === 'string') this.assert.equal(record.columns?.[field], local[field], `authored ${field} of the ${op} of ${row} against the row`);
    }
    this.assert.match(record.id, CANONICAL_UUID, `mutation ID of the ${op} of ${row}`);
    this.assert.match(String(record.clientVersion), CLIENT_TIME, `clientVersion of the ${op} of ${row}`);
  },
);

Given('the proxy holds the next "push" request of client {string} without forwarding it', async function (this: SyncWorld, name: string) {
  await holdNextPush(this, name);
});

When('the harness kills client {string} while the proxy holds that request', async function (this: SyncWorld, name: string) {
  const hold = heldPush(this);
  if (hold.client !== name) throw new Error(`the proxy holds a push of client "${hold.client}", not of "${name}"`);
  await hold.arrived;
  const client = await this.process(name);
  // SIGKILL while the request is on the wire: the client comes back from what was durable when it sent it.
  await client.process.kill();
  const running = scopesState(this).started.get(name);
  scopesState(this).started.delete(name);
  await running;
});

When('the proxy drops the held request', async function (this: SyncWorld) {
  heldPush(this).drop();
});

When('the harness kills client {string}', async function (this: SyncWorld, name: string) {
  await (await this.process(name)).process.kill();
});

Then('the next push of client {string} is byte-identical to the held request', async function (this: SyncWorld, name: string) {
  const heldBytes = await heldPush(this).arrived;
  const mark = queueState(this).restartMarks.get(name);
  if (mark === undefined) throw new Error(`client "${name}" was not restarted in this scenario`);
  const next = (await pushesOf(this, name, mark))[0];
  this.assert.ok(next !== undefined, `client "${name}" sent no push after its restart`);
  this.assert.equal(next.bytes.toString('utf8'), heldBytes.toString('utf8'), `the first push of client "${name}" after its restart against the request held before the kill`);
});

Then('the server applied each of its mutations exactly once', async function (this: SyncWorld) {
  const hold = heldPush(this);
  const request = JSON.parse((await hold.arrived).toString('utf8')) as { mutations?: Obj[] };
  const mutations = request.mutations ?? [];
  this.assert.ok(mutations.length > 0, 'the held request carries mutations');
  const pushes = await pushesOf(this, hold.client);
  const userId = (await this.process(hold.client)).userId;
  for (const mutation of mutations) {
    const id = String(mutation.mutation_id);
    const outcomes = serverOutcomes(pushes, id);
    this.assert.ok(outcomes.length > 0, `the server never answered mutation ${id}`);
    // A replay answers with the stored outcome; a second application would carry another version.
    this.assert.equal([...new Set(outcomes.map((o) => `${o.status} ${o.server_version}`))], [`applied ${outcomes[0]?.server_version}`], `every answer the server gave for mutation ${id}`);
    const table = await tableNamed(this, String(mutation.table));
    const served = await servedRow(this, table.name, String(keyValue(mutation.pk)), userId);
    this.assert.ok(served !== undefined, `the server serves no row ${String(keyValue(mutation.pk))}`);
    if (mutation.op !== 'delete') this.assert.equal(served?.serverVersion, outcomes[0]?.server_version, `the version the server holds for ${String(keyValue(mutation.pk))}`);
  }
  const carried = pushes.flatMap((p) => p.mutations.map((m) => String(m.mutation_id)));
  this.assert.equal(
    carried.filter((id) => !mutations.some((m) => String(m.mutation_id) === id)),
    [],
    `mutation IDs client "${hold.client}" sent besides those of the held request`,
  );
});

Given('the harness has recorded the mutations client {string} inspects as {string}', async function (this: SyncWorld, name: string, label: string) {
  const records = await queueOf(this, name);
  if (records.length === 0) throw new Error(`client "${name}" shows no mutation to record`);
  recordQueue(this, label, records);
});

Then(
  /^every mutation recorded as "([^"]+)" is still inspectable with the same "mutationID", "localOrder", "authoredSchema", "baseVersion", "clientVersion" and authored fields, or has reached exactly one outcome$/,
  async function (this: SyncWorld, label: string) {
    const before = recordedQueue(this, label);
    const name = this.syncWindows.at(-1)?.client ?? 'A';
    const now = await queueOf(this, name);
    const pushes = await pushesOf(this, name);
    for (const record of before) {
      const current = now.find((r) => r.id === record.id);
      if (current !== undefined) {
        this.assert.equal(durablePart(current), durablePart(record), `mutation ${record.id} (${record.op} of ${record.recordId}) before the kill and after the restart`);
        continue;
      }
      // Gone from the queue: only an outcome the server gave it, or the normalized mutation that stands for it, allows that.
      const outcomes = serverOutcomes(pushes, record.id);
      this.assert.equal([...new Set(outcomes.map((o) => `${o.status} ${o.server_version}`))].length, 1, `client "${name}" no longer shows mutation ${record.id} (${record.op} of ${record.recordId}), which reached ${outcomes.length} outcomes (${describeQueue(now)})`);
    }
  },
);

Then('client {string} inspection shows no mutation ID that was not recorded as {string} other than normalized mutations linked to them', async function (this: SyncWorld, name: string, label: string) {
  const before = new Set(recordedQueue(this, label).map((r) => r.id));
  const now = await queueOf(this, name);
  const linked = new Set(now.filter((r) => before.has(r.id)).map((r) => r.links?.normalizedMutationId).filter((id): id is string => typeof id === 'string'));
  const unexplained = now.filter((r) => !before.has(r.id) && !(r.sourceKind === 'normalized' && linked.has(r.id)));
  this.assert.equal(unexplained.map((r) => `${r.op} ${r.recordId} ${r.id}`), [], `mutations client "${name}" shows that it did not show before the kill (${describeQueue(now)})`);
});

Then('every push request client {string} sent under an already used {string} is byte-identical to its first sending', async function (this: SyncWorld, name: string, member: string) {
  if (member !== 'batch_id') throw new Error(`a push request is identified by "batch_id", not "${member}"`);
  const pushes = await pushesOf(this, name);
  this.assert.ok(pushes.length > 0, `client "${name}" sent no push`);
  const first = new Map<string, string>();
  for (const push of pushes) {
    const text = push.bytes.toString('utf8');
    const earlier = first.get(push.batchId);
    if (earlier === undefined) first.set(push.batchId, text);
    else this.assert.equal(text, earlier, `a resending of batch ${push.batchId} against its first sending`);
  }
});

Then('the server holds rows {string} and {string} with titles {string} and {string}', async function (this: SyncWorld, first: string, second: string, firstTitle: string, secondTitle: string) {
  const userId = this.clientUsers.get('A') ?? 'alice';
  const rows = [first, second];
  const titles: Record<string, unknown> = {};
  for (const row of rows) titles[row] = (await servedRow(this, 'tasks', row, userId))?.row.title;
  this.assert.equal(titles, { [first]: firstTitle, [second]: secondTitle }, 'titles the server holds');
});

Then(/^the pushed mutations of client "([^"]+)" are the inserts of "([^"]+)", "([^"]+)" and "([^"]+)" in that order$/, async function (this: SyncWorld, name: string, a: string, b: string, c: string) {
  const pushed = (await pushesOf(this, name)).flatMap((p) => p.mutations);
  this.assert.equal(
    pushed.map((m) => `${String(m.op)} ${String(keyValue(m.pk))}`),
    [a, b, c].map((row) => `insert ${row}`),
    `mutations client "${name}" pushed, in wire order`,
  );
  // The identities are those the client showed before the kill, in the order it captured them.
  const seen = [...(queueState(this).seen.get(name)?.values() ?? [])].filter((r) => r.op === 'insert' && [a, b, c].includes(r.recordId ?? ''));
  seen.sort((x, y) => (x.localOrder ?? 0) - (y.localOrder ?? 0));
  this.assert.equal(
    pushed.map((m) => String(m.mutation_id)),
    seen.map((r) => r.id),
    `mutation IDs client "${name}" pushed against those it showed before the kill, in local order`,
  );
});
