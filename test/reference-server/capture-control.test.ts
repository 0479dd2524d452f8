/**
 * The capture worker's test controls over `/__control/capture/`: stop, kill,
 * start and poison, each seen through the durable capture state.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import type { CaptureWorker } from '../../reference/server/capture/worker.ts';
import { CaptureStopped } from '../../reference/server/core/capture-control.ts';
import { connect, freshServer, type Harness, insertNote, OWNED_NOTES_SQL, pushBody, useEnv, withCaptureServer } from './helpers.ts';

const env = useEnv();
const withControls = (fn: (h: Harness) => Promise<void>) => withCaptureServer(env(), OWNED_NOTES_SQL, fn, { testControls: true });

const worker = (h: Harness) => h.server.capture as CaptureWorker;
const catchUp = (h: Harness) => h.control('/__control/capture/await', { timeout_ms: 15_000 });

async function control(h: Harness, name: 'stop' | 'restart' | 'kill' | 'poison'): Promise<unknown> {
  const res = await h.control(`/__control/capture/${name}`, {});
  assert.equal(res.status, 200, res.text);
  return res.json;
}

/** Effect keys in stream order for the given note ids. */
async function effectsOf(h: Harness, ids: string[]): Promise<string[]> {
  const { rows } = await h.sql.query('SELECT pk_text FROM synchro.scope_effects WHERE pk_text = ANY($1) ORDER BY commit_lsn, event_ordinal', [ids]);
  return rows.map((r) => r.pk_text);
}

const progress = async (h: Harness) =>
  (await h.sql.query('SELECT processed_end_lsn::text AS p, acknowledged_end_lsn::text AS a FROM synchro.wal_progress')).rows[0] as { p: string; a: string };

/** Holds the effects table so the worker blocks inside its materialization transaction; returns once it does. */
async function blockWorker(h: Harness): Promise<pg.Client> {
  const blocker = new pg.Client({ connectionString: h.url });
  await blocker.connect();
  await blocker.query('BEGIN; LOCK TABLE synchro.scope_effects IN ACCESS EXCLUSIVE MODE');
  return blocker;
}

async function workerWaitsOnLock(h: Harness): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const { rows } = await h.sql.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'synchro-capture' AND wait_event_type = 'Lock'");
    if (rows[0].n > 0) return;
    if (Date.now() > deadline) throw new Error('the worker never blocked on the effects table');
  }
}

test('a stopped worker materializes nothing committed after the stop, refuses catch-up at once, and catches up on start', async () => {
  await withControls(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('s1')`);
    assert.equal((await catchUp(h)).status, 200);
    assert.deepEqual(await control(h, 'stop'), { worker: 'stopped' });
    const before = await progress(h);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('s2')`);
    // Ask for a poll anyway, then wait for any poll in flight: a stop that let it run would show here.
    worker(h).kick();
    await worker(h).pause();
    assert.deepEqual(await effectsOf(h, ['s1', 's2']), ['s1']);
    assert.deepEqual(await progress(h), before);
    assert.equal((await h.sql.query('SELECT state FROM synchro.wal_worker_state')).rows[0].state, 'stopped');
    const refused = await catchUp(h);
    assert.equal(refused.status, 409, refused.text);
    assert.match(refused.json.error.message, /stopped/);

    // A client's accepted write is not materialized while stopped: its pull waits with capture_pending.
    const s = await connect(h);
    const pushed = await h.post('/sync/push', pushBody(s, [insertNote(s, 's3')]));
    assert.equal(pushed.status, 200, pushed.text);
    const pull = await h.post('/sync/pull', { client_id: s.clientId, client_generation: s.generation, schema: s.schema, scope_set_version: 1, scopes: {}, limit: 100 });
    assert.equal(pull.status, 503, pull.text);
    assert.equal(pull.json.error.code, 'capture_pending');

    assert.deepEqual(await control(h, 'restart'), { worker: 'running' });
    assert.equal((await catchUp(h)).status, 200);
    assert.deepEqual(await effectsOf(h, ['s1', 's2', 's3']), ['s1', 's2', 's3']);
  });
});

test('a stop lets the transaction being materialized finish and takes no further one', async () => {
  await withControls(async (h) => {
    assert.equal((await catchUp(h)).status, 200);
    const blocker = await blockWorker(h);
    try {
      await h.sql.query(`INSERT INTO public.notes (id) VALUES ('f1')`);
      await workerWaitsOnLock(h);
      await h.sql.query(`INSERT INTO public.notes (id) VALUES ('f2')`);
      const stopping = control(h, 'stop');
      await blocker.query('COMMIT');
      await stopping;
    } finally {
      await blocker.end();
    }
    assert.deepEqual(await effectsOf(h, ['f1', 'f2']), ['f1']);
    await control(h, 'restart');
    assert.equal((await catchUp(h)).status, 200);
    assert.deepEqual(await effectsOf(h, ['f1', 'f2']), ['f1', 'f2']);
  });
});

test('a kill rolls back the open materialization, and a start recovers from durable progress without loss or duplicates', async () => {
  await withControls(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k0')`);
    assert.equal((await catchUp(h)).status, 200);
    const blocker = await blockWorker(h);
    let afterK1 = '';
    try {
      await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k1')`);
      afterK1 = (await h.sql.query('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0].l;
      await workerWaitsOnLock(h);
      assert.deepEqual(await control(h, 'kill'), { worker: 'killed' });
    } finally {
      await blocker.query('COMMIT');
      await blocker.end();
    }
    const sessions = await h.sql.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'synchro-capture%'");
    assert.equal(sessions.rows[0].n, 0);
    assert.deepEqual(await effectsOf(h, ['k1']), []);
    // Neither processed nor acknowledged passed k1: its materialization left no durable trace.
    const held = await h.sql.query('SELECT processed_end_lsn < $1::pg_lsn AND acknowledged_end_lsn < $1::pg_lsn AS before_k1 FROM synchro.wal_progress', [afterK1]);
    assert.deepEqual(held.rows, [{ before_k1: true }]);
    assert.equal((await h.sql.query('SELECT count(*)::int AS n FROM synchro.wal_poison')).rows[0].n, 0);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k2')`);
    assert.equal((await catchUp(h)).status, 409);

    assert.deepEqual(await control(h, 'restart'), { worker: 'running' });
    assert.equal((await catchUp(h)).status, 200);
    assert.deepEqual(await effectsOf(h, ['k0', 'k1', 'k2']), ['k0', 'k1', 'k2']);
    const tx = await h.sql.query('SELECT count(*)::int AS n, count(DISTINCT commit_lsn)::int AS d FROM synchro.wal_transactions');
    assert.equal(tx.rows[0].n, tx.rows[0].d);
    const slot = await h.sql.query('SELECT s.slot_name = p.slot_name AS same FROM pg_replication_slots s, synchro.wal_progress p');
    assert.deepEqual(slot.rows, [{ same: true }]);
  });
});

test('poison quarantines the next transaction without row data, blocks later ones, and a retry delivers both in order', async () => {
  await withControls(async (h) => {
    assert.equal((await catchUp(h)).status, 200);
    assert.deepEqual(await control(h, 'poison'), { worker: 'poison_armed' });
    const marker = 'p1-secret-body-4b1d';
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('p1', $1)`, [marker]);
    const blocked = await catchUp(h);
    assert.equal(blocked.status, 409, blocked.text);
    assert.match(blocked.json.error.message, /quarantine/);
    const poison = await h.sql.query('SELECT failure_class, lifecycle, table_id, commit_lsn::text AS lsn FROM synchro.wal_poison');
    assert.equal(poison.rows.length, 1);
    assert.equal(poison.rows[0].failure_class, 'materialization_failed');
    assert.equal(poison.rows[0].lifecycle, 'active');
    assert.ok(!JSON.stringify(poison.rows).includes(marker));
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('p2')`);
    assert.equal((await catchUp(h)).status, 409);
    assert.deepEqual(await effectsOf(h, ['p1', 'p2']), []);

    assert.equal((await h.sql.query('SELECT synchro.synchro_retry_wal_poison() AS r')).rows[0].r, true);
    assert.equal((await catchUp(h)).status, 200);
    assert.deepEqual(await effectsOf(h, ['p1', 'p2']), ['p1', 'p2']);
    assert.equal((await h.sql.query('SELECT lifecycle FROM synchro.wal_poison')).rows[0].lifecycle, 'repaired');
  });
});

for (const point of ['after-materialization-commit', 'after-slot-advance', 'after-acknowledgement'] as const) {
  test(`a worker killed ${point} recovers on start with each transaction materialized once`, async () => {
    await withControls(async (h) => {
      await h.sql.query(`INSERT INTO public.notes (id) VALUES ('c0')`);
      assert.equal((await catchUp(h)).status, 200);
      const armed = await h.control('/__control/capture/crash-at', { point });
      assert.deepEqual(armed.json, { crash_armed: point });
      await h.sql.query(`INSERT INTO public.notes (id) VALUES ('c1')`);
      // The crash shows as the worker's sessions gone and catch-up refused.
      const deadline = Date.now() + 15_000;
      let refused = await catchUp(h);
      while (refused.status === 200 && Date.now() < deadline) refused = await catchUp(h);
      assert.equal(refused.status, 409, refused.text);
      const durable = await h.sql.query("SELECT count(*)::int AS n FROM synchro.scope_effects WHERE pk_text = 'c1'");
      // The materialization committed before every crash point.
      assert.equal(durable.rows[0].n, 1);
      await h.sql.query(`INSERT INTO public.notes (id) VALUES ('c2')`);
      assert.deepEqual(await control(h, 'restart'), { worker: 'running' });
      assert.equal((await catchUp(h)).status, 200);
      assert.deepEqual(await effectsOf(h, ['c0', 'c1', 'c2']), ['c0', 'c1', 'c2']);
      const tx = await h.sql.query('SELECT count(*)::int AS n, count(DISTINCT commit_lsn)::int AS d FROM synchro.wal_transactions');
      assert.equal(tx.rows[0].n, tx.rows[0].d);
    });
  });
}

test('a crash point must be one of the known points', async () => {
  await withControls(async (h) => {
    assert.equal((await h.control('/__control/capture/crash-at', { point: 'before-commit' })).status, 400);
    assert.equal((await h.control('/__control/capture/crash-at', {})).status, 400);
  });
});

test('the worker controls need a capture worker and an empty body', async () => {
  const h = await freshServer(env(), OWNED_NOTES_SQL, { start: { testControls: true } });
  try {
    assert.equal((await h.control('/__control/capture/stop', {})).status, 409);
  } finally {
    await h.close();
  }
  await withControls(async (h2) => {
    assert.equal((await h2.control('/__control/capture/stop', { now: true })).status, 400);
  });
});

test('a transaction committed before a column change is read against the registration it was written under', async () => {
  await withControls(async (h) => {
    assert.equal((await catchUp(h)).status, 200);
    // The worker reaches the earlier insert only after the column change and its reconfiguration committed.
    await control(h, 'stop');
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('r1', 'before the change')`);
    await h.sql.query(`BEGIN; ALTER TABLE public.notes ADD COLUMN note text; SELECT synchro.synchro_reconfigure_table('public.notes'); COMMIT;`);
    await h.sql.query(`INSERT INTO public.notes (id, body, note) VALUES ('r2', 'after the change', 'new')`);
    await control(h, 'restart');
    const caught = await catchUp(h);
    assert.equal(caught.status, 200, caught.text);
    assert.equal((await h.sql.query("SELECT count(*)::int AS n FROM synchro.wal_poison WHERE lifecycle = 'active'")).rows[0].n, 0, 'nothing was quarantined');
    const { rows } = await h.sql.query("SELECT pk_text, row_source ->> 'body' AS body, row_source ->> 'note' AS note FROM synchro.projections WHERE pk_text IN ('r1', 'r2') ORDER BY pk_text");
    assert.deepEqual(rows, [
      { pk_text: 'r1', body: 'before the change', note: null },
      { pk_text: 'r2', body: 'after the change', note: 'new' },
    ]);
  });
});

test('a hold keeps the materialization written but uncommitted; restart commits it, a kill rolls it back and a restart materializes it once', async () => {
  await withControls(async (h) => {
    assert.deepEqual((await h.control('/__control/capture/hold', {})).json, { worker: 'hold_armed' });
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('h1')`);
    assert.equal((await h.control('/__control/capture/held', { timeout_ms: 15_000 })).status, 200);
    // Held: nothing of the transaction is visible, and waiting for capture is refused at once.
    assert.deepEqual(await effectsOf(h, ['h1']), []);
    const refused = await catchUp(h);
    assert.equal(refused.status, 409);
    assert.equal(refused.json.error.code, 'capture_stopped');
    await control(h, 'restart');
    assert.equal((await catchUp(h)).status, 200);
    assert.deepEqual(await effectsOf(h, ['h1']), ['h1']);
    // The same again, ended by a kill this time.
    await h.control('/__control/capture/hold', {});
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('h2')`);
    await control(h, 'kill');
    assert.deepEqual(await effectsOf(h, ['h2']), []);
    await control(h, 'restart');
    assert.equal((await catchUp(h)).status, 200);
    assert.deepEqual(await effectsOf(h, ['h1', 'h2']), ['h1', 'h2']);
    const { rows } = await h.sql.query("SELECT count(*)::int AS n FROM synchro.wal_poison");
    assert.equal(rows[0].n, 0, 'a kill at the hold quarantines nothing');
  });
});

test('every materialized row event has one durable event record, named by its effects', async () => {
  await withControls(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('e1'), ('e2')`);
    assert.equal((await catchUp(h)).status, 200);
    const { rows } = await h.sql.query(
      `SELECT e.pk_text, count(ev.*)::int AS n FROM synchro.scope_effects e
         LEFT JOIN synchro.wal_events ev ON ev.stream_generation = e.stream_generation AND ev.commit_lsn = e.commit_lsn
                                        AND ev.event_ordinal = e.event_ordinal AND ev.pk_text = e.pk_text
        WHERE e.pk_text IN ('e1', 'e2') GROUP BY e.pk_text ORDER BY 1`,
    );
    assert.deepEqual(rows, [{ pk_text: 'e1', n: 1 }, { pk_text: 'e2', n: 1 }]);
  });
});

test('waiting for a hold that is not armed is refused', async () => {
  await withControls(async (h) => {
    const refused = await h.control('/__control/capture/held', { timeout_ms: 1_000 });
    assert.equal(refused.status, 409);
    assert.deepEqual(refused.json, { error: { code: 'not_offered', message: 'no hold of the capture worker is armed', control: 'capture.held' } });
  });
});

test('a worker whose sessions the database ended connects again when restarted, and materializes what was committed meanwhile', async () => {
  await withControls(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('s0')`);
    assert.equal((await catchUp(h)).status, 200);
    await h.sql.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'synchro-capture%'");
    // The worker learns of it from its connection's error event: wait for that, with a deadline.
    const deadline = Date.now() + 10_000;
    while (!(worker(h) as unknown as { sessionLost: boolean }).sessionLost) {
      if (Date.now() > deadline) throw new Error('the worker never saw its session end');
      await new Promise((resolve) => setImmediate(resolve));
    }
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('s1')`);
    assert.deepEqual(await control(h, 'restart'), { worker: 'running' });
    assert.equal((await catchUp(h)).status, 200);
    assert.deepEqual(await effectsOf(h, ['s0', 's1']), ['s0', 's1']);
  });
});

test('waiting for materialization ends at once, refused, when the worker stops with work left, rather than waiting for a poll that never comes', async () => {
  await withControls(async (h) => {
    const capture = h.server.capture as CaptureWorker;
    await capture.catchUp(15_000);
    await capture.stop();
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('after-stop')`);
    const started = Date.now();
    await assert.rejects(capture.catchUp(20_000), (e: Error) => e instanceof CaptureStopped);
    assert.ok(Date.now() - started < 10_000, `the wait took ${Date.now() - started} ms`);
  });
});
