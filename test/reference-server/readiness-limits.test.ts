/**
 * Readiness limits, the server clock and a cleared acknowledgement boundary
 * (sql/054, sql/055, decisions 212-217): each seen through the health detail
 * the extension computes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CaptureWorker } from '../../reference/server/capture/worker.ts';
import { catchUp, type Harness, OWNED_NOTES_SQL, useEnv, withCaptureServer } from './helpers.ts';

const env = useEnv();
const withControls = (fn: (h: Harness) => Promise<void>) => withCaptureServer(env(), OWNED_NOTES_SQL, fn, { testControls: true });

const detail = async (h: Harness) => (await h.sql.query('SELECT synchro.synchro_health_detail() AS d')).rows[0].d as { checks: Record<string, { state: string; reason: string }>; observations: Record<string, number | null> };

test('a maximum counts only when it reads as a finite number above zero', async () => {
  await withControls(async (h) => {
    const cases: Array<[string | null, number | null]> = [
      ['30', 30], [' 2.5 ', 2.5], ['1e3', 1000], [null, null], ['', null], ['0', null], ['-5', null], ['Infinity', null], ['inf', null],
      ['NaN', null], ['1e400', null], ['thirty', null], ['64MB?', null],
    ];
    for (const [text, expected] of cases) {
      const { rows } = await h.sql.query('SELECT synchro.positive_limit($1) AS v', [text]);
      assert.equal(rows[0].v, expected, `positive_limit(${JSON.stringify(text)})`);
    }
    await catchUp(h);
    await h.sql.query("UPDATE synchro.capture_limits SET max_heartbeat_age_seconds = 'Infinity'");
    assert.deepEqual((await detail(h)).checks.heartbeat, { state: 'failed', reason: 'invalid_limit' });
  });
});

test('a moved server clock ages the heartbeat the database stamped, and a heartbeat in the future is not fresh', async () => {
  await withControls(async (h) => {
    await catchUp(h);
    assert.equal((await detail(h)).checks.heartbeat?.state, 'ok');
    assert.equal((await h.control('/__control/clock/advance', { milliseconds: 120_000 })).status, 200);
    const aged = await detail(h);
    assert.ok((aged.observations.heartbeat_age_seconds as number) >= 120, JSON.stringify(aged.observations));
    assert.equal(aged.checks.heartbeat?.state, 'failed');
    assert.equal((await h.control('/__control/clock/set', { now: new Date().toISOString() })).status, 200);
    await h.sql.query("UPDATE synchro.wal_worker_state SET heartbeat_at = clock_timestamp() + interval '1 hour'");
    assert.deepEqual((await detail(h)).checks.heartbeat, { state: 'failed', reason: 'heartbeat_stale' });
  });
});

test('a cleared acknowledgement boundary fails materialization_progress and the worker waits instead of writing over it', async () => {
  await withControls(async (h) => {
    await catchUp(h);
    const { rows } = await h.sql.query('SELECT acknowledged_end_lsn::text AS a FROM synchro.wal_progress');
    await h.sql.query('UPDATE synchro.wal_progress SET acknowledged_end_lsn = NULL');
    assert.equal((await detail(h)).checks.materialization_progress?.state, 'failed');
    const worker = h.server.capture as CaptureWorker;
    const deadline = Date.now() + 10_000;
    for (;;) {
      worker.kick();
      const state = (await h.sql.query('SELECT state FROM synchro.wal_worker_state')).rows[0].state;
      if (state === 'blocked') break;
      assert.ok(Date.now() < deadline, `the worker did not block on the cleared boundary (state ${state})`);
    }
    assert.equal((await h.sql.query('SELECT acknowledged_end_lsn FROM synchro.wal_progress')).rows[0].acknowledged_end_lsn, null);
    await h.sql.query('UPDATE synchro.wal_progress SET acknowledged_end_lsn = $1::pg_lsn', [rows[0].a]);
    await catchUp(h);
    assert.equal((await detail(h)).checks.materialization_progress?.state, 'ok');
  });
});
