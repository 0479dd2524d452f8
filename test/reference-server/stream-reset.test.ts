/**
 * Operator stream reset (`POST /__control/capture/reset-stream`): a quarantine no retry
 * clears is left behind by a new stream generation on a new permanent slot,
 * whose baseline is the source state at the candidate slot's consistent point
 * and reaches clients only through rebuild.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect, controlOk, type Harness, OWNED_NOTES_SQL, useEnv, withCaptureServer } from './helpers.ts';
import { pull, rebuildAll } from './sync-flow.ts';

const env = useEnv();
const withServer = (fn: (h: Harness) => Promise<void>) => withCaptureServer(env(), OWNED_NOTES_SQL, fn, { testControls: true });

const control = (h: Harness, name: string, body?: unknown) => controlOk(h, `capture/${name}`, body);
const catchUp = (h: Harness) => control(h, 'await', { timeout_ms: 15_000 });

const progress = async (h: Harness) =>
  (await h.sql.query('SELECT stream_generation AS g, slot_name AS s, generation_start_lsn::text AS start FROM synchro.wal_progress')).rows[0] as { g: string; s: string; start: string };

const ids = (records: Array<{ pk: Record<string, unknown> }>) => records.map((r) => String(Object.values(r.pk)[0])).sort();

test('a reset leaves a quarantine behind: new generation and slot, old cursors stale, rebuild serves the source state, later writes arrive incrementally', async () => {
  await withServer(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('a', 'one'), ('b', 'two')`);
    await catchUp(h);
    const s = await connect(h);
    const first = await rebuildAll(h, s, 'user:u1');
    assert.deepEqual(ids(first.records), ['a', 'b']);
    const old = await progress(h);

    // The next transaction is quarantined and blocks everything after it.
    await control(h, 'poison');
    await h.sql.query(`UPDATE public.notes SET body = 'changed' WHERE id = 'a'`);
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('c', 'three')`);
    await h.sql.query(`UPDATE public.notes SET deleted_at = now() WHERE id = 'b'`);
    assert.equal((await h.control('/__control/capture/await', { timeout_ms: 15_000 })).status, 409);
    const notReady = await h.get('/ready');
    assert.equal(notReady.status, 503, notReady.text);

    const reset = await control(h, 'reset-stream');
    const now = await progress(h);
    assert.notEqual(now.g, old.g, 'a new stream generation');
    assert.notEqual(now.s, old.s, 'a new slot');
    assert.equal(reset.stream_generation, now.g);
    assert.equal(reset.slot, now.s);
    const slots = (await h.sql.query("SELECT slot_name, slot_type, plugin, temporary, database = current_database() AS here FROM pg_replication_slots WHERE slot_name LIKE 'synchro_%'")).rows;
    assert.deepEqual(slots, [{ slot_name: now.s, slot_type: 'logical', plugin: 'pgoutput', temporary: false, here: true }], 'only the new permanent slot remains');
    const poison = (await h.sql.query('SELECT lifecycle FROM synchro.wal_poison')).rows.map((r) => r.lifecycle);
    assert.deepEqual(poison, ['reset']);
    assert.equal((await h.sql.query('SELECT count(*)::int AS n FROM synchro.scope_effects')).rows[0].n, 0, 'the baseline makes no incremental effect');

    // The cursor of the old generation is stale: the scope must rebuild.
    const stale = await pull(h, s, { 'user:u1': first.finalCursor });
    assert.equal(stale.status, 200, stale.text);
    assert.deepEqual(stale.json.rebuild, ['user:u1']);
    assert.deepEqual(stale.json.changes, []);

    const again = await rebuildAll(h, s, 'user:u1');
    const byId = new Map(again.records.map((r) => [String(Object.values(r.pk)[0]), r]));
    assert.deepEqual([...byId.keys()].sort(), ['a', 'c'], 'the soft-deleted row is absent from the rebuild, the new one present');
    assert.equal(byId.get('a')?.row[s.field('notes', 'body')], 'changed');

    // After the reset the worker runs on the new slot: a later write reaches the rebuilt cursor incrementally.
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('d', 'four')`);
    await catchUp(h);
    const next = await pull(h, s, { 'user:u1': again.finalCursor });
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(next.json.rebuild, []);
    assert.deepEqual(
      next.json.changes.map((c: { op: string; pk: Record<string, unknown> }) => `${c.op}:${Object.values(c.pk)[0]}`),
      ['upsert:d'],
    );
    const ready = await h.get('/ready');
    assert.equal(ready.status, 200, ready.text);
  });
});

test('a reset that fails activates nothing: the old generation, slot and quarantine stay, and the candidate slot is gone', async () => {
  await withServer(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('a')`);
    await catchUp(h);
    const old = await progress(h);
    // A membership function that fails on the baseline makes staging fail inside the reset transaction.
    await h.sql.query(`CREATE OR REPLACE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
      SELECT ('membership unavailable for ' || p_id)::integer::text FROM synchro_projection.notes WHERE id = p_id; END`);
    const res = await h.control('/__control/capture/reset-stream', {});
    assert.equal(res.status, 500, res.text);
    assert.deepEqual(await progress(h), old);
    const slots = (await h.sql.query("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'synchro_%'")).rows.map((r) => r.slot_name);
    assert.deepEqual(slots, [old.s]);
    const resets = (await h.sql.query('SELECT lifecycle FROM synchro.stream_resets')).rows.map((r) => r.lifecycle);
    assert.deepEqual(resets, ['aborted']);
    assert.equal((await h.sql.query("SELECT count(*)::int AS n FROM synchro.projections WHERE pk_text = 'a'")).rows[0].n, 1, 'the old projections stay');
  });
});

test('a reset interrupted before activation fails the stream_reset readiness check until the worker restarts and discards it with its candidate slot', async () => {
  await withServer(async (h) => {
    await catchUp(h);
    const old = await progress(h);
    // What a process death after slot creation leaves behind: the durable row and a permanent candidate slot.
    await h.sql.query("SELECT pg_create_logical_replication_slot('synchro_reset_interrupted', 'pgoutput')");
    await h.sql.query("INSERT INTO synchro.stream_resets (reset_id, candidate_slot_name, lifecycle) VALUES (gen_random_uuid(), 'synchro_reset_interrupted', 'preparing')");
    const detail = (await h.sql.query('SELECT synchro.synchro_health_detail() AS d')).rows[0].d;
    assert.deepEqual(detail.checks.stream_reset, { state: 'failed', reason: 'stream_reset_incomplete' });

    await control(h, 'kill');
    await control(h, 'restart');
    const resets = (await h.sql.query('SELECT lifecycle FROM synchro.stream_resets')).rows.map((r) => r.lifecycle);
    assert.deepEqual(resets, ['aborted']);
    const slots = (await h.sql.query("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'synchro_%'")).rows.map((r) => r.slot_name);
    assert.deepEqual(slots, [old.s]);
    assert.deepEqual(await progress(h), old, 'the old stream stays active');
    await catchUp(h);
    const after = (await h.sql.query('SELECT synchro.synchro_health_detail() AS d')).rows[0].d;
    assert.deepEqual(after.checks.stream_reset, { state: 'ok', reason: 'ok' });
  });
});
