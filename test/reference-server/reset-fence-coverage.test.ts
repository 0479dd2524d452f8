/**
 * Per-fence coverage of the operator's stream reset (SYNC-CAP-013, SQL 081):
 * fences the old stream never materialized get verified `reset_baseline`
 * records bound to the reset at activation, a row changed several times takes
 * its last covered fence's version, a deleted identity stays staged deleted,
 * fences after the snapshot are recorded as materialized by catch-up, and an
 * activated record cannot change. While a quarantine blocks capture, a client
 * with its own uncovered write hears capture_pending, the others capture_blocked.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect, controlOk, type Harness, insertNote, OWNED_NOTES_SQL, pushBody, useEnv, withCaptureServer } from './helpers.ts';
import { pull } from './sync-flow.ts';

const env = useEnv();
const withServer = (fn: (h: Harness) => Promise<void>) => withCaptureServer(env(), OWNED_NOTES_SQL, fn, { testControls: true });

const control = (h: Harness, name: string, body?: unknown) => controlOk(h, `capture/${name}`, body);

interface Coverage {
  fence_id: string;
  coverage: string;
  pk_text: string;
  server_version: string;
  row_state: string;
  verified: boolean;
  target_generation: string | null;
}

const coverage = async (h: Harness, resetId: unknown): Promise<Coverage[]> =>
  (await h.sql.query(
    `SELECT fence_id::text, coverage, pk_text, server_version, row_state, verified_at IS NOT NULL AS verified, target_generation
       FROM synchro.reset_fence_coverage WHERE reset_id = $1 ORDER BY source_commit_lsn, dml_ordinal`,
    [resetId],
  )).rows;
const staged = async (h: Harness, resetId: unknown) =>
  (await h.sql.query('SELECT pk_text, server_version, state FROM synchro.reset_staged_rows WHERE reset_id = $1 ORDER BY pk_text', [resetId])).rows as { pk_text: string; server_version: string; state: string }[];
const versionOf = async (h: Harness, pk: string) => (await h.sql.query("SELECT server_version AS v FROM synchro.row_versions WHERE table_id = (SELECT table_id FROM synchro.relations WHERE physical_relation = 'notes') AND pk_text = $1", [pk])).rows[0]?.v as string;

test('fences left unmaterialized before the snapshot get verified baseline coverage bound to the activated generation', async () => {
  await withServer(async (h) => {
    await h.sql.query("INSERT INTO public.notes (id, body) VALUES ('a', 'one'), ('d', 'doomed')");
    await control(h, 'await', { timeout_ms: 15_000 });
    await control(h, 'stop');
    // Three fences of one row in one transaction, and a hard delete: none materialized by the old stream.
    await h.sql.query("BEGIN; UPDATE public.notes SET body = 'two' WHERE id = 'a'; UPDATE public.notes SET body = 'three' WHERE id = 'a'; COMMIT");
    await h.sql.query("DELETE FROM public.notes WHERE id = 'd'");
    const last = await versionOf(h, 'a');
    const deletion = await versionOf(h, 'd');

    const done = await control(h, 'reset-start');
    assert.equal(done.lifecycle, 'activated');
    const records = await coverage(h, done.reset_id);
    assert.deepEqual(
      records.map((r) => [r.coverage, r.pk_text, r.row_state, r.verified, r.target_generation]),
      [
        ['reset_baseline', 'a', 'live', true, done.stream_generation],
        ['reset_baseline', 'a', 'live', true, done.stream_generation],
        ['reset_baseline', 'd', 'deleted', true, done.stream_generation],
      ],
    );
    assert.equal(new Set(records.map((r) => r.fence_id)).size, 3, 'one record per fence');
    assert.equal(records[1]?.server_version, last, 'the last covered fence of row a carries its final version');
    assert.deepEqual(await staged(h, done.reset_id), [
      { pk_text: 'a', server_version: last, state: 'live' },
      { pk_text: 'd', server_version: deletion, state: 'deleted' },
    ]);
    await assert.rejects(h.sql.query("UPDATE synchro.reset_fence_coverage SET coverage = 'materialized' WHERE reset_id = $1", [done.reset_id]), /cannot change/);
  });
});

test('a fence committed after the candidate slot exists is covered by catch-up, not by the baseline', async () => {
  await withServer(async (h) => {
    await h.sql.query("INSERT INTO public.notes (id, body) VALUES ('a', 'one')");
    await control(h, 'await', { timeout_ms: 15_000 });
    const held = await control(h, 'reset-start', { hold_at: 'preparing' });
    await h.sql.query("UPDATE public.notes SET body = 'later' WHERE id = 'a'");
    const later = await versionOf(h, 'a');
    const done = await control(h, 'reset-continue');
    assert.equal(done.lifecycle, 'activated');
    assert.equal(done.reset_id, held.reset_id);
    assert.deepEqual(
      (await coverage(h, done.reset_id)).map((r) => [r.coverage, r.pk_text, r.server_version, r.target_generation]),
      [['materialized', 'a', later, done.stream_generation]],
    );
  });
});

test('behind a quarantine the pushing client hears capture_pending and another client capture_blocked', async () => {
  await withServer(async (h) => {
    const pusher = await connect(h);
    const other = await connect(h);
    await control(h, 'poison');
    await h.sql.query("INSERT INTO public.notes (id) VALUES ('poisoned')");
    const deadline = Date.now() + 15_000;
    while ((await h.sql.query("SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active'")).rowCount === 0) assert.ok(Date.now() < deadline, 'the transaction was quarantined');
    const pushed = await h.post('/sync/push', pushBody(pusher, [insertNote(pusher, 'waiting')]));
    assert.equal(pushed.status, 200, pushed.text);
    const own = await pull(h, pusher, { 'user:u1': null });
    assert.equal(own.status, 503, own.text);
    assert.equal(own.json.error.code, 'capture_pending');
    const blocked = await pull(h, other, { 'user:u1': null });
    assert.equal(blocked.status, 503, blocked.text);
    assert.deepEqual([blocked.json.error.code, blocked.json.error.reason], ['temporary_unavailable', 'capture_blocked']);
  });
});
