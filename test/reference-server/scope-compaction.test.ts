import assert from 'node:assert/strict';
import { test } from 'node:test';
import { catchUp, connect, freshServer, OWNED_NOTES_SQL, useEnv } from './helpers.ts';
import { pull, rebuildAll, rebuildPage } from './sync-flow.ts';

const env = useEnv();

const compact = async (h: Awaited<ReturnType<typeof freshServer>>, scope: string) =>
  Number((await h.sql.query<{ n: string }>('SELECT synchro.synchro_compact_scope($1)::text AS n', [scope])).rows[0]?.n);

const floorAndMark = async (h: Awaited<ReturnType<typeof freshServer>>, scope: string) =>
  (
    await h.sql.query<{ floor: string | null; mark: string | null }>(
      `SELECT (SELECT floor_commit_lsn::text || '/' || floor_event_ordinal || '/' || floor_effect_ordinal FROM synchro.scope_state WHERE scope_id = $1) AS floor,
              (SELECT commit_lsn::text || '/' || event_ordinal || '/' || effect_ordinal FROM synchro.scope_high_watermarks WHERE scope_id = $1) AS mark`,
      [scope],
    )
  ).rows[0];

test('a scope no client is assigned is compacted to its durable high-watermark, which outlives its effects', async () => {
  const h = await freshServer(env(), OWNED_NOTES_SQL, { capture: true });
  try {
    await h.sql.query(`INSERT INTO public.notes (id, owner) VALUES ('n1', 'nobody')`);
    await h.sql.query(`INSERT INTO public.notes (id, owner) VALUES ('n2', 'nobody')`);
    await catchUp(h);
    const before = await floorAndMark(h, 'user:nobody');
    assert.equal(before?.floor, null);
    assert.notEqual(before?.mark, null);
    assert.equal(await compact(h, 'user:nobody'), 2);
    const after = await floorAndMark(h, 'user:nobody');
    assert.equal(after?.floor, before?.mark);
    assert.equal(after?.mark, before?.mark);
    // Nothing left and nothing new: a second compaction changes nothing.
    assert.equal(await compact(h, 'user:nobody'), 0);
    assert.deepEqual(await floorAndMark(h, 'user:nobody'), after);
  } finally {
    await h.close();
  }
});

test('an unfinished rebuild pins its boundary even after the client pulled past it', async () => {
  const h = await freshServer(env(), OWNED_NOTES_SQL, { capture: true });
  try {
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k1'), ('k2')`);
    await catchUp(h);
    const s = await connect(h);
    const synced = (await rebuildAll(h, s, 'user:u1')).finalCursor as string;
    // Page 1 of a second rebuild fixes its boundary here; then new history arrives.
    const rebuildId = crypto.randomUUID();
    const first = await rebuildPage(h, s, 'user:u1', rebuildId, null, 1);
    assert.equal(first.json.has_more, true, first.text);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k3')`);
    await catchUp(h);
    const ahead = await pull(h, s, { 'user:u1': synced });
    await pull(h, s, { 'user:u1': ahead.json.scope_cursors['user:u1'] });
    // The checkpoint is past the boundary, but the rebuild is not finished: only history up to its boundary goes, k3 stays.
    await compact(h, 'user:u1');
    const left = await h.sql.query<{ n: string }>("SELECT count(*)::text AS n FROM synchro.scope_effects WHERE scope_id = 'user:u1'");
    assert.equal(left.rows[0]?.n, '1');
    const last = await rebuildPage(h, s, 'user:u1', rebuildId, first.json.cursor, 1);
    assert.equal(last.json.has_more, false, last.text);
    const resumed = await pull(h, s, { 'user:u1': last.json.final_scope_cursor });
    assert.deepEqual(resumed.json.rebuild, []);
    assert.deepEqual(resumed.json.changes.map((c: { pk: Record<string, string> }) => Object.values(c.pk)[0]), ['k3']);
  } finally {
    await h.close();
  }
});
