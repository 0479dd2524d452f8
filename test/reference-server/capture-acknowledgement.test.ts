/**
 * The capture worker's slot acknowledgement (SYNC-CAP-005): a wait for
 * capture that runs into an armed hold is refused instead of hanging, a
 * refused slot blocks the worker without touching it, and the decode row
 * limit setting only shrinks batches.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Harness, OWNED_NOTES_SQL, useEnv, withCaptureServer } from './helpers.ts';

const env = useEnv();
const withControls = (fn: (h: Harness) => Promise<void>) => withCaptureServer(env(), OWNED_NOTES_SQL, fn, { testControls: true });
const catchUp = (h: Harness) => h.control('/__control/capture/await', { timeout_ms: 15_000 });

async function control(h: Harness, name: 'stop' | 'restart' | 'kill' | 'hold'): Promise<void> {
  const res = await h.control(`/__control/capture/${name}`, {});
  assert.equal(res.status, 200, res.text);
}

/** Once any poll in flight has written its acknowledgement record (it follows the slot advance by one statement). */
async function settled(h: Harness): Promise<{ processed: string; ack: string; slot: string }> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const p = await progressAndSlot(h);
    if (p.slot === p.ack || Date.now() > deadline) return p;
  }
}

const progressAndSlot = async (h: Harness) =>
  (
    await h.sql.query(
      `SELECT w.processed_end_lsn::text AS processed, w.acknowledged_end_lsn::text AS ack, s.confirmed_flush_lsn::text AS slot
         FROM synchro.wal_progress w JOIN pg_replication_slots s ON s.slot_name = w.slot_name`,
    )
  ).rows[0] as { processed: string; ack: string; slot: string };

test('a wait for capture that runs into an armed hold is refused once the worker holds, and the slot stays before the held transaction', async () => {
  await withControls(async (h) => {
    assert.equal((await catchUp(h)).status, 200);
    await control(h, 'hold');
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('a1')`);
    const refused = await catchUp(h);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.json.error.code, 'capture_stopped');
    // Held: nothing of the transaction is recorded, and the slot and the acknowledgement stay on the processed boundary before it.
    const held = await progressAndSlot(h);
    assert.equal((await h.sql.query("SELECT count(*)::int AS n FROM synchro.wal_events WHERE pk_text = 'a1'")).rows[0].n, 0);
    assert.equal(held.slot, held.ack);
    assert.equal(held.ack, held.processed);
    await control(h, 'restart');
    assert.equal((await catchUp(h)).status, 200);
    const after = await settled(h);
    assert.equal(after.slot, after.ack);
  });
});

test('a slot advanced past the processed boundary is refused at start: the worker blocks and moves nothing', async () => {
  await withControls(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('r1')`);
    assert.equal((await catchUp(h)).status, 200);
    await control(h, 'kill');
    const { rows } = await h.sql.query('SELECT slot_name FROM synchro.wal_progress');
    await h.sql.query("SELECT pg_logical_emit_message(false, 'test_tamper', 'x', true)");
    await h.sql.query('SELECT pg_replication_slot_advance($1, pg_current_wal_flush_lsn())', [rows[0].slot_name]);
    const tampered = await progressAndSlot(h);
    await control(h, 'restart');
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('r2')`);
    const refused = await catchUp(h);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.json.error.code, 'capture_blocked');
    assert.deepEqual(await progressAndSlot(h), tampered);
    assert.equal((await h.sql.query('SELECT state FROM synchro.wal_worker_state')).rows[0].state, 'blocked');
    const n = (await h.sql.query("SELECT count(*)::int AS n FROM synchro.scope_effects WHERE pk_text = 'r2'")).rows[0].n;
    assert.equal(n, 0);
  });
});

test('a decode row limit of 1 still materializes every transaction whole and in order, past messages outside transactions', async () => {
  await withControls(async (h) => {
    await h.sql.query('UPDATE synchro.capture_limits SET decode_row_limit = 1');
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('d1'), ('d2'), ('d3')`);
    // A message outside any transaction between the two: a peek cut short by the limit may hold nothing else.
    await h.sql.query("SELECT pg_logical_emit_message(false, 'test_between', 'x', true)");
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('d4')`);
    assert.equal((await catchUp(h)).status, 200);
    const { rows } = await h.sql.query("SELECT pk_text FROM synchro.scope_effects WHERE pk_text LIKE 'd%' ORDER BY commit_lsn, event_ordinal");
    assert.deepEqual(
      rows.map((r) => r.pk_text),
      ['d1', 'd2', 'd3', 'd4'],
    );
    const p = await settled(h);
    assert.equal(p.slot, p.ack);
  });
});
