/**
 * SYNC-MUT-017 Atomic Version Compare And Swap: byte-exact base_version
 * comparison, concurrent updates and inserts of one identity, a push held at
 * a gate against a direct SQL write, and the row lock mode a push takes
 * first, observed from other connections: a child row's foreign key check
 * (FOR KEY SHARE) that the push waits for or not, and probes of the row lock
 * the push holds while it waits.
 *
 * The gate and the numbered client ranges are defined with SYNC-MUT-018's steps.
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { answeredPushOf, awaitAnswers, lockWaits, onlyOutcome, openGates, raceState, startOne, startPush, waitFor } from '../support/mutations/push-gates.ts';
import { clientRange, type Round, roundsState, runRace, winnerOf } from '../support/mutations/race-rounds.ts';
import { awaitBlockedBy, beginHeld, blockedBy, endHeld, heldTransaction, holdsTransaction, lockWaitOf, probeRowLock } from '../support/mutations/source-sessions.ts';
import { lastPush, ledgerState, type Obj, thatMutation, thatOutcomeOf } from '../support/push-ledger/state.ts';
import { servedRow, servedRows } from '../support/server-rows.ts';
import { labelledVersion, versionLabels } from '../support/version-labels.ts';
import type { Reply } from '../support/reply.ts';
import { cellValue } from '../support/values.ts';
import type { Json, MutationSpec } from '../support/wire-client.ts';
import type { SyncWorld } from '../support/world.ts';
import { generatedSeed } from '../support/generated-seed.ts';

// ---- one-mutation pushes ("that mutation") ----

/** The client that sent "that mutation", whose manifest names the outcome's fields. */
const thatClient = new WeakMap<SyncWorld, string>();

async function pushThat(world: SyncWorld, name: string, spec: MutationSpec): Promise<void> {
  const client = world.wire(name);
  const mutation = client.mutation(spec);
  const sentAt = Date.now();
  await client.post('/sync/push', client.pushBody([mutation]), { endpoint: 'push' });
  ledgerState(world).that = { mutation, heldBefore: undefined, sentAt, answeredAt: Date.now() };
  thatClient.set(world, name);
}

/** The variants of a version that are not it, octet for octet. */
function variantOf(version: string, variant: string): string {
  switch (variant) {
    case 'followed by one space':
      return `${version} `;
    case 'preceded by one space':
      return ` ${version}`;
    case 'without its last octet':
      return version.slice(0, -1);
    case 'with its last octet replaced by another printable octet': {
      const last = version.charCodeAt(version.length - 1);
      return version.slice(0, -1) + String.fromCharCode(last === 0x7e ? 0x21 : last + 1);
    }
    case 'with its letters in the other case': {
      const swapped = [...version].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
      if (swapped === version) throw new Error(`version ${version} has no letters to change the case of`);
      return swapped;
    }
    default:
      throw new Error(`unknown version variant "${variant}"`);
  }
}

When(
  /^client "([^"]+)" pushes a batch with one (update|delete) of row "([^"]+)" of table "([^"]+)" with base_version "([^"]+)" (followed by one space|preceded by one space|without its last octet|with its last octet replaced by another printable octet|with its letters in the other case) of "([^"]+)" and columns (\{.*\})$/,
  async function (this: SyncWorld, name: string, op: 'update' | 'delete', pk: string, table: string, label: string, variant: string, again: string, columns: string) {
    if (label !== again) throw new Error(`the step names two versions, "${label}" and "${again}"`);
    const base = variantOf(labelledVersion(this, label), variant);
    await pushThat(this, name, { op, table, pk: cellValue(this.model.keyColumn(table), pk), base_version: base, ...(op === 'update' ? { columns: JSON.parse(columns) } : {}) });
  },
);

When(/^client "([^"]+)" pushes a batch with one delete of row "([^"]+)" of table "([^"]+)" with base_version "([^"]*)"$/, async function (this: SyncWorld, name: string, pk: string, table: string, base: string) {
  await pushThat(this, name, { op: 'delete', table, pk: cellValue(this.model.keyColumn(table), pk), base_version: versionLabels(this).get(base) ?? base });
});

When(/^client "([^"]+)" pushes a batch with one insert of row "([^"]+)" of table "([^"]+)" with columns (\{.*\})$/, async function (this: SyncWorld, name: string, pk: string, table: string, columns: string) {
  await pushThat(this, name, { op: 'insert', table, pk: cellValue(this.model.keyColumn(table), pk), columns: JSON.parse(columns) });
});

Then(/^that outcome has server_version "([^"]+)" and a server_row with body "([^"]*)"$/, function (this: SyncWorld, label: string, body: string) {
  const outcome = thatOutcomeOf(this);
  const row = this.wire(String(ledgerStateClient(this))).namedRow(String(outcome.table), (outcome.server_row ?? {}) as Record<string, unknown>);
  this.assert.equal({ server_version: outcome.server_version, body: row.body }, { server_version: labelledVersion(this, label), body }, `that outcome: ${JSON.stringify(outcome)}`);
});

Then(/^that outcome has a server_row with body "([^"]*)" and a server_version different from "([^"]+)"$/, function (this: SyncWorld, body: string, label: string) {
  const outcome = thatOutcomeOf(this);
  const row = this.wire(String(ledgerStateClient(this))).namedRow(String(outcome.table), (outcome.server_row ?? {}) as Record<string, unknown>);
  this.assert.equal(row.body, body, `body of that outcome's server_row: ${JSON.stringify(outcome)}`);
  this.assert.ok(typeof outcome.server_version === 'string', `that outcome carries a server_version: ${JSON.stringify(outcome)}`);
  this.assert.notEqual(outcome.server_version, labelledVersion(this, label), `that outcome's server_version is not ${label}`);
});

function ledgerStateClient(world: SyncWorld): string {
  thatMutation(world);
  // Set by this file's pushes; for a push of the shared steps, any harness client knows the same manifest.
  return thatClient.get(world) ?? ([...world.clientUsers.keys()].find((n) => world.hasWire(n)) as string);
}

// ---- concurrent pushes of one identity ----

function noteRound(world: SyncWorld, round: Round): void {
  roundsState(world).rounds.push(round);
  ledgerState(world).group = round.pushes.map((p) => p.reply);
}

Given('the harness holds row {string} of table {string} locked in a source transaction', async function (this: SyncWorld, pk: string, table: string) {
  const key = this.model.keyColumn(table).name;
  await beginHeld(this, `SELECT 1 FROM public.${table} WHERE ${key} = '${pk.replaceAll("'", "''")}' FOR UPDATE`, true);
});

When(
  /^clients "([^"]+)" to "([^"]+)" each push, at the same moment, one update of row "([^"]+)" of table "([^"]+)" with base_version "([^"]+)", each setting body to its own client name$/,
  async function (this: SyncWorld, first: string, last: string, pk: string, table: string, base: string) {
    const ops = clientRange(first, last).map((client) => ({ client, op: 'update' as const }));
    // With the row held by the harness, every push reaches the row (a locking read, or an unlocked read and then its write)
    // before any of them may write: the held transaction is rolled back once all of them wait for a row lock or some answered.
    const lineUp = holdsTransaction(this)
      ? async () => {
          await waitFor(this, `the ${ops.length} pushes did not all wait for the held row`, async () => {
            const waits = await lockWaits(this);
            return (waits.get('transactionid') ?? 0) + (waits.get('tuple') ?? 0) >= ops.length ? true : undefined;
          });
          await endHeld(this, 'ROLLBACK');
        }
      : undefined;
    noteRound(this, await runRace(this, { table, pk, base: labelledVersion(this, base), ops }, undefined, lineUp));
  },
);

When(
  /^clients "([^"]+)" to "([^"]+)" each push, at the same moment, one insert of row "([^"]+)" of table "([^"]+)" with owner_id "([^"]+)", each setting body to its own client name$/,
  async function (this: SyncWorld, first: string, last: string, pk: string, table: string, owner: string) {
    const ops = clientRange(first, last).map((client) => ({ client, op: 'insert' as const }));
    noteRound(this, await runRace(this, { table, pk, base: undefined, ops }, (client) => ({ owner_id: owner, body: client })));
  },
);

function lastRound(world: SyncWorld): Round {
  const round = roundsState(world).rounds.at(-1);
  if (round === undefined) throw new Error('no concurrent pushes ran in this scenario');
  return round;
}

function describe(round: Round): string {
  return JSON.stringify(round.pushes.map((p) => ({ client: p.client, status: p.reply.status, outcome: p.outcome ?? p.reply.text.slice(0, 300) })));
}

Then(/^exactly (\d+) of the (\d+) outcomes is "([^"]+)"$/, function (this: SyncWorld, count: string, total: string, status: string) {
  const round = lastRound(this);
  this.assert.equal(round.pushes.length, Number(total), `pushes of the race: ${describe(round)}`);
  this.assert.equal(round.pushes.filter((p) => p.outcome?.status === status).length, Number(count), `"${status}" outcomes: ${describe(round)}`);
});

Then(
  /^the other (\d+) outcomes are conflicts with code "([^"]+)"( carrying the winner's server_row and server_version)?$/,
  function (this: SyncWorld, count: string, code: string, carrying: string | undefined) {
    const round = lastRound(this);
    const winner = winnerOf(round);
    this.assert.ok(winner, `a winner among ${describe(round)}`);
    const losers = round.pushes.filter((p) => p !== winner);
    this.assert.equal(losers.length, Number(count), `the other outcomes: ${describe(round)}`);
    for (const loser of losers) {
      const o = loser.outcome ?? {};
      const expected: Obj = { status: 'conflict', code };
      const actual: Obj = { status: o.status, code: o.code };
      if (carrying) {
        Object.assign(expected, { server_row: winner.outcome?.server_row, server_version: winner.outcome?.server_version });
        Object.assign(actual, { server_row: o.server_row, server_version: o.server_version });
      }
      this.assert.equal(actual, expected, `client ${loser.client}'s outcome against winner ${winner.client}: ${describe(round)}`);
    }
  },
);

Then('no outcome has code {string}', function (this: SyncWorld, code: string) {
  const round = lastRound(this);
  this.assert.equal(round.pushes.filter((p) => p.outcome?.code === code).map((p) => p.client), [], `outcomes with code ${code}: ${describe(round)}`);
});

Then(/^the server holds row "([^"]+)" of table "([^"]+)" with the winner's body at the winner's server_version$/, async function (this: SyncWorld, pk: string, table: string) {
  const winner = winnerOf(lastRound(this));
  this.assert.ok(winner, 'a winner of the race');
  const served = await servedRow(this, table, pk);
  this.assert.equal({ body: served?.row.body, server_version: served?.serverVersion }, { body: winner.client, server_version: winner.outcome?.server_version }, `row ${pk} as served`);
});

// ---- a push held at the gate against a direct SQL write ----

/** A push the scenario starts: one update, one delete (hard or soft as the table has it), or two updates in order. */
When(
  /^client "([^"]+)" starts pushing (one update|an update|a soft delete) of row "([^"]+)" of table "([^"]+)" with base_version "([^"]+)"(?: and columns (\{.*\}))?$/,
  async function (this: SyncWorld, name: string, op: string, pk: string, table: string, base: string, columns: string | undefined) {
    const isUpdate = op !== 'a soft delete';
    startOne(this, name, { op: isUpdate ? 'update' : 'delete', table, pk: cellValue(this.model.keyColumn(table), pk), base_version: labelledVersion(this, base), ...(isUpdate ? { columns: JSON.parse(columns ?? '{}') } : {}) });
  },
);

When(
  /^client "([^"]+)" starts pushing updates of rows "([^"]+)" then "([^"]+)" from bases "([^"]+)" and "([^"]+)" with body "([^"]*)"$/,
  async function (this: SyncWorld, name: string, first: string, second: string, firstBase: string, secondBase: string, body: string) {
    const client = this.wire(name);
    const key = this.model.keyColumn('notes');
    const mutations = [
      [first, firstBase],
      [second, secondBase],
    ].map(([pk, base]) => client.mutation({ op: 'update', table: 'notes', pk: cellValue(key, pk as string), base_version: labelledVersion(this, base as string), columns: { body } }));
    const before = (await lockWaits(this)).get('advisory') ?? 0;
    const push = startPush(this, name, mutations);
    // Both pushes must hold their first row at the gate before it opens, or there is no crossing to deadlock on.
    await waitFor(this, `the push of client "${name}" did not reach the gate`, async () => {
      if (push.reply !== undefined) throw new Error(`the push of client "${name}" was answered ${push.reply.status} before reaching the gate: ${push.reply.text.slice(0, 400)}`);
      return ((await lockWaits(this)).get('advisory') ?? 0) > before ? true : undefined;
    });
  },
);

When('the harness starts a source transaction that runs {string}', async function (this: SyncWorld, statement: string) {
  const tx = await beginHeld(this, statement, false);
  if (tx === 'skipped') return tx;
});

Then('the source transaction is still waiting for a row lock after {int} seconds', async function (this: SyncWorld, seconds: number) {
  const tx = heldTransaction(this);
  await waitFor(this, 'the source transaction never waited for a lock', async () => (tx.settledAt !== undefined ? false : (await lockWaitOf(this, tx.pid)) !== undefined ? true : undefined));
  // The step names a duration: the transaction must still be waiting when it has passed.
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const wait = await lockWaitOf(this, tx.pid);
  this.assert.ok(tx.settledAt === undefined && wait !== undefined, `the source transaction still waits for a lock after ${seconds} s (settled: ${tx.settledAt !== undefined}, waits for: ${wait})`);
});

Then(/^the push outcome is "([^"]+)"$/, async function (this: SyncWorld, status: string) {
  const push = raceState(this).pushes.at(-1);
  if (push === undefined) throw new Error('no push was started in this scenario');
  const { outcome } = onlyOutcome(this, await answeredPushOf(this, push.client));
  this.assert.equal(outcome.status, status, `the push's outcome: ${JSON.stringify(outcome)}`);
});

Then('the source transaction commits after the push', async function (this: SyncWorld) {
  const tx = heldTransaction(this);
  const push = raceState(this).pushes.at(-1);
  await tx.statement;
  this.assert.equal(tx.error, undefined, `the source statement ran: ${(tx.error as Error | undefined)?.message}`);
  const opened = raceState(this).openedAt;
  this.assert.ok(push?.reply !== undefined && opened !== undefined && tx.settledAt !== undefined && tx.settledAt >= opened, `the source statement ended only after the gate let the push go (ended ${tx.settledAt}, gate opened ${opened})`);
  await endHeld(this, 'COMMIT');
});

Then(
  /^the server serves row "([^"]+)" of table "([^"]+)" with body "([^"]*)" at a server_version different from both "([^"]+)" and the push's server_version$/,
  async function (this: SyncWorld, pk: string, table: string, body: string, label: string) {
    const push = raceState(this).pushes.at(-1);
    const pushed = push?.reply === undefined ? undefined : onlyOutcome(this, push as typeof push & { reply: Reply }).outcome.server_version;
    const served = await servedRow(this, table, pk);
    this.assert.equal(served?.row.body, body, `body of row ${pk} as served: ${JSON.stringify(served)}`);
    this.assert.ok(
      served !== undefined && served.serverVersion !== labelledVersion(this, label) && served.serverVersion !== pushed,
      `row ${pk} is served at ${served?.serverVersion}, neither ${label} nor the push's ${String(pushed)}`,
    );
  },
);

// ---- row lock modes ----

// A declaration, like the table's own: the partitions are created with the table, before it is registered.
Given(
  /^the source relation of "([^"]+)" is range-partitioned by (\w+) into "([^"]+)" for \w+ below '([^']*)' and "([^"]+)" for the rest, with a unique index on (\w+) only in "([^"]+)"$/,
  function (this: SyncWorld, name: string, column: string, low: string, bound: string, high: string, unique: string, indexed: string) {
    const table = this.model.table(name);
    if (table.installed) throw new Error(`table "${name}" was already created; declare its partitions before the first step that needs the server`);
    // PostgreSQL requires a partitioned relation's primary key to contain the partition key.
    if (this.model.keyColumn(name).name !== column) throw new Error(`table "${name}" can only be partitioned by its key column ${this.model.keyColumn(name).name}, not ${column}`);
    if (!table.columns.some((c) => c.name === unique)) throw new Error(`table "${name}" has no column ${unique} to index`);
    if (indexed !== low && indexed !== high) throw new Error(`the unique index on ${unique} must be in "${low}" or "${high}", not "${indexed}"`);
    table.partitions = [
      { name: low, below: bound, uniqueColumns: indexed === low ? [unique] : [] },
      { name: high, uniqueColumns: indexed === high ? [unique] : [] },
    ];
  },
);

Then(/^a FOR KEY SHARE lock on row "([^"]+)" of table "([^"]+)" taken from another connection is granted at once$/, async function (this: SyncWorld, row: string, table: string) {
  const push = raceState(this).pushes.at(-1);
  this.assert.ok(push !== undefined && push.reply === undefined, 'the push is still held, so its row lock is still taken');
  // FOR KEY SHARE conflicts with FOR UPDATE only: the held push took FOR NO KEY UPDATE, or it holds up foreign key checks.
  const granted = await probeRowLock(this, table, this.model.keyColumn(table).name, row, 'KEY SHARE');
  if (granted === 'skipped') return granted;
  this.assert.ok(granted, `while the push is held, a FOR KEY SHARE lock on row ${row} of ${table} is granted at once: the push locked the row FOR UPDATE`);
});

When('the harness holds an open source transaction that ran {string}', async function (this: SyncWorld, statement: string) {
  const tx = await beginHeld(this, statement, true);
  if (tx === 'skipped') return tx;
});

/** The row the last started push writes first, as table, key column and key text. */
function pushedRow(world: SyncWorld): { table: string; key: string; row: string } {
  const push = raceState(world).pushes.at(-1);
  const mutation = push?.mutations[0];
  if (push === undefined || mutation === undefined) throw new Error('no push was started in this scenario');
  const client = world.wire(push.client);
  const table = client.tableSchema(String(mutation.table)).name;
  return { table, key: world.model.keyColumn(table).name, row: String(Object.values(mutation.pk as Json)[0]) };
}

Then(/^the push waits for the open (?:child insert|source transaction)( before reaching the gate)?$/, async function (this: SyncWorld, beforeGate: string | undefined) {
  const tx = heldTransaction(this);
  const push = raceState(this).pushes.at(-1);
  const blocked = await awaitBlockedBy(this, tx.pid, 'the push never waited for the open source transaction');
  this.assert.ok(push?.reply === undefined, `the push waits unanswered (blocked backends ${blocked.join(', ')})`);
  if (beforeGate) this.assert.equal((await lockWaits(this)).get('advisory') ?? 0, 0, 'no push write waits at the gate while the push waits for the open transaction');
  // While it waits, the push holds no weaker lock on the row that it would have to upgrade: a FOR SHARE
  // lock is still granted at once from a third connection (it conflicts with FOR NO KEY UPDATE, not with a waiter).
  const { table, key, row } = pushedRow(this);
  const granted = await probeRowLock(this, table, key, row, 'SHARE');
  if (granted === 'skipped') return granted;
  this.assert.ok(granted, `while the push waits, a FOR SHARE lock on row ${row} of ${table} is granted at once: the push already holds a weaker lock it must upgrade`);
});

Then(/^the push does not wait for the open (?:child insert before reaching the gate|source transaction)$/, async function (this: SyncWorld) {
  const tx = heldTransaction(this);
  const push = raceState(this).pushes.at(-1);
  if (push === undefined) {
    // A push sent and answered in its step: answered while the transaction is still open.
    const reply = lastPush(this);
    this.assert.equal(reply.status, 200, `the push was answered while the source transaction was open: ${reply.status} ${reply.text.slice(0, 300)}`);
    this.assert.equal(tx.settledAt !== undefined && tx.error === undefined, true, 'the source transaction is still open and well');
    return;
  }
  await waitFor(this, 'the push neither reached the gate nor waited for the open transaction', async () => {
    if (push.reply !== undefined) return true;
    if (((await lockWaits(this)).get('advisory') ?? 0) > 0) return true;
    return (await blockedBy(this, tx.pid)).length > 0 ? true : undefined;
  });
  this.assert.equal(await blockedBy(this, tx.pid), [], 'no backend waits for the open source transaction');
  this.assert.ok(push.reply === undefined && ((await lockWaits(this)).get('advisory') ?? 0) > 0, 'the push waits at the gate');
});

When('the harness commits the open source transaction and opens the gate', async function (this: SyncWorld) {
  await endHeld(this, 'COMMIT');
  await openGates(this);
  await awaitAnswers(this);
});

When('the harness commits the open source transaction', async function (this: SyncWorld) {
  await endHeld(this, 'COMMIT');
  await awaitAnswers(this);
});

When('the harness rolls back the open source transaction', async function (this: SyncWorld) {
  await endHeld(this, 'ROLLBACK');
  await awaitAnswers(this);
});

When(
  /^client "([^"]+)" has pushed a batch with one update of row "([^"]+)" of table "([^"]+)" with base_version "([^"]+)" and columns (\{.*\})$/,
  async function (this: SyncWorld, name: string, pk: string, table: string, base: string, columns: string) {
    await pushThat(this, name, { op: 'update', table, pk: cellValue(this.model.keyColumn(table), pk), base_version: labelledVersion(this, base), columns: JSON.parse(columns) });
    const reply = lastPush(this);
    if (reply.status !== 200 || (reply.json?.accepted ?? []).length !== 1) throw new Error(`the update was not applied: ${reply.status} ${reply.text.slice(0, 400)}`);
  },
);

When('the server_version of that mutation is remembered as {string}', function (this: SyncWorld, label: string) {
  const outcome = thatOutcomeOf(this);
  if (typeof outcome.server_version !== 'string') throw new Error(`that mutation's outcome has no server_version: ${JSON.stringify(outcome)}`);
  versionLabels(this).set(label, outcome.server_version);
});

// ---- a deadlock between two held pushes ----

function deadlockAnswers(world: SyncWorld): { winner: Reply; loser: Reply } {
  const pushes = raceState(world).pushes;
  const replies = pushes.map((p) => p.reply as Reply);
  const ok = replies.filter((r) => r?.status === 200);
  world.assert.equal(ok.length, 1, `one of the two pushes answers 200: ${replies.map((r) => `${r?.status} ${r?.text.slice(0, 200)}`).join(' | ')}`);
  return { winner: ok[0] as Reply, loser: replies.find((r) => r !== ok[0]) as Reply };
}

Then('one push answers 200 with both updates applied', async function (this: SyncWorld) {
  await awaitAnswers(this);
  const { winner } = deadlockAnswers(this);
  const accepted = (winner.json?.accepted ?? []) as Json[];
  this.assert.equal({ accepted: accepted.map((o) => o.status), rejected: (winner.json?.rejected ?? []).length }, { accepted: ['applied', 'applied'], rejected: 0 }, `the 200 answer: ${winner.text.slice(0, 800)}`);
});

Then(/^the other push answers 503 with error code "([^"]+)" and a valid Retry-After header$/, async function (this: SyncWorld, code: string) {
  const { loser } = deadlockAnswers(this);
  this.assert.equal({ status: loser.status, code: loser.json?.error?.code, retryable: loser.json?.error?.retryable }, { status: 503, code, retryable: true }, `the other answer: ${loser.text.slice(0, 500)}`);
  const retryAfter = loser.headers.get('retry-after') ?? '';
  this.assert.match(retryAfter, /^(?:0|[1-9]\d*)$/, `Retry-After of the 503 answer is a number of seconds: "${retryAfter}"`);
});

Then(/^the server holds rows "([^"]+)" and "([^"]+)" of table "([^"]+)" with the body of the push that answered 200$/, async function (this: SyncWorld, first: string, second: string, table: string) {
  const { winner } = deadlockAnswers(this);
  const pushes = raceState(this).pushes;
  const body = (pushes.find((p) => p.reply === winner)?.mutations[0]?.columns as Json | undefined) ?? {};
  const expected = Object.values(body)[0];
  const served = await servedRows(this, table);
  this.assert.equal([served.get(first)?.row.body, served.get(second)?.row.body], [expected, expected], `bodies of ${first} and ${second} as served`);
});

// ---- generated races with inserts ----

interface MixedRound {
  base: string;
  pushes: { client: string; op: 'update' | 'delete' | 'insert'; pk: string; reply: Reply; outcome: Json | undefined }[];
}

const mixed = new WeakMap<SyncWorld, { seed: number; rounds: MixedRound[]; row: string; table: string }>();

When(
  /^the harness runs (\d+) generated rounds, each racing (\d+) to (\d+) clients of user "([^"]+)" that push an update or a delete of row "([^"]+)" or an insert of a fresh key shared by the round, all from the version current at the start of the round$/,
  async function (this: SyncWorld, count: string, fewest: string, most: string, user: string, row: string) {
    const table = 'notes';
    const seed = generatedSeed();
    const op = fc.constantFrom<'update' | 'delete' | 'insert'>('update', 'delete', 'insert');
    // Every round carries at least one insert of its fresh key.
    const plans = fc.sample(fc.tuple(fc.array(op, { minLength: Number(fewest) - 1, maxLength: Number(most) - 1 }), fc.nat(Number(most) - 1)), { numRuns: Number(count), seed });
    const clients = Array.from({ length: Number(most) }, (_, k) => `racer-${k + 1}`);
    const { connectClients } = await import('../support/mutations/race-rounds.ts');
    await connectClients(this, clients, user);
    const state = { seed, rounds: [] as MixedRound[], row, table };
    mixed.set(this, state);
    let current = labelledVersion(this, 'V1');
    const key = this.model.keyColumn(table);
    for (const [k, [ops, at]] of plans.entries()) {
      const all = [...ops];
      all.splice(Math.min(at, all.length), 0, 'insert');
      const fresh = `fresh-${k + 1}-${randomUUID().slice(0, 8)}`;
      const sends = all.map((o, c) => {
        const client = this.wire(clients[c] as string);
        const pk = o === 'insert' ? fresh : row;
        const mutation = client.mutation({
          op: o,
          table,
          pk: cellValue(key, pk),
          ...(o === 'insert' ? { columns: { owner_id: user, body: client.name } } : { base_version: current }),
          ...(o === 'update' ? { columns: { body: client.name } } : {}),
        });
        return { client: client.name, op: o, pk, mutation, body: client.pushBody([mutation]) };
      });
      const replies = await Promise.all(sends.map((s) => this.wire(s.client).post('/sync/push', s.body, { endpoint: 'push' })));
      const round: MixedRound = {
        base: current,
        pushes: sends.map((s, j) => {
          const reply = replies[j] as Reply;
          const outcomes = reply.status === 200 ? [...(reply.json?.accepted ?? []), ...(reply.json?.rejected ?? [])] : [];
          return { client: s.client, op: s.op, pk: s.pk, reply, outcome: outcomes.find((o: Json) => o.mutation_id === s.mutation.mutation_id) };
        }),
      };
      state.rounds.push(round);
      const changed = round.pushes.find((p) => p.op !== 'insert' && p.outcome?.status === 'applied');
      if (changed && typeof changed.outcome?.server_version === 'string') current = changed.outcome.server_version;
    }
  },
);

function mixedRounds(world: SyncWorld) {
  const state = mixed.get(world);
  if (state === undefined) throw new Error('no generated rounds ran in this scenario');
  return state;
}

const roundNote = (seed: number, k: number, round: MixedRound) =>
  `round ${k + 1} (fast-check seed ${seed}): ${JSON.stringify(round.pushes.map((p) => ({ client: p.client, op: p.op, status: p.reply.status, outcome: p.outcome ? { status: p.outcome.status, code: p.outcome.code, server_version: p.outcome.server_version } : p.reply.text.slice(0, 200) })))}`;

Then('in every round at most one update or delete is {string} per starting version', function (this: SyncWorld, status: string) {
  const { seed, rounds } = mixedRounds(this);
  for (const [k, round] of rounds.entries()) {
    const applied = round.pushes.filter((p) => p.op !== 'insert' && p.outcome?.status === status);
    this.assert.ok(applied.length <= 1, `at most one update or delete applied from ${round.base} in ${roundNote(seed, k, round)}`);
    for (const p of round.pushes) this.assert.equal(p.reply.status, 200, `client ${p.client}'s answer in ${roundNote(seed, k, round)}`);
  }
});

Then('in every round exactly one insert of the shared fresh key is {string}', function (this: SyncWorld, status: string) {
  const { seed, rounds } = mixedRounds(this);
  for (const [k, round] of rounds.entries()) {
    const inserts = round.pushes.filter((p) => p.op === 'insert');
    this.assert.equal(inserts.filter((p) => p.outcome?.status === status).length, 1, `applied inserts in ${roundNote(seed, k, round)}`);
    for (const p of inserts.filter((i) => i.outcome?.status !== status)) this.assert.equal({ status: p.outcome?.status, code: p.outcome?.code }, { status: 'conflict', code: 'row_already_exists' }, `client ${p.client}'s insert in ${roundNote(seed, k, round)}`);
  }
});

Then("after every round the row's server_version equals the applied outcome's server_version", async function (this: SyncWorld) {
  const { seed, rounds, row, table } = mixedRounds(this);
  // Each round's conflicts report the row as the round left it; the fresh rows are served at their inserts' versions.
  for (const [k, round] of rounds.entries()) {
    const changed = round.pushes.find((p) => p.op !== 'insert' && p.outcome?.status === 'applied');
    const after = changed?.outcome?.server_version ?? round.base;
    for (const p of round.pushes.filter((q) => q.op !== 'insert' && q.outcome?.status === 'conflict')) {
      this.assert.equal(p.outcome?.server_version, after, `the conflict of client ${p.client} reports the row's version after ${roundNote(seed, k, round)}`);
    }
  }
  const served = await servedRows(this, table);
  for (const [k, round] of rounds.entries()) {
    const insert = round.pushes.find((p) => p.op === 'insert' && p.outcome?.status === 'applied');
    if (insert) this.assert.equal(served.get(insert.pk)?.serverVersion, insert.outcome?.server_version, `row ${insert.pk} as served after ${roundNote(seed, k, round)}`);
  }
  const last = [...rounds].reverse().flatMap((r) => r.pushes).find((p) => p.op !== 'insert' && p.outcome?.status === 'applied');
  if (last?.op === 'update') this.assert.equal(served.get(row)?.serverVersion, last.outcome?.server_version, `row ${row} as served after the last round`);
  else if (last?.op === 'delete') this.assert.equal(served.get(row), undefined, `row ${row} is served no more after its delete`);
});
