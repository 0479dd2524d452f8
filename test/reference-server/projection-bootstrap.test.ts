/**
 * The Class 3 projection bootstrap phase by phase (`bootstrap/hold`,
 * `release`, `resume`, `kill`, `activate`): a step whose added field already
 * holds values is not published until its bootstrap activates; the values
 * come from the candidate slot's exported snapshot and catch-up, not a live
 * read; the active slot and stream generation stay; a coordinator killed
 * before staging starts over on a new slot, one killed later resumes on the
 * same one; a barrier the main worker has not made durable is refused.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect, controlOk, type Harness, OWNED_NOTES_SQL, useEnv, withCaptureServer } from './helpers.ts';
import { pull, rebuildAll } from './sync-flow.ts';

const env = useEnv();
const withServer = (fn: (h: Harness) => Promise<void>) => withCaptureServer(env(), OWNED_NOTES_SQL, fn, { testControls: true });

const control = controlOk;
const awaitCapture = (h: Harness) => control(h, 'capture/await', { timeout_ms: 15_000 });
const pointer = async (h: Harness) => (await h.sql.query('SELECT stream_generation AS g, slot_name AS s FROM synchro.wal_progress')).rows[0];
const record = async (h: Harness, id: unknown) =>
  (
    await h.sql.query(
      `SELECT lifecycle, candidate_slot_name AS slot, consistent_point::text AS cp, slot_type, plugin, slot_temporary, database_name = current_database() AS same_db,
              exported_snapshot_name AS snap, activation_barrier::text AS barrier, last_refusal FROM synchro.projection_bootstraps WHERE bootstrap_id = $1`,
      [id],
    )
  ).rows[0];
const schemaVersion = async (h: Harness) => (await connect(h)).schema.version;

/** Two notes with ranks 3 and 5 captured, then `rank` registered: a step that needs history. */
async function publishRank(h: Harness): Promise<number> {
  await h.sql.query("ALTER TABLE public.notes ADD COLUMN rank integer; INSERT INTO public.notes (id, body, rank) VALUES ('a', 'one', 3), ('b', 'two', 5)");
  await awaitCapture(h);
  const before = await schemaVersion(h);
  await h.sql.query("SELECT synchro.synchro_reconfigure_table('public.notes')");
  await awaitCapture(h);
  return before;
}

async function ranks(h: Harness): Promise<Record<string, unknown>> {
  const s = await connect(h);
  const rank = s.field('notes', 'rank');
  const rebuilt = await rebuildAll(h, s, 'user:u1');
  return Object.fromEntries(rebuilt.records.map((r) => [String(Object.values(r.pk)[0]), r.row[rank]]));
}

test('a held bootstrap keeps the old manifest; writes during it arrive through catch-up; activation keeps the stream', async () => {
  await withServer(async (h) => {
    const before = await publishRank(h);
    const stream = await pointer(h);
    const held = await control(h, 'bootstrap/hold', { phase: 'baseline_staged' });
    assert.equal(held.lifecycle, 'baseline_staged');
    assert.equal(await schemaVersion(h), before, 'connect answers with the previous manifest while the bootstrap is held');
    const s = await connect(h);
    const served = await pull(h, s, { 'user:u1': (await rebuildAll(h, s, 'user:u1')).finalCursor ?? null });
    assert.equal(served.status, 200, `a pull under the previous manifest is served while held: ${served.text}`);
    await h.sql.query("UPDATE public.notes SET rank = 9 WHERE id = 'a'; INSERT INTO public.notes (id, body, rank) VALUES ('c', 'three', 1)");
    await awaitCapture(h);
    const done = await control(h, 'bootstrap/release');
    assert.equal(done.lifecycle, 'activated');
    assert.equal(done.bootstrap_id, held.bootstrap_id);
    const r = await record(h, held.bootstrap_id);
    assert.deepEqual([r.slot_type, r.plugin, r.slot_temporary, r.same_db, typeof r.snap, typeof r.barrier], ['logical', 'pgoutput', false, true, 'string', 'string']);
    const reached = (await h.sql.query('SELECT processed_end_lsn >= $1::pg_lsn AS ok FROM synchro.wal_progress', [r.barrier])).rows[0].ok;
    assert.equal(reached, true, 'the barrier is a position the main worker made durable');
    assert.deepEqual(await pointer(h), stream, 'no new stream generation, the same active slot');
    assert.equal((await h.sql.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [r.slot])).rowCount, 0, 'the candidate slot is dropped after activation');
    assert.equal(await schemaVersion(h), before + 1);
    assert.deepEqual(await ranks(h), { a: 9, b: 5, c: 1 });
  });
});

test('killed while preparing a bootstrap starts over on a new slot; killed later it resumes on the same slot', async () => {
  await withServer(async (h) => {
    const before = await publishRank(h);
    const first = await control(h, 'bootstrap/hold', { phase: 'preparing' });
    assert.ok((await control(h, 'bootstrap/kill')).terminated as number >= 1);
    await h.sql.query("UPDATE public.notes SET rank = 7 WHERE id = 'b'");
    const second = await control(h, 'bootstrap/hold', { phase: 'catching_up' });
    assert.notEqual(second.bootstrap_id, first.bootstrap_id, 'a bootstrap whose snapshot was lost is not resumed');
    assert.equal((await record(h, first.bootstrap_id)).lifecycle, 'aborted');
    assert.equal((await h.sql.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [first.slot])).rowCount, 0, 'the aborted candidate slot is dropped');
    const staged = await record(h, second.bootstrap_id);
    await control(h, 'bootstrap/kill');
    assert.equal(await schemaVersion(h), before);
    const done = await control(h, 'bootstrap/resume');
    assert.equal(done.bootstrap_id, second.bootstrap_id);
    const after = await record(h, second.bootstrap_id);
    assert.deepEqual([after.lifecycle, after.slot, after.cp], ['activated', staged.slot, staged.cp]);
    assert.deepEqual(await ranks(h), { a: 3, b: 7 });
  });
});

test('activation with a barrier the paused main worker has not made durable is refused and activates nothing', async () => {
  await withServer(async (h) => {
    const before = await publishRank(h);
    await control(h, 'capture/stop');
    await h.sql.query("UPDATE public.notes SET rank = 4 WHERE id = 'a'");
    const held = await control(h, 'bootstrap/hold', { phase: 'catching_up', past_durable_barrier: true });
    const refused = await h.control('/__control/bootstrap/activate', {});
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.json.error.code, 'refused');
    const r = await record(h, held.bootstrap_id);
    assert.equal(r.lifecycle, 'catching_up');
    assert.match(r.last_refusal, /durable/);
    assert.equal(await schemaVersion(h), before);
    await control(h, 'capture/restart');
    assert.equal((await control(h, 'bootstrap/release')).lifecycle, 'activated');
    assert.deepEqual(await ranks(h), { a: 4, b: 5 });
  });
});
