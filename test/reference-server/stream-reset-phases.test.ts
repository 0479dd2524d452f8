/**
 * The operator's stream reset phase by phase (`capture/reset-start`,
 * `reset-continue`, `reset-abort`, `reset-kill-operator`): each held phase is
 * durable and leaves the old stream active; a killed operator session resumes
 * with the same candidate slot; catch-up applies what was committed after the
 * snapshot; a candidate slot that cannot carry the stream is refused.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect, controlOk, type Harness, OWNED_NOTES_SQL, useEnv, withCaptureServer } from './helpers.ts';
import { rebuildAll } from './sync-flow.ts';

const env = useEnv();
const withServer = (fn: (h: Harness) => Promise<void>) => withCaptureServer(env(), OWNED_NOTES_SQL, fn, { testControls: true });

const control = (h: Harness, name: string, body?: unknown) => controlOk(h, `capture/${name}`, body);
const catchUp = (h: Harness) => control(h, 'await', { timeout_ms: 15_000 });
const pointer = async (h: Harness) => (await h.sql.query('SELECT stream_generation AS g, slot_name AS s FROM synchro.wal_progress')).rows[0] as { g: string; s: string };
const record = async (h: Harness, id: unknown) =>
  (await h.sql.query('SELECT lifecycle, candidate_slot_name AS slot, consistent_point::text AS cp, caught_up_end_lsn::text AS caught FROM synchro.stream_resets WHERE reset_id = $1', [id])).rows[0];
const ids = (records: Array<{ pk: Record<string, unknown> }>) => records.map((r) => String(Object.values(r.pk)[0])).sort();

test('a reset held at catching_up, its operator killed, resumes on the same candidate slot and activates with what was committed meanwhile', async () => {
  await withServer(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('a', 'one')`);
    await catchUp(h);
    const old = await pointer(h);
    const held = await control(h, 'reset-start', { hold_at: 'catching_up' });
    assert.equal(held.lifecycle, 'catching_up');
    const before = await record(h, held.reset_id);
    assert.equal(before.lifecycle, 'catching_up');
    assert.deepEqual(await pointer(h), old, 'nothing activated while held');
    const staged = (await h.sql.query('SELECT pk_text FROM synchro.reset_staged_rows WHERE reset_id = $1', [held.reset_id])).rows.map((r) => r.pk_text);
    assert.deepEqual(staged, ['a'], 'the snapshot is staged apart from the projection');

    const killed = await control(h, 'reset-kill-operator');
    assert.ok((killed.terminated as number) >= 1, 'the operator session was terminated');
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('b', 'two')`);
    assert.deepEqual(await pointer(h), old);

    const done = await control(h, 'reset-continue');
    assert.equal(done.lifecycle, 'activated');
    assert.equal(done.reset_id, held.reset_id, 'the same reset resumed');
    const after = await record(h, held.reset_id);
    assert.equal(after.slot, before.slot);
    assert.equal(after.cp, before.cp);
    assert.deepEqual(await pointer(h), { g: done.stream_generation, s: before.slot });
    await catchUp(h);
    const s = await connect(h);
    assert.deepEqual(ids((await rebuildAll(h, s, 'user:u1')).records), ['a', 'b'], 'catch-up brought the row committed after the snapshot');
  });
});

test('a reset whose snapshot connection closed before staging ends aborted; a dropped candidate slot is refused at activation', async () => {
  await withServer(async (h) => {
    await catchUp(h);
    const old = await pointer(h);
    const held = await control(h, 'reset-start', { hold_at: 'preparing' });
    const walsenders = (await h.sql.query("SELECT pid FROM pg_stat_activity WHERE backend_type = 'walsender' AND datname = current_database()")).rows.map((r) => r.pid);
    assert.equal(walsenders.length, 1, 'the replication connection that created the candidate slot is open');
    await h.sql.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [walsenders]);
    const deadline = Date.now() + 10_000;
    while ((await h.sql.query("SELECT 1 FROM pg_stat_activity WHERE backend_type = 'walsender' AND datname = current_database()")).rowCount !== 0) assert.ok(Date.now() < deadline, 'the walsender ended');
    const ended = await control(h, 'reset-continue');
    assert.equal(ended.lifecycle, 'aborted');
    assert.equal((await record(h, held.reset_id)).lifecycle, 'aborted');
    assert.deepEqual(await pointer(h), old);

    const second = await control(h, 'reset-start', { hold_at: 'catching_up' });
    await h.sql.query('SELECT pg_drop_replication_slot($1)', [second.slot]);
    const refused = await h.control('/__control/capture/reset-continue', {});
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.json.error.code, 'refused');
    assert.equal((await record(h, second.reset_id)).lifecycle, 'catching_up');
    assert.deepEqual(await pointer(h), old);
    await control(h, 'reset-abort');
    assert.equal((await record(h, second.reset_id)).lifecycle, 'aborted');
    await catchUp(h);
  });
});

test('the staged baseline keeps what the snapshot held while catch-up applies what came after it', async () => {
  await withServer(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('a', 'one')`);
    await catchUp(h);
    const held = await control(h, 'reset-start', { hold_at: 'baseline_staged' });
    assert.equal(held.lifecycle, 'baseline_staged');
    await h.sql.query(`UPDATE public.notes SET body = 'two' WHERE id = 'a'`);
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('b', 'three')`);
    const done = await control(h, 'reset-continue');
    assert.equal(done.lifecycle, 'activated');
    const staged = (
      await h.sql.query(
        `SELECT pk_text AS k, snapshot_image ->> 'body' AS at_snapshot, snapshot_version IS NOT NULL AS from_snapshot, row_image ->> 'body' AS now, staged_from <> 'snapshot' AS from_wal
           FROM synchro.reset_staged_rows WHERE reset_id = $1 ORDER BY pk_text`,
        [held.reset_id],
      )
    ).rows;
    assert.deepEqual(staged, [
      { k: 'a', at_snapshot: 'one', from_snapshot: true, now: 'two', from_wal: true },
      { k: 'b', at_snapshot: null, from_snapshot: false, now: 'three', from_wal: true },
    ]);
  });
});
