import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterEach, test } from 'node:test';
import { advanceClock, resetClock } from '../../reference/server/core/clock.ts';
import { catchUp, connect, freshServer, type Harness, insertNote, pushBody, type Session, useEnv } from './helpers.ts';
import { pull, rebuildAll, rebuildPage } from './sync-flow.ts';

const env = useEnv();
afterEach(() => resetClock());

const SETUP = `
CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL DEFAULT 'u1', body text NOT NULL DEFAULT '',
  updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz);
SELECT synchro.synchro_prepare_projection_view('public.notes');
CREATE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id;
END;
INSERT INTO public.notes (id, body) SELECT 'row' || g, 'original ' || g FROM generate_series(1, 5) g;
SELECT synchro.synchro_register_table('public.notes', membership_fn => 'public.note_scopes',
  updated_at_col => 'updated_at', deleted_at_col => 'deleted_at');
`;

async function withCapture(fn: (h: Harness, s: Session) => Promise<void>): Promise<void> {
  const h = await freshServer(env(), SETUP, { capture: true });
  try {
    await (h.server.capture as NonNullable<Harness['server']['capture']>).catchUp(15_000);
    await fn(h, await connect(h));
  } finally {
    await h.close();
  }
}

const S = 'user:u1';

test('a rebuild pages an immutable snapshot: later writes change no page, and the final cursor then pulls them', async () => {
  await withCapture(async (h, s) => {
    const id = randomUUID();
    const p1 = await rebuildPage(h, s, S, id, null, 2);
    assert.equal(p1.status, 200, p1.text);
    assert.deepEqual(p1.json.records.map((r: { pk: Record<string, string> }) => Object.values(r.pk)[0]), ['row1', 'row2']);
    await h.sql.query(`UPDATE public.notes SET body = 'changed' WHERE id = 'row4'`);
    await h.sql.query(`DELETE FROM public.notes WHERE id = 'row5'`);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('row6')`);
    await h.sql.query(`UPDATE public.notes SET owner = 'u9' WHERE id = 'row3'`);
    await catchUp(h);
    const p2 = await rebuildPage(h, s, S, id, p1.json.cursor, 2);
    const p3 = await rebuildPage(h, s, S, id, p2.json.cursor, 2);
    const records = [...p1.json.records, ...p2.json.records, ...p3.json.records];
    assert.deepEqual(records.map((r: { row: Record<string, string> }) => r.row[s.field('notes', 'body')]), [1, 2, 3, 4, 5].map((i) => `original ${i}`));
    assert.equal(p3.json.has_more, false);
    // Replays are byte-identical.
    assert.equal((await rebuildPage(h, s, S, id, p1.json.cursor, 2)).text, p2.text);
    assert.equal((await rebuildPage(h, s, S, id, null, 2)).text, p1.text);
    const after = await pull(h, s, { [S]: p3.json.final_scope_cursor });
    assert.equal(after.status, 200, after.text);
    assert.deepEqual(
      after.json.changes.map((c: { pk: Record<string, string>; op: string }) => [Object.values(c.pk)[0], c.op]),
      [['row4', 'upsert'], ['row5', 'delete'], ['row6', 'upsert'], ['row3', 'delete']],
    );
  });
});

test('an accepted push by the rebuilding client restarts the attempt; a conflict-free replay does not', async () => {
  await withCapture(async (h, s) => {
    const id = randomUUID();
    const p1 = await rebuildPage(h, s, S, id, null, 2);
    const body = pushBody(s, [insertNote(s, 'mine')]);
    assert.equal((await h.post('/sync/push', body)).status, 200);
    await catchUp(h);
    for (const cursor of [p1.json.cursor, null]) {
      const r = await rebuildPage(h, s, S, id, cursor, 2);
      assert.equal(r.status, 409, r.text);
      assert.equal(r.json.error.code, 'rebuild_restart_required');
      assert.equal(r.json.error.scope_id, S);
      assert.equal(r.json.records, undefined);
    }
    // A new attempt works, and replaying the same push batch later does not invalidate it.
    const fresh = randomUUID();
    const q1 = await rebuildPage(h, s, S, fresh, null, 2);
    assert.equal((await h.post('/sync/push', body)).status, 200);
    assert.equal((await rebuildPage(h, s, S, fresh, q1.json.cursor, 2)).status, 200);
  });
});

test('continuations are bound: another limit, rebuild id, scope, client or kind of token is 400', async () => {
  await withCapture(async (h, s) => {
    const id = randomUUID();
    const p1 = await rebuildPage(h, s, S, id, null, 2);
    const t = p1.json.cursor as string;
    assert.equal((await rebuildPage(h, s, S, id, t, 3)).status, 400);
    assert.equal((await rebuildPage(h, s, S, randomUUID(), t, 2)).status, 400);
    const other = await connect(h);
    const foreign = await h.post('/sync/rebuild', { client_id: other.clientId, client_generation: other.generation, schema: other.schema, scope: S, rebuild_id: id, cursor: t, limit: 2 });
    assert.equal(foreign.status, 400);
    assert.equal((await rebuildPage(h, s, S, id, `${t.slice(0, -2)}AA`, 2)).status, 400);
    const incremental = (await rebuildAll(h, s, S)).finalCursor;
    assert.equal((await rebuildPage(h, s, S, id, incremental, 2)).status, 400);
    // And a rebuild continuation is no pull cursor.
    assert.equal((await pull(h, s, { [S]: t })).status, 400);
    assert.equal((await rebuildPage(h, s, 'user:u2', randomUUID(), null, 2)).status, 400);
    assert.equal((await rebuildPage(h, s, S, id, t, 2)).status, 200);
  });
});

test('a staged snapshot expires 24 hours after staging, whatever its use', async () => {
  await withCapture(async (h, s) => {
    const id = randomUUID();
    const p1 = await rebuildPage(h, s, S, id, null, 2);
    advanceClock((23 * 60 + 59) * 60 * 1000);
    const p2 = await rebuildPage(h, s, S, id, p1.json.cursor, 2);
    assert.equal(p2.status, 200, p2.text);
    advanceClock(60 * 1000);
    const late = await rebuildPage(h, s, S, id, p2.json.cursor, 2);
    assert.equal(late.status, 409);
    assert.equal(late.json.error.code, 'rebuild_restart_required');
  });
});

test('an empty scope rebuilds as one final page whose checksum matches the pull checksum', async () => {
  await withCapture(async (h, s) => {
    await h.sql.query("SELECT synchro.synchro_register_shared_scope('empty')");
    const first = await pull(h, s, {});
    assert.deepEqual(first.json.scope_updates.add, [{ id: 'empty', cursor: null }]);
    assert.equal(first.json.scope_set_version, 2);
    const s2 = { ...s };
    const rebuilt = await rebuildAll(h, s2, 'empty', 5);
    assert.equal(rebuilt.pages.length, 1);
    assert.deepEqual(rebuilt.records, []);
    assert.equal(rebuilt.checksum, first.json.checksums.empty.digest);
  });
});
