/**
 * SYNC-MUT-023 Pre Wire Mutation Dependency Resolution
 * (features/mutation-and-data-correctness/pre-wire-mutation-dependency-resolution.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import type { Exchange } from '../../harness/proxy/records.ts';
import { processPhrase } from '../support/client-mode.ts';
import { bodyOf, deliveredOf, exchangesOf } from '../support/exchanges.ts';
import { namedColumns, pushesOf, rowMatcher } from '../support/mutations/pushes.ts';
import { describeQueue, firstSeen, ofRow, queueOf, written } from '../support/mutations/queue.ts';
import type { QueueRecord } from '../support/mutations/state.ts';
import { runApplicationSql } from '../support/mutations/writes.ts';
import { writerPush } from '../support/mutations/writers.ts';
import { servedRow } from '../support/server-rows.ts';
import { awaitCapture } from '../support/source-schema.ts';
import { labelledVersion } from '../support/version-labels.ts';
import { keyValue, type Obj } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';
import { generatedSeed } from '../support/generated-seed.ts';

// The generated run drives the client as an application would.
processPhrase(/^the harness runs \d+ generated rounds .* through client "([^"]+)"/);

function clientOf(world: SyncWorld): string {
  return world.syncWindows.at(-1)?.client ?? 'A';
}

/** `owner_id "alice", body "b", price "2"` as column checks. */
function fieldsOf(text: string): [string, string][] {
  return [...text.matchAll(/(\w+) "([^"]*)"/g)].map((m) => [m[1] as string, m[2] as string]);
}

Then(/^the proxy recorded, for row "([^"]+)", exactly one (insert|update|delete) with (.+)$/, async function (this: SyncWorld, row: string, op: string, spec: string) {
  const name = clientOf(this);
  const matches = await rowMatcher(this, 'notes', row);
  const sent = [...new Map((await pushesOf(this, name)).flatMap((p) => p.mutations.filter(matches)).map((m) => [String(m.mutation_id), m])).values()];
  this.assert.equal(sent.map((m) => m.op), [op], `mutations of row ${row} client "${name}" sent`);
  const mutation = sent[0] as Obj;
  const originals = written(ofRow(await queueOf(this, name), row));
  if (/a new mutation_id/.test(spec)) {
    this.assert.ok(!originals.some((r) => r.id === mutation.mutation_id), `the ${op} of ${row} went out under the ID of an original record`);
  }
  const own = /the (insert|update|delete)'s own mutation_id/.exec(spec)?.[1];
  if (own !== undefined) this.assert.equal(mutation.mutation_id, originals.find((r) => r.op === own)?.id, `mutation ID of the ${op} of ${row}: the ${own}'s own`);
  const base = /base_version "([^"]+)"/.exec(spec)?.[1];
  if (/no base_version/.test(spec)) this.assert.ok(!Object.hasOwn(mutation, 'base_version'), `the ${op} of ${row} carries base_version ${String(mutation.base_version)}`);
  if (base !== undefined) this.assert.equal(mutation.base_version, labelledVersion(this, base), `base_version of the ${op} of ${row} (${base})`);
  if (/no columns/.test(spec)) this.assert.ok(!Object.hasOwn(mutation, 'columns'), `the ${op} of ${row} carries columns`);
  const columns = /columns (.+)$/.exec(spec)?.[1];
  if (columns !== undefined && !/no columns/.test(spec)) {
    const named = await namedColumns(this, 'notes', mutation);
    const actual = Object.fromEntries(Object.entries(named).filter(([, v]) => v !== null).map(([c, v]) => [c, String(v)]));
    this.assert.equal(actual, Object.fromEntries(fieldsOf(columns)), `columns of the ${op} of ${row}`);
  }
});

Then(/^client "([^"]+)" shows the original records of row "([^"]+)" with statuses ([a-z_, ]+)$/, async function (this: SyncWorld, name: string, row: string, list: string) {
  const records = written(ofRow(await queueOf(this, name), row));
  this.assert.equal(
    records.map((r) => r.status),
    list.split(',').map((s) => s.trim()),
    `statuses of the records client "${name}" captured for ${row} (${describeQueue(records)})`,
  );
});

/** The update of `row` that wrote `column`, among the records the client captured. */
function updateWriting(records: readonly QueueRecord[], row: string, column: string): QueueRecord | undefined {
  return written(ofRow(records, row)).find((r) => r.op === 'update' && Object.hasOwn(r.columns ?? {}, column));
}

Then(/^client "([^"]+)" shows the price update with (?:no base version|status "([a-z_]+)") and a dependsOnMutationID naming the body update$/, async function (this: SyncWorld, name: string, status: string | undefined) {
  const records = await queueOf(this, name);
  const price = updateWriting(records, 'n-1', 'price');
  const body = updateWriting(records, 'n-1', 'body');
  this.assert.ok(price !== undefined && body !== undefined, `client "${name}" shows no price and body updates of n-1: ${describeQueue(records)}`);
  if (status) this.assert.equal(price.status, status, 'status of the price update');
  if (!status) this.assert.equal(price.baseVersion ?? null, null, 'base version of the price update');
  this.assert.equal(price.links?.dependsOnMutationId, body.id, 'dependsOnMutationID of the price update');
});

Then('the second push request of client {string} carries the price update with the mutation_id it was captured with and base_version equal to the server_version returned for the body update', async function (this: SyncWorld, name: string) {
  const records = await queueOf(this, name);
  const price = updateWriting(records, 'n-1', 'price');
  const body = updateWriting(records, 'n-1', 'body');
  this.assert.ok(price !== undefined && body !== undefined, `client "${name}" shows no price and body updates of n-1`);
  const pushes = await pushesOf(this, name);
  const bodyOutcome = pushes.flatMap((p) => (p.answerBody?.accepted ?? []) as Obj[]).find((o) => o.mutation_id === body.id);
  this.assert.ok(bodyOutcome !== undefined, 'no push answer accepted the body update');
  const batches = [...new Set(pushes.map((p) => p.batchId))];
  const second = pushes.find((p) => p.batchId === batches[1]);
  this.assert.ok(second !== undefined, `client "${name}" sent one batch only`);
  this.assert.equal(
    second.mutations.map((m) => ({ id: m.mutation_id, base: m.base_version })),
    [{ id: price.id, base: bodyOutcome.server_version }],
    'the second push request',
  );
});

Then('the proxy recorded no push request carrying the price update', async function (this: SyncWorld) {
  const name = clientOf(this);
  const price = updateWriting(await queueOf(this, name), 'n-1', 'price');
  this.assert.ok(price !== undefined, `client "${name}" shows no price update`);
  const carrying = (await pushesOf(this, name)).filter((p) => p.mutations.some((m) => m.mutation_id === price.id));
  this.assert.equal(carrying.length, 0, `push requests carrying the price update ${price.id}`);
});

Then(
  /^client "([^"]+)" shows both original records of row "([^"]+)" with status "([a-z_]+)", their own mutation IDs and authored fields, and a normalizedMutationID equal to the mutation_id of the insert the proxy recorded$/,
  async function (this: SyncWorld, name: string, row: string, status: string) {
    const records = written(ofRow(await queueOf(this, name), row));
    this.assert.equal(records.map((r) => r.status), [status, status], `records of ${row} (${describeQueue(records)})`);
    const matches = await rowMatcher(this, 'notes', row);
    const inserts = [...new Set((await pushesOf(this, name)).flatMap((p) => p.mutations.filter((m) => matches(m) && m.op === 'insert')).map((m) => String(m.mutation_id)))];
    this.assert.equal(inserts.length, 1, `inserts of ${row} on the wire`);
    for (const [k, record] of records.entries()) {
      const phrase = `the ${record.op} of row "${row}"`;
      const before = firstSeen(this, name, phrase);
      this.assert.equal({ id: record.id, columns: record.columns }, { id: before?.id, columns: before?.columns }, `original record ${k + 1} of ${row} against what was captured`);
      this.assert.equal(record.links?.normalizedMutationId, inserts[0], `normalizedMutationID of the original ${record.op} of ${row}`);
    }
  },
);

Then('client {string} shows the record with that normalized mutation ID with status {string}', async function (this: SyncWorld, name: string, status: string) {
  const records = await queueOf(this, name);
  const normalized = [...new Set(written(records).map((r) => r.links?.normalizedMutationId).filter((id): id is string => typeof id === 'string'))];
  this.assert.equal(normalized.length, 1, `normalized mutation IDs the originals name: ${normalized.join(', ')}`);
  this.assert.equal(records.find((r) => r.id === normalized[0])?.status, status, `status of the normalized record ${normalized[0]}`);
});

Then(/^the proxy recorded no mutation of row "([^"]+)" from client "([^"]+)"$/, async function (this: SyncWorld, row: string, name: string) {
  const matches = await rowMatcher(this, 'notes', row);
  const pushes = await pushesOf(this, name);
  this.assert.ok(pushes.length > 0 || (await exchangesOf(this, name)).length > 0, `client "${name}" made no request at all`);
  this.assert.equal(pushes.flatMap((p) => p.mutations.filter(matches)).map((m) => `${String(m.op)} ${String(m.mutation_id)}`), [], `mutations of ${row} client "${name}" sent`);
});

Then(/^client "([^"]+)" shows the three records of row "([^"]+)" with status "([a-z_]+)"$/, async function (this: SyncWorld, name: string, row: string, status: string) {
  const records = written(ofRow(await queueOf(this, name), row));
  this.assert.equal(records.map((r) => r.status), [status, status, status], `records of ${row} (${describeQueue(records)})`);
});

// --- the generated write sequences -------------------------------------------------------------

type Act = { kind: 'insert' | 'update' | 'delete'; row: string; text: string };
type Round = { acts: Act[]; next: 'sync' | 'held' | 'conflict'; during: Act };

const ROWS = ['n-1', 'n-2', 'n-3', 'n-4'];
const text = fc.stringMatching(/^[a-z]{1,6}$/);
const write = fc.record({ kind: fc.constantFrom<Act['kind']>('insert', 'update', 'update', 'update'), row: fc.constantFrom(...ROWS), text });
/**
 * A write after an unsent delete of the same row is blocked for good (and so
 * is every later write of that row), so a round deletes at most once, as its
 * last action: the rows stay writable and most rounds have something to send.
 */
const round = fc
  .record({
    writes: fc.array(write, { minLength: 1, maxLength: 11 }),
    deletes: fc.oneof({ arbitrary: fc.constant(null), weight: 6 }, { arbitrary: fc.constantFrom(...ROWS), weight: 1 }),
    next: fc.constantFrom<Round['next']>('sync', 'sync', 'held', 'conflict'),
    during: fc.record({ kind: fc.constant<Act['kind']>('update'), row: fc.constantFrom(...ROWS), text }),
  })
  .map(({ writes, deletes, next, during }): Round => ({ acts: deletes === null ? writes : [...writes, { kind: 'delete', row: deletes, text: '' }], next, during }));

function sqlOf(a: Act): string {
  if (a.kind === 'insert') return `INSERT INTO notes (id, owner_id, body) SELECT '${a.row}', 'alice', '${a.text}' WHERE NOT EXISTS (SELECT 1 FROM notes WHERE id = '${a.row}')`;
  if (a.kind === 'update') return `UPDATE notes SET body = '${a.text}' WHERE id = '${a.row}'`;
  return `DELETE FROM notes WHERE id = '${a.row}'`;
}

/** Seeds of the generated runs, by scenario, for the failure message of the checks. */
const seeds = new WeakMap<SyncWorld, number>();

/** Client "W" updates `row` from the version the server now serves to the scenario's user, when it serves the row. */
async function conflictingUpdate(world: SyncWorld, row: string, text: string): Promise<void> {
  await awaitCapture(world);
  const served = await servedRow(world, 'notes', row, world.userOf('W'));
  if (served === undefined) return;
  // A conflict the server refuses (the row moved on again meanwhile) is no harm to the property.
  await writerPush(world, 'W', { op: 'update', table: 'notes', row, base: served.serverVersion, columns: { body: `w-${text}` } }).catch(() => undefined);
}

/**
 * A sync whose push answer the proxy holds while the application writes
 * `during`; when the sync has nothing to push, it just runs, and the hold is
 * withdrawn so it cannot catch a later push.
 */
async function heldRound(world: SyncWorld, name: string, during: Act): Promise<void> {
  const client = await world.process(name);
  const proxy = await world.proxy();
  let armed = true;
  proxy.inject({ endpoint: 'push', when: (request) => armed && (request as { client_id?: unknown } | undefined)?.client_id === client.clientId, fault: { kind: 'pause' } });
  const window = await world.openSyncWindow(name, 'syncs');
  const running = world.syncProcess(name).then(async (result) => {
    await world.closeSyncWindow(window);
    return result;
  });
  const engaged = proxy.whenHeld(world.deadlineMs).then(() => true);
  engaged.catch(() => undefined);
  const held = await Promise.race([engaged, running.then(() => false)]);
  armed = false;
  if (held) {
    await runApplicationSql(world, name, sqlOf(during));
    proxy.release();
  }
  await running;
}

When(
  /^the harness runs (\d+) generated rounds of 1 to 12 local inserts, updates and deletes on rows "n-1" to "n-4" through client "([^"]+)", with syncs, held push responses and conflicting updates from client "W" interleaved at random$/,
  async function (this: SyncWorld, count: string, name: string) {
    const seed = generatedSeed();
    seeds.set(this, seed);
    const rounds = fc.sample(round, { numRuns: Number(count), seed });
    // The drawn sequence is attached, so a failing run can be read and replayed with its seed.
    this.attach(JSON.stringify({ seed, rounds }), 'application/json');
    for (const r of rounds) {
      for (const a of r.acts) await runApplicationSql(this, name, sqlOf(a));
      if (r.next === 'conflict') {
        await conflictingUpdate(this, r.during.row, r.during.text);
        await this.inSyncWindow(name, 'syncs', () => this.syncProcess(name));
      } else if (r.next === 'held') {
        // An update of a row the round wrote (not deleted), made while the round's push is sealed and unanswered: it must wait for that outcome.
        const deleted = r.acts.find((a) => a.kind === 'delete')?.row;
        const target = [...r.acts].reverse().find((a) => a.kind !== 'delete' && a.row !== deleted)?.row ?? r.during.row;
        await heldRound(this, name, { ...r.during, row: target });
      } else {
        await this.inSyncWindow(name, 'syncs', () => this.syncProcess(name));
      }
    }
    await this.inSyncWindow(name, 'syncs', () => this.syncProcess(name));
  },
);

const rowKey = (m: Obj) => `${String(m.table)}/${String(keyValue(m.pk))}`;

/** Versions the server gave client `name`, per row, each with the log position it was delivered at. */
function issuedVersions(log: readonly Exchange[]): Map<string, { version: string; seq: number }[]> {
  const issued = new Map<string, { version: string; seq: number }[]>();
  const note = (m: Obj, seq: number) => {
    if (typeof m.server_version === 'string') issued.set(rowKey(m), [...(issued.get(rowKey(m)) ?? []), { version: m.server_version, seq }]);
  };
  for (const e of log) {
    const answer = deliveredOf(e);
    if (answer?.status !== 200) continue;
    const body = bodyOf(answer.body) as Obj | undefined;
    if (e.endpoint === 'push') for (const o of [...((body?.accepted ?? []) as Obj[]), ...((body?.rejected ?? []) as Obj[])]) note(o, e.seq);
    if (e.endpoint === 'pull') for (const c of (body?.changes ?? []) as Obj[]) note(c, e.seq);
    if (e.endpoint === 'rebuild') for (const r of (body?.records ?? []) as Obj[]) note(r, e.seq);
  }
  return issued;
}

Then(
  /^every update or delete the proxy recorded from client "([^"]+)" has a base_version that the server earlier returned for that same row in a push outcome, pull change or rebuild record delivered to client "([^"]+)"$/,
  async function (this: SyncWorld, name: string, _same: string) {
    const log = await exchangesOf(this, name, { endpoints: ['push', 'pull', 'rebuild'] });
    const issued = issuedVersions(log);
    const checked: string[] = [];
    const fabricated: string[] = [];
    for (const e of log.filter((x) => x.endpoint === 'push')) {
      for (const m of ((bodyOf(e.requestBody) as Obj | undefined)?.mutations ?? []) as Obj[]) {
        if (m.op === 'insert') continue;
        checked.push(String(m.mutation_id));
        const known = (issued.get(rowKey(m)) ?? []).some((v) => v.version === m.base_version && v.seq < e.seq);
        if (!known) fabricated.push(`${String(m.op)} ${rowKey(m)} base ${String(m.base_version)} (push #${e.seq})`);
      }
    }
    this.assert.ok(checked.length > 0, `client "${name}" sent no update or delete (seed ${seeds.get(this)})`);
    this.assert.equal(fabricated, [], `base versions the server never gave client "${name}" for that row (seed ${seeds.get(this)})`);
  },
);

Then('no update or delete of client {string} was sent while an earlier mutation of the same row was sealed without an outcome', async function (this: SyncWorld, name: string) {
  const pushes = await exchangesOf(this, name, { endpoints: ['push'] });
  const answeredAt = new Map<string, number>();
  for (const e of pushes) {
    const batch = String((bodyOf(e.requestBody) as Obj | undefined)?.batch_id);
    if (deliveredOf(e)?.status === 200 && !answeredAt.has(batch)) answeredAt.set(batch, e.seq);
  }
  const early: string[] = [];
  for (const [k, e] of pushes.entries()) {
    const request = bodyOf(e.requestBody) as Obj;
    for (const m of ((request.mutations ?? []) as Obj[]).filter((x) => x.op !== 'insert')) {
      for (const earlier of pushes.slice(0, k)) {
        const prior = bodyOf(earlier.requestBody) as Obj;
        if (prior.batch_id === request.batch_id) continue;
        const open = (answeredAt.get(String(prior.batch_id)) ?? Number.POSITIVE_INFINITY) > e.seq;
        if (open && ((prior.mutations ?? []) as Obj[]).some((p) => rowKey(p) === rowKey(m))) early.push(`${String(m.op)} ${rowKey(m)} in push #${e.seq} while batch ${String(prior.batch_id)} was unanswered`);
      }
    }
  }
  this.assert.ok(pushes.length > 0, `client "${name}" sent no push (seed ${seeds.get(this)})`);
  this.assert.equal(early, [], `mutations sent ahead of their predecessor's outcome (seed ${seeds.get(this)})`);
});
