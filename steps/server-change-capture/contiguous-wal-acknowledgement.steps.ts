/**
 * Steps of SYNC-CAP-005 Contiguous WAL Acknowledgement: the slot's confirmed
 * position and the worker's progress record (generation start, processed and
 * acknowledged boundaries, materialized end) read through server inspection,
 * around holds, poison, kills and slots the harness tampers with.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { inspectRows } from '../support/capture/inspection.ts';
import { databaseCrashPhrase, restartDatabaseImmediately } from '../support/database-crash/index.ts';
import { generatedSeed } from '../support/generated-seed.ts';
import { undeterminedWithout } from '../support/optional-controls.ts';
import { positionOf } from '../support/scope-dependencies/state.ts';
import { acknowledgementState, captureOf, killWorker, type LabelledSample, lsnAtOrBefore, type ProgressSample, progressSample, provisionOf } from '../support/wal-acknowledgement/progress.ts';
import type { SyncWorld } from '../support/world.ts';

/** Released from its hold: it has to be there first, or the restart would leave the hold armed for later. */
When('the capture worker is released', async function (this: SyncWorld) {
  const server = await this.readyServer();
  const capture = captureOf(server);
  if (!capture.awaitHold || !capture.restartWorker) throw new Error(`server adapter "${server.id}" offers no capture.awaitHold() and restartWorker() to release the held worker`);
  await capture.awaitHold(this.deadlineMs);
  await capture.restartWorker();
});

Then("server inspection shows the slot's confirmed position after position {string}", async function (this: SyncWorld, label: string) {
  const position = positionOf(this, label);
  const sample = await progressSample(this);
  // The transaction the label names, as the worker recorded it: its end is what the slot must have passed.
  const [record] = await inspectRows<{ end: string }>(
    this,
    'SELECT end_lsn::text AS "end" FROM synchro.wal_transactions WHERE stream_generation = $1 AND commit_lsn > $2::pg_lsn AND commit_lsn <= $3::pg_lsn ORDER BY commit_lsn',
    [sample.generation, position.before, position.after],
  );
  this.assert.ok(record !== undefined, `server inspection shows a transaction record for "${label}" (committed between ${position.before} and ${position.after})`);
  const passed = sample.confirmed !== null && record !== undefined && (await lsnAtOrBefore(this, record.end, sample.confirmed));
  this.assert.ok(passed, `the slot confirmed ${sample.confirmed}, transaction "${label}" ends at ${record?.end}`);
});

/**
 * The worker reads the flush position, decodes up to it and, finding nothing
 * to materialize, acknowledges exactly it. The harness cannot read the
 * worker's own read, so it checks what that read implies: the slot passed
 * every idle message, stands exactly on the recorded processed and
 * acknowledged boundaries, and is not past the WAL flushed now.
 */
Then("server inspection shows the slot's confirmed position at the WAL flush position read before the last poll", async function (this: SyncWorld) {
  const idleEnd = acknowledgementState(this).idleEnd;
  if (idleEnd === undefined) throw new Error('no idle messages were committed earlier in this scenario');
  const sample = await progressSample(this);
  const [now] = await inspectRows<{ flush: string; past_idle: boolean | null; not_past_flush: boolean | null }>(
    this,
    'SELECT pg_current_wal_flush_lsn()::text AS flush, $1::pg_lsn >= $2::pg_lsn AS past_idle, $1::pg_lsn <= pg_current_wal_flush_lsn() AS not_past_flush',
    [sample.confirmed, idleEnd],
  );
  this.assert.equal(
    { pastIdleMessages: now?.past_idle, atProcessed: sample.confirmed === sample.processed, atAcknowledged: sample.confirmed === sample.acknowledged, notPastFlush: now?.not_past_flush },
    { pastIdleMessages: true, atProcessed: true, atAcknowledged: true, notPastFlush: true },
    `slot confirmed ${sample.confirmed}, processed ${sample.processed}, acknowledged ${sample.acknowledged}, idle messages end ${idleEnd}, flushed now ${now?.flush}`,
  );
});

/** An operation drawn by kind; which row it touches is decided when the workload is written out. */
type Operation = { kind: 'insert' | 'update' | 'delete'; pick: number; title: number };

const operation: fc.Arbitrary<Operation> = fc.record({ kind: fc.constantFrom('insert', 'update', 'delete'), pick: fc.nat(63), title: fc.nat(999) });

/**
 * The statements of drawn transactions. A deleted row identity cannot come
 * back (the reference refuses to revive one), so inserts take fresh keys and
 * updates and deletes pick among the live ones (an insert when none is live).
 */
function workload(transactions: Operation[][]): string[] {
  const live: string[] = [];
  let next = 0;
  return transactions.map((ops) =>
    ops
      .map((op) => {
        if (op.kind === 'insert' || live.length === 0) {
          const id = `g-${next++}`;
          live.push(id);
          return `INSERT INTO public.tasks (id, owner_id, title) VALUES ('${id}', 'alice', 'n${op.title}');`;
        }
        const index = op.pick % live.length;
        const id = live[index] as string;
        if (op.kind === 'update') return `UPDATE public.tasks SET title = 'u${op.title}' WHERE id = '${id}';`;
        live.splice(index, 1);
        return `DELETE FROM public.tasks WHERE id = '${id}';`;
      })
      .join(' '),
  );
}

/**
 * A drawn workload: 12 transactions of 1 to 20 operations on 8 keys. After
 * each commit the progress record is sampled at once (the worker may be in
 * the middle of it) and again once capture has caught up.
 */
When(
  'the harness commits many generated transactions of {int} to {int} inserts, updates and deletes on table {string} and samples the progress record after each commit',
  async function (this: SyncWorld, fewest: number, most: number, table: string) {
    if (table !== 'tasks') throw new Error(`the generated workload writes table "tasks" (id, owner_id, title), not "${table}"`);
    const server = await this.readyServer();
    const sql = server.sourceSql;
    if (!sql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source transactions`);
    const capture = captureOf(server);
    const seed = generatedSeed();
    const state = acknowledgementState(this);
    state.seed = seed;
    this.attach(`generated workload seed ${seed} (replay with SYNCHRO_SEED=${seed})`, 'text/plain');
    const [transactions] = fc.sample(fc.array(fc.array(operation, { minLength: fewest, maxLength: most }), { minLength: 12, maxLength: 12 }), { seed, numRuns: 1 });
    const samples: LabelledSample[] = [];
    for (const [index, statements] of workload(transactions ?? []).entries()) {
      await sql.query(`BEGIN; ${statements} COMMIT;`);
      samples.push({ ...(await progressSample(this)), when: 'after commit', commit: index + 1 });
      await capture.awaitMaterialized(this.deadlineMs);
      samples.push({ ...(await settledSample(this)), when: 'caught up', commit: index + 1 });
    }
    state.samples = samples;
  },
);

/**
 * A sample once capture has caught up. A poll the heartbeat started may be
 * between its slot advance and its acknowledgement record right then; that
 * lasts one statement, so the sample is taken again until the slot and the
 * record agree or a short deadline passes (then the last one is kept).
 */
async function settledSample(world: SyncWorld): Promise<ProgressSample> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const sample = await progressSample(world);
    if (sample.confirmedEqAck === true || Date.now() > deadline) return sample;
  }
}

function samplesOf(world: SyncWorld): { samples: LabelledSample[]; seed: number } {
  const state = acknowledgementState(world);
  if (state.samples === undefined || state.seed === undefined) throw new Error('no progress record was sampled earlier in this scenario');
  return { samples: state.samples, seed: state.seed };
}

const describe = (s: LabelledSample) =>
  `commit ${s.commit} (${s.when}): start ${s.generationStart}, acknowledged ${s.acknowledged}, processed ${s.processed}, materialized end ${s.materializedEnd}, slot ${s.confirmed}`;

Then('every sample satisfies generation start <= acknowledged boundary <= processed boundary', function (this: SyncWorld) {
  const { samples, seed } = samplesOf(this);
  const broken = samples.filter((s) => !(s.startLeAck && s.ackLeProcessed)).map(describe);
  this.assert.ok(samples.length > 0, 'the progress record was sampled');
  this.assert.equal(broken, [], `samples out of order (seed ${seed})`);
});

Then('every sample satisfies materialized end <= processed boundary', function (this: SyncWorld) {
  const { samples, seed } = samplesOf(this);
  const broken = samples.filter((s) => !s.materializedLeProcessed).map(describe);
  this.assert.ok(samples.length > 0, 'the progress record was sampled');
  this.assert.equal(broken, [], `samples with the materialized end past the processed boundary (seed ${seed})`);
});

/**
 * The acknowledgement record is written after the slot advance, so while the
 * worker is between the two the slot may stand between the acknowledged and
 * processed boundaries; once capture has caught up it stands exactly on the
 * acknowledged boundary (which starts out as the generation start).
 */
Then(
  "every sample has the slot's confirmed position equal to the acknowledged boundary or the generation start when nothing was acknowledged",
  function (this: SyncWorld) {
    const { samples, seed } = samplesOf(this);
    const broken = samples
      .filter((s) => (s.when === 'caught up' ? s.confirmedEqAck !== true : !(s.ackLeConfirmed === true && s.confirmedLeProcessed === true)))
      .map(describe);
    this.assert.ok(samples.some((s) => s.when === 'caught up'), 'the progress record was sampled once capture caught up');
    this.assert.equal(broken, [], `samples whose slot position is not the acknowledged boundary (seed ${seed})`);
  },
);

Given(/^the worker's decode row limit is (\d+) and the worker is held before materializing "([^"]+)"$/, async function (this: SyncWorld, limit: string, _label: string) {
  const server = await this.readyServer();
  if (!server.capture?.holdBeforeCommit) return undeterminedWithout(this, `server adapter "${server.id}" offers no capture.holdBeforeCommit() to hold the worker before its materialization commit`);
  // The reference's operator setting (synchro.capture_limits); the hold then catches the next transaction with rows.
  await provisionOf(server).exec(`UPDATE synchro.capture_limits SET decode_row_limit = ${Number(limit)}`);
  await server.capture.holdBeforeCommit();
  return undefined;
});

When('the harness makes the next source transaction fail with an injected materialization error', async function (this: SyncWorld) {
  const server = await this.readyServer();
  const poison = captureOf(server).injectPoison;
  if (poison === undefined) throw new Error(`server adapter "${server.id}" offers no capture.injectPoison()`);
  await poison.call(server.capture);
});

/** The hold is armed again before the restart, so the restarted worker stops before committing the same transaction. */
When('the capture worker is restarted with materialization still blocked', async function (this: SyncWorld) {
  const server = await this.readyServer();
  const capture = captureOf(server);
  if (!capture.holdBeforeCommit || !capture.awaitHold || !capture.restartWorker) return undeterminedWithout(this, `server adapter "${server.id}" offers no capture hold to keep materialization blocked across a restart`);
  await capture.holdBeforeCommit();
  await capture.restartWorker();
  await capture.awaitHold(this.deadlineMs);
  return undefined;
});

// The scenario's database gets a cluster of its own (decision 223: the run's scenarios otherwise share one).
databaseCrashPhrase(/^the source database is shut down immediately and restarted$/);

When('the source database is shut down immediately and restarted', async function (this: SyncWorld) {
  return await restartDatabaseImmediately(this, 'shut the source database down immediately and restart it');
});

/**
 * Read once the restarted worker has caught up: its polls also decode the WAL
 * the restart itself wrote, so right after the restart a poll may stand
 * between its slot advance and its acknowledgement record.
 */
Then("server inspection shows the slot's confirmed position equal to the acknowledged boundary", async function (this: SyncWorld) {
  await captureOf(await this.readyServer()).awaitMaterialized(this.deadlineMs);
  const sample = await settledSample(this);
  this.assert.equal(sample.confirmedEqAck, true, `slot confirmed ${sample.confirmed}, acknowledged ${sample.acknowledged}`);
});

/** Kills the worker, tampers, and keeps what the slot and progress record look like for the checks after the restart. */
async function tamperWhileKilled(world: SyncWorld, tamper: (slot: string) => Promise<void>): Promise<void> {
  const server = await world.readyServer();
  await captureOf(server).awaitMaterialized(world.deadlineMs);
  await killWorker(server);
  await tamper((await progressSample(world)).slot);
  const state = acknowledgementState(world);
  state.tampered = await progressSample(world);
  const [count] = await inspectRows<{ n: string }>(world, 'SELECT count(*)::text AS n FROM synchro.wal_transactions');
  state.transactionsBefore = Number(count?.n);
}

const quoted = (text: string) => `'${text.replaceAll("'", "''")}'`;

Given("the harness moves the active slot's recorded generation start past its confirmed position", async function (this: SyncWorld) {
  const server = await this.readyServer();
  await tamperWhileKilled(this, async () => {
    // WAL past the slot, so the recorded start can move beyond its confirmed position.
    await provisionOf(server).exec("SELECT pg_logical_emit_message(false, 'harness_tamper', 'x', true)");
    await provisionOf(server).exec(
      `UPDATE synchro.wal_progress SET generation_start_lsn = pg_current_wal_insert_lsn(), processed_end_lsn = greatest(processed_end_lsn, pg_current_wal_insert_lsn()),
         acknowledged_end_lsn = greatest(acknowledged_end_lsn, pg_current_wal_insert_lsn()),
         materialized_commit_lsn = NULL, materialized_end_lsn = NULL`,
    );
  });
});

Given('the harness advances the active slot past the durable processed boundary', async function (this: SyncWorld) {
  const server = await this.readyServer();
  await tamperWhileKilled(this, async (slot) => {
    await provisionOf(server).exec("SELECT pg_logical_emit_message(false, 'harness_tamper', 'x', true)");
    await provisionOf(server).exec(`SELECT pg_replication_slot_advance(${quoted(slot)}, pg_current_wal_flush_lsn())`);
  });
});

Given('the harness replaces the active slot with a slot of the same name that the runtime never bound', async function (this: SyncWorld) {
  const server = await this.readyServer();
  await tamperWhileKilled(this, async (slot) => {
    await provisionOf(server).exec(`SELECT pg_drop_replication_slot(${quoted(slot)}); SELECT pg_create_logical_replication_slot(${quoted(slot)}, 'pgoutput')`);
  });
});

/**
 * A source transaction committed after the restart, and a real wait for
 * capture (refused or failing, which is expected): nothing may be
 * materialized, and the progress record and the slot stay as tampered.
 */
Then('the capture worker does not materialize or acknowledge anything', async function (this: SyncWorld) {
  const state = acknowledgementState(this);
  if (state.tampered === undefined || state.transactionsBefore === undefined) throw new Error('the harness did not tamper with the slot earlier in this scenario');
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to commit source transactions`);
  await server.sourceSql.query("INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-after-restart', 'alice', 'after')");
  try {
    await captureOf(server).awaitMaterialized(this.deadlineMs);
    this.attach('the wait for capture after the restart ended without a refusal', 'text/plain');
  } catch (error) {
    this.attach(`the wait for capture after the restart ended with: ${(error as Error).message}`, 'text/plain');
  }
  const now = await progressSample(this);
  const [count] = await inspectRows<{ n: string }>(this, 'SELECT count(*)::text AS n FROM synchro.wal_transactions');
  const view = (s: typeof now) => ({ processed: s.processed, acknowledged: s.acknowledged, materializedEnd: s.materializedEnd, slot: s.confirmed });
  this.assert.equal(
    { transactionRecords: Number(count?.n), ...view(now) },
    { transactionRecords: state.transactionsBefore, ...view(state.tampered) },
    'transaction records, progress record and slot position after the restart, against those right after the tampering',
  );
});

Then('server inspection shows the slot still present and not rebound by the worker', async function (this: SyncWorld) {
  const tampered = acknowledgementState(this).tampered;
  if (tampered === undefined) throw new Error('the harness did not tamper with the slot earlier in this scenario');
  const now = await progressSample(this);
  const [slot] = await inspectRows<{ plugin: string; temporary: boolean }>(this, 'SELECT plugin, temporary FROM pg_replication_slots WHERE slot_name = $1', [tampered.slot]);
  this.assert.equal(
    { present: slot !== undefined, plugin: slot?.plugin, slotName: now.slot, generation: now.generation, confirmed: now.confirmed },
    { present: true, plugin: 'pgoutput', slotName: tampered.slot, generation: tampered.generation, confirmed: tampered.confirmed },
    'the slot and the stream the progress record names, against those right after the tampering',
  );
});
