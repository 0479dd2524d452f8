/**
 * SYNC-MUT-018 Concurrent Update Delete Conservation: updates and deletes of
 * one row pushed from the same base at the same time, ordered by a gate in
 * the source database or left to race, and the outcomes checked against the
 * operation and row-state matrix and the row the server then serves.
 *
 * The gate, "starts pushing", "is held at the gate", "opens the gate" and the
 * numbered client ranges are also used by SYNC-MUT-017.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import {
  answeredPushOf,
  awaitAnswers,
  awaitHeldAtGate,
  awaitRowLockWaitOrAnswer,
  closeGate,
  installGate,
  onlyOutcome,
  openGates,
  raceState,
  startOne,
} from '../support/mutations/push-gates.ts';
import { clientRange, connectClients, type RacePlan, roundsState, runRace, runRounds, winnerOf } from '../support/mutations/race-rounds.ts';
import { servedRows } from '../support/server-rows.ts';
import { labelledVersion } from '../support/version-labels.ts';
import { cellValue } from '../support/values.ts';
import type { Json } from '../support/wire-client.ts';
import { changesOf, lastPull } from '../support/wire-values/operations.ts';
import { keyValue } from '../support/wire-values/recorded.ts';
import type { SyncWorld } from '../support/world.ts';

// ---- the gate (shared with SYNC-MUT-017) ----

Given(
  /^table "([^"]+)" has a gate trigger that holds (the first|each) push write(?: of row "([^"]+)")? until the harness opens the gate$/,
  async function (this: SyncWorld, table: string, which: string, row: string | undefined) {
    const gate = await installGate(this, table, row ?? undefined);
    gate.reclose = which === 'each';
  },
);

When(/^the push(?: of client "[^"]+")? is held at the gate$/, async function (this: SyncWorld) {
  await awaitHeldAtGate(this);
});

When('the harness opens the gate', async function (this: SyncWorld) {
  await openGates(this);
  await awaitAnswers(this);
  // A gate that holds each push write holds the next one again.
  for (const gate of raceState(this).gates) if (gate.reclose) await closeGate(this, gate);
});

Given(/^clients "([^"]+)" to "([^"]+)" of user "([^"]+)" have connected$/, async function (this: SyncWorld, first: string, last: string, user: string) {
  await connectClients(this, clientRange(first, last), user);
});

Given('client {string} has rebuilt every scope it is assigned', async function (this: SyncWorld, name: string) {
  // A pull then answers with the changes after the rebuild instead of asking for one.
  await this.wire(name).connectAndRebuild();
});

// ---- one push started in the background ----

/** Starts the push; a push started while another waits at a gate is given time to reach the row lock. */
async function startRacing(world: SyncWorld, name: string, op: 'update' | 'delete', table: string, pk: string, base: string, columns?: Record<string, unknown>): Promise<void> {
  const pkValue = cellValue(world.model.keyColumn(table), pk);
  const waiting = raceState(world).pushes.filter((p) => p.reply === undefined);
  const push = startOne(world, name, { op, table, pk: pkValue, base_version: labelledVersion(world, base), ...(columns === undefined ? {} : { columns }) });
  if (waiting.length > 0) await awaitRowLockWaitOrAnswer(world, push);
}

When(
  /^client "([^"]+)" starts pushing (?:an update setting (\w+) "([^"]*)"|a delete) of row "([^"]+)" of table "([^"]+)" with base_version "([^"]+)"$/,
  async function (this: SyncWorld, name: string, column: string | undefined, value: string | undefined, pk: string, table: string, base: string) {
    const op = column === undefined || column === null ? 'delete' : 'update';
    await startRacing(this, name, op, table, pk, base, op === 'update' ? { [column as string]: value } : undefined);
  },
);

// ---- the outcomes of the gated race ----

Then('the outcome for client {string} is {string}', async function (this: SyncWorld, name: string, status: string) {
  const { list, outcome } = onlyOutcome(this, await answeredPushOf(this, name));
  this.assert.equal({ list, status: outcome.status }, { list: status === 'applied' ? 'accepted' : 'rejected', status }, `the outcome of client "${name}": ${JSON.stringify(outcome)}`);
});

Then('the outcome for client {string} is a conflict with code {string}', async function (this: SyncWorld, name: string, code: string) {
  const { list, outcome } = onlyOutcome(this, await answeredPushOf(this, name));
  this.assert.equal({ list, status: outcome.status, code: outcome.code }, { list: 'rejected', status: 'conflict', code }, `the outcome of client "${name}": ${JSON.stringify(outcome)}`);
});

/** The one applied outcome and the one conflict of a gated race of two pushes. */
async function winnerAndLoser(world: SyncWorld): Promise<{ winner: Json; loser: Json }> {
  const pushes = await awaitAnswers(world);
  const outcomes = pushes.map((p) => onlyOutcome(world, p as typeof p & { reply: NonNullable<typeof p.reply> }).outcome);
  const applied = outcomes.filter((o) => o.status === 'applied');
  const conflicts = outcomes.filter((o) => o.status === 'conflict');
  world.assert.equal({ applied: applied.length, conflicts: conflicts.length }, { applied: 1, conflicts: pushes.length - 1 }, `one applied outcome and conflicts for the rest: ${JSON.stringify(outcomes)}`);
  return { winner: applied[0] as Json, loser: conflicts[0] as Json };
}

Then("the server_version of the loser's conflict equals the server_version of the winner's applied outcome", async function (this: SyncWorld) {
  const { winner, loser } = await winnerAndLoser(this);
  this.assert.ok(typeof winner.server_version === 'string', `the winner's applied outcome carries a server_version: ${JSON.stringify(winner)}`);
  this.assert.equal(loser.server_version, winner.server_version, `server_version of the loser's conflict ${JSON.stringify(loser)} against the winner's ${JSON.stringify(winner)}`);
});

/** A wire row keyed by column names. */
function named(world: SyncWorld, table: unknown, row: unknown): Record<string, unknown> {
  const client = world.wire(raceState(world).pushes[0]?.client as string);
  return client.namedRow(String(table), (row ?? {}) as Record<string, unknown>);
}

Then(
  /^the loser's conflict carries a server_row equal to the winner's (server_row|tombstone), with (\w+) (?:"([^"]*)"|(not null))$/,
  async function (this: SyncWorld, what: string, column: string, value: string | undefined, notNull: string | undefined) {
    const { winner, loser } = await winnerAndLoser(this);
    this.assert.ok(winner.server_row !== undefined, `the winner's applied outcome carries its ${what}: ${JSON.stringify(winner)}`);
    this.assert.equal(loser.server_row, winner.server_row, `the loser's server_row ${JSON.stringify(loser)} against the winner's ${JSON.stringify(winner)}`);
    this.assert.equal(loser.row_checksum, winner.row_checksum, `the loser's row_checksum against the winner's`);
    const row = named(this, loser.table, loser.server_row);
    if (notNull) this.assert.ok(row[column] !== null && row[column] !== undefined, `${column} of the loser's server_row is not null: ${JSON.stringify(row)}`);
    else this.assert.equal(row[column], value, `${column} of the loser's server_row ${JSON.stringify(row)}`);
  },
);

Then("the loser's conflict carries no server_row and no row_checksum", async function (this: SyncWorld) {
  const { loser } = await winnerAndLoser(this);
  const present = ['server_row', 'row_checksum'].filter((m) => Object.hasOwn(loser, m));
  this.assert.equal(present, [], `the loser's conflict of a row deleted without a tombstone carries ${present.join(', ')}: ${JSON.stringify(loser)}`);
});

Then(/^the pulled row "([^"]+)" has body "([^"]*)", deleted_at null and the server_version of client "([^"]+)"'s applied outcome$/, async function (this: SyncWorld, pk: string, body: string, name: string) {
  const { outcome } = onlyOutcome(this, await answeredPushOf(this, name));
  this.assert.equal(outcome.status, 'applied', `client "${name}"'s outcome: ${JSON.stringify(outcome)}`);
  const reply = lastPull(this);
  const changes = changesOf(reply).filter((c) => String(keyValue(c.pk)) === pk);
  this.assert.equal(changes.length, 1, `one change of row ${pk} in the pull response: ${reply.text.slice(0, 1500)}`);
  const change = changes[0] as Json;
  const row = named(this, change.table, change.row);
  this.assert.equal({ body: row.body, deleted_at: row.deleted_at, server_version: change.server_version }, { body, deleted_at: null, server_version: outcome.server_version }, `the pulled row ${pk}: ${JSON.stringify(change)}`);
});

// ---- unordered races ----

When(
  /^the harness runs (\d+) generated rounds on a fresh row of table "([^"]+)", each racing (\d+) to (\d+) clients of user "([^"]+)" that push at the same moment an update \(with a body naming the client\) or a delete, all from the row's version at the start of the round$/,
  async function (this: SyncWorld, rounds: string, table: string, fewest: string, most: string, user: string) {
    await runRounds(this, { rounds: Number(rounds), table, fewest: Number(fewest), most: Number(most), user });
  },
);

When(
  /^clients "([^"]+)" to "([^"]+)" push at the same moment, all from base_version "([^"]+)", an update of row "([^"]+)" of table "([^"]+)" with a body naming the client or a delete, updates and deletes alternating$/,
  async function (this: SyncWorld, first: string, last: string, base: string, pk: string, table: string) {
    const clients = clientRange(first, last);
    const plan: RacePlan = { table, pk, base: labelledVersion(this, base), ops: clients.map((client, k) => ({ client, op: k % 2 === 0 ? 'update' : 'delete' })) };
    roundsState(this).rounds.push(await runRace(this, plan));
  },
);

function describeRound(world: SyncWorld, index: number): string {
  const state = roundsState(world);
  const round = state.rounds[index];
  return `round ${index + 1} of ${state.rounds.length}${state.seed === undefined ? '' : ` (fast-check seed ${state.seed})`}: ${JSON.stringify(round?.pushes.map((p) => ({ client: p.client, op: p.op, status: p.reply.status, answer: p.reply.text.slice(0, 400) })))}`;
}

function everyRound(world: SyncWorld) {
  const rounds = roundsState(world).rounds;
  if (rounds.length === 0) throw new Error('no round of racing pushes ran in this scenario');
  return rounds.entries();
}

Then('every push of every round answers 200 with one outcome for its mutation', function (this: SyncWorld) {
  for (const [k, round] of everyRound(this)) {
    for (const push of round.pushes) {
      this.assert.equal(push.reply.status, 200, `client ${push.client}'s push in ${describeRound(this, k)}`);
      const ids = ['accepted', 'rejected'].flatMap((list) => ((push.reply.json?.[list] ?? []) as Json[]).map((o) => o.mutation_id));
      this.assert.equal(ids, [push.mutation.mutation_id], `the outcomes of client ${push.client}'s push in ${describeRound(this, k)}`);
    }
  }
});

Then('every round has exactly one {string} outcome', function (this: SyncWorld, status: string) {
  for (const [k, round] of everyRound(this)) {
    const count = round.pushes.filter((p) => p.outcome?.status === status).length;
    this.assert.equal(count, 1, `"${status}" outcomes in ${describeRound(this, k)}`);
  }
});

Then(
  'every other outcome of the round is a conflict with code {string} or {string} whose server_version is the winner\'s',
  function (this: SyncWorld, afterUpdate: string, afterDelete: string) {
    for (const [k, round] of everyRound(this)) {
      const winner = winnerOf(round);
      this.assert.ok(winner, `a winner in ${describeRound(this, k)}`);
      // The matrix: a loser meets the winner's row, updated (version_conflict) or deleted (row_deleted), whatever the loser tried.
      const code = winner.op === 'update' ? afterUpdate : afterDelete;
      for (const push of round.pushes.filter((p) => p !== winner)) {
        const o = push.outcome ?? {};
        this.assert.equal(
          { status: o.status, code: o.code, server_version: o.server_version, server_row: o.server_row, row_checksum: o.row_checksum },
          { status: 'conflict', code, server_version: winner.outcome?.server_version, server_row: winner.outcome?.server_row, row_checksum: winner.outcome?.row_checksum },
          `client ${push.client}'s outcome against winner ${winner.client}'s ${winner.op} in ${describeRound(this, k)}`,
        );
      }
    }
  },
);

Then("after every round the server holds the row as the winner left it, at the winner's server_version", async function (this: SyncWorld) {
  const rounds = [...everyRound(this)];
  const tables = new Set(rounds.map(([, r]) => r.table));
  for (const table of tables) {
    const served = await servedRows(this, table);
    for (const [k, round] of rounds.filter(([, r]) => r.table === table)) {
      const winner = winnerOf(round);
      this.assert.ok(winner, `a winner in ${describeRound(this, k)}`);
      const row = served.get(round.pk);
      if (winner.op === 'delete') {
        this.assert.equal(row, undefined, `row ${round.pk} is served no more after winner ${winner.client}'s delete in ${describeRound(this, k)}`);
      } else {
        this.assert.equal(
          { body: row?.row.body, deleted_at: row?.row.deleted_at, server_version: row?.serverVersion },
          { body: winner.client, deleted_at: null, server_version: winner.outcome?.server_version },
          `row ${round.pk} as served after ${describeRound(this, k)}`,
        );
      }
    }
  }
});
