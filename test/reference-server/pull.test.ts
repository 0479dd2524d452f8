import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startServer } from '../../reference/server/app.ts';
import { catchUp, connect, freshServer, type Harness, insertNote, pushBody, SECRET, type Session, useEnv } from './helpers.ts';
import { pull, rebuildAll } from './sync-flow.ts';

const env = useEnv();

// Rows are in their owner's scope; bodies starting with 'shared' also in the shared scope.
const SETUP = `
CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL DEFAULT 'u1', body text NOT NULL DEFAULT '',
  updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz);
SELECT synchro.synchro_prepare_projection_view('public.notes');
CREATE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id
    UNION ALL SELECT 'shared' FROM synchro_projection.notes WHERE id = p_id AND body LIKE 'shared%';
END;
SELECT synchro.synchro_register_table('public.notes', membership_fn => 'public.note_scopes', composition => 'multi_scope',
  updated_at_col => 'updated_at', deleted_at_col => 'deleted_at');
SELECT synchro.synchro_register_shared_scope('shared');
`;

async function withCapture(fn: (h: Harness, s: Session) => Promise<void>): Promise<void> {
  const h = await freshServer(env(), SETUP, { capture: true });
  try {
    await fn(h, await connect(h));
  } finally {
    await h.close();
  }
}

const SCOPES = ['shared', 'user:u1'];

/** Cursors for every assigned scope, by rebuilding each. */
async function bootstrap(h: Harness, s: Session): Promise<Record<string, string>> {
  const cursors: Record<string, string> = {};
  for (const scope of SCOPES) cursors[scope] = (await rebuildAll(h, s, scope)).finalCursor;
  return cursors;
}

/** Pulls until has_more is false, collecting every change; each nonterminal page must make progress. */
async function drain(h: Harness, s: Session, cursors: Record<string, string | null>, limit: number) {
  const changes: Array<Record<string, unknown>> = [];
  const current = { ...cursors };
  for (let page = 0; page < 500; page++) {
    const reply = await pull(h, s, current, { limit, active: SCOPES });
    assert.equal(reply.status, 200, reply.text);
    if (reply.json.has_more) assert.ok(reply.json.changes.length > 0);
    changes.push(...reply.json.changes);
    Object.assign(current, reply.json.scope_cursors);
    if (!reply.json.has_more) return { changes, cursors: current, last: reply };
  }
  throw new Error('drain did not finish');
}

test('first sync: every assigned scope is listed for rebuild with a terminal checksum; the rebuild gives a cursor that pulls nothing new', async () => {
  await withCapture(async (h, s) => {
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('n1', 'mine'), ('n2', 'shared one'), ('n3', 'mine too')`);
    await catchUp(h);
    const first = await pull(h, s, {}, { active: SCOPES });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.json.rebuild, SCOPES);
    assert.deepEqual(first.json.changes, []);
    assert.deepEqual(first.json.scope_cursors, {});
    assert.deepEqual(Object.keys(first.json.checksums), SCOPES);
    const rebuilt = await rebuildAll(h, s, 'user:u1', 2);
    assert.equal(rebuilt.pages.length, 2);
    assert.deepEqual(rebuilt.records.map((r) => Object.values(r.pk)[0]), ['n1', 'n2', 'n3']);
    assert.equal(rebuilt.checksum, first.json.checksums['user:u1'].digest);
    const next = await pull(h, s, { 'user:u1': rebuilt.finalCursor }, { active: SCOPES });
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(next.json.changes, []);
    assert.deepEqual(next.json.rebuild, ['shared']);
    assert.deepEqual(Object.keys(next.json.scope_cursors), ['user:u1']);
  });
});

test('incremental pull: commit order across scopes, typed deduplication per scope, explicit deletes, and the push echo version', async () => {
  await withCapture(async (h, s) => {
    const cursors = await bootstrap(h, s);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('a')`);
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('b', 'shared b')`);
    for (const v of ['1', '2', '3']) await h.sql.query(`UPDATE public.notes SET body = $1 WHERE id = 'a'`, [`v${v}`]);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('gone')`);
    await h.sql.query(`DELETE FROM public.notes WHERE id = 'gone'`);
    const pushed = await h.post('/sync/push', pushBody(s, [insertNote(s, 'p', { body: 'pushed' })]));
    assert.equal(pushed.status, 200, pushed.text);
    await catchUp(h);
    const { changes, last } = await drain(h, s, cursors, 1000);
    assert.deepEqual(
      changes.map((c) => [c.scope, Object.values(c.pk as object)[0], c.op]),
      [
        ['shared', 'b', 'upsert'],
        ['user:u1', 'b', 'upsert'],
        ['user:u1', 'a', 'upsert'],
        ['user:u1', 'gone', 'delete'],
        ['user:u1', 'p', 'upsert'],
      ],
    );
    const a = changes[2] as { row: Record<string, unknown>; server_version: string };
    assert.equal(a.row[s.field('notes', 'body')], 'v3');
    assert.equal((changes[4] as { server_version: string }).server_version, pushed.json.accepted[0].server_version);
    assert.equal((changes[3] as { row?: unknown }).row, undefined);
    assert.deepEqual(Object.keys(last.json.checksums), SCOPES);
  });
});

test('the global limit applies after per-scope eligibility: small pages drain every scope completely and deterministically', async () => {
  await withCapture(async (h, s) => {
    const cursors = await bootstrap(h, s);
    for (let i = 0; i < 6; i++) await h.sql.query('INSERT INTO public.notes (id, body) VALUES ($1, $2)', [`r${i}`, i % 2 === 0 ? 'shared' : 'own']);
    await catchUp(h);
    const full = await drain(h, s, cursors, 1000);
    for (const limit of [1, 2, 7]) {
      const paged = await drain(h, s, cursors, limit);
      assert.deepEqual(paged.changes, full.changes);
      assert.deepEqual(paged.last.json.checksums, full.last.json.checksums);
    }
    // Same request twice: byte-identical changes.
    const one = await pull(h, s, cursors, { limit: 2 });
    const two = await pull(h, s, cursors, { limit: 2 });
    assert.equal(JSON.stringify(one.json.changes), JSON.stringify(two.json.changes));
    assert.equal(one.json.has_more, true);
    assert.equal(one.json.checksums, undefined);
  });
});

test('starvation: one early row in the shared scope comes first even when many later rows fill the other scope', async () => {
  await withCapture(async (h, s) => {
    const cursors = await bootstrap(h, s);
    await h.sql.query(`INSERT INTO public.notes (id, owner, body) VALUES ('early', 'nobody', 'shared early')`);
    await h.sql.query(`INSERT INTO public.notes (id) SELECT 'late' || g FROM generate_series(1, 50) g`);
    await catchUp(h);
    const first = await pull(h, s, cursors, { limit: 1 });
    assert.deepEqual(first.json.changes.map((c: { scope: string }) => c.scope), ['shared']);
    assert.equal(first.json.has_more, true);
  });
});

test('forged or misbound cursors are 400 with no acknowledgement; stale ones put only that scope in rebuild', async () => {
  await withCapture(async (h, s) => {
    const cursors = await bootstrap(h, s);
    const other = await connect(h);
    const otherCursor = (await rebuildAll(h, other, 'user:u1')).finalCursor;
    const c = cursors['user:u1'] as string;
    const flip = (t: string, i: number) => t.slice(0, i) + (t[i] === 'A' ? 'B' : 'A') + t.slice(i + 1);
    const forged = [
      flip(c, c.length - 3),
      flip(c, 8),
      c.slice(0, -5),
      `${c}.x`,
      cursors.shared as string,
      otherCursor,
    ];
    for (const bad of forged) {
      const reply = await pull(h, s, { 'user:u1': bad, shared: cursors.shared as string });
      assert.equal(reply.status, 400, bad);
      assert.equal(reply.json.error.code, 'invalid_request');
      assert.ok(!reply.text.includes(bad));
    }
    const none = await h.sql.query('SELECT count(*)::int AS n FROM synchro.checkpoints');
    assert.equal(none.rows[0].n, 0);
    const rebuildToken = (await rebuildAll(h, s, 'user:u1', 1)).pages;
    assert.equal(rebuildToken.length, 1);
    // A membership generation change makes the shared cursor stale; user:u1 is still served.
    await h.sql.query("INSERT INTO synchro.scope_state (scope_id, membership_generation) VALUES ('shared', 2)");
    const stale = await pull(h, s, cursors, { active: SCOPES });
    assert.equal(stale.status, 200, stale.text);
    assert.deepEqual(stale.json.rebuild, ['shared']);
    assert.deepEqual(Object.keys(stale.json.scope_cursors), ['user:u1']);
  });
});

test('a presented cursor is acknowledged once validated, and an older one never moves the checkpoint back', async () => {
  await withCapture(async (h, s) => {
    const c0 = await bootstrap(h, s);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k1')`);
    await catchUp(h);
    const r1 = await pull(h, s, c0);
    const c1 = { ...c0, ...r1.json.scope_cursors };
    const checkpoint = async () => (await h.sql.query("SELECT commit_lsn::text AS l FROM synchro.checkpoints WHERE scope_id = 'user:u1'")).rows[0]?.l;
    const afterC0 = await checkpoint();
    await pull(h, s, c1);
    const afterC1 = await checkpoint();
    assert.notEqual(afterC1, afterC0);
    const replay = await pull(h, s, c0);
    assert.deepEqual(replay.json.changes, r1.json.changes);
    assert.equal(await checkpoint(), afterC1);
  });
});

test('checkpoint inspection: only a presented cursor is acknowledged, never the one issued, a rebuild page or a refused request', async () => {
  await withCapture(async (h, s) => {
    const c0 = await bootstrap(h, s);
    const inspect = async (cursor: string) =>
      (await h.sql.query<{ checkpoint: string | null; position: string | null }>("SELECT synchro.synchro_inspect_checkpoint($1, 'user:u1') AS checkpoint, synchro.synchro_inspect_cursor_position($2) AS position", [s.clientId, cursor])).rows[0];
    // Rebuilding acknowledged nothing: no checkpoint until a pull presents the final cursor.
    assert.equal((await inspect(c0['user:u1'] as string))?.checkpoint, null);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k1')`);
    await catchUp(h);
    const r1 = await pull(h, s, c0);
    const c1 = r1.json.scope_cursors['user:u1'] as string;
    const at0 = await inspect(c0['user:u1'] as string);
    assert.ok(at0?.position);
    assert.equal(at0.checkpoint, at0.position);
    assert.notEqual((await inspect(c1))?.position, at0.position);
    // A request refused after its cursors were read moves nothing.
    const refused = await pull(h, s, { ...c0, 'user:u1': c1, shared: `${c0.shared}x` });
    assert.equal(refused.status, 400, refused.text);
    assert.equal((await inspect(c1))?.checkpoint, at0.position);
    await pull(h, s, { ...c0, 'user:u1': c1 });
    const at1 = await inspect(c1);
    assert.equal(at1?.checkpoint, at1?.position);
    assert.equal((await h.sql.query("SELECT synchro.synchro_inspect_cursor_position('ic1.e30.AAAA') AS p")).rows[0]?.p, null);
  });
});

test('a pull right after the client\'s own push waits for capture and serves the write instead of 503', async () => {
  await withCapture(async (h, s) => {
    const cursors = await bootstrap(h, s);
    const pushed = await h.post('/sync/push', pushBody(s, [insertNote(s, 'just-pushed')]));
    assert.equal(pushed.status, 200, pushed.text);
    const served = await pull(h, s, cursors);
    assert.equal(served.status, 200, served.text);
    assert.deepEqual(
      served.json.changes.map((c: { pk: Record<string, string>; server_version: string }) => [Object.values(c.pk), c.server_version]),
      [[['just-pushed'], pushed.json.accepted[0].server_version]],
    );
  });
});

test('503 capture_pending while this client has an accepted write the worker has not materialized; other clients are served', async () => {
  await withCapture(async (h, s) => {
    const cursors = await bootstrap(h, s);
    const other = await connect(h);
    const otherCursors = await bootstrap(h, other);
    await catchUp(h);
    await h.server.close();
    h.server = await startServer({ databaseUrl: h.url, jwtSecret: SECRET, log: () => undefined });
    const pushed = await h.post('/sync/push', pushBody(s, [insertNote(s, 'waiting')]));
    assert.equal(pushed.status, 200, pushed.text);
    const blocked = await pull(h, s, cursors);
    assert.equal(blocked.status, 503);
    assert.equal(blocked.json.error.code, 'capture_pending');
    assert.equal(blocked.json.error.retryable, true);
    assert.equal(blocked.headers.get('retry-after'), '5');
    const fine = await pull(h, other, otherCursors);
    assert.equal(fine.status, 200, fine.text);
    await h.server.close();
    h.server = await startServer({ databaseUrl: h.url, jwtSecret: SECRET, log: () => undefined, capture: true });
    await catchUp(h);
    const echoed = await pull(h, s, cursors);
    assert.equal(echoed.status, 200, echoed.text);
    assert.equal(echoed.json.changes[0].server_version, pushed.json.accepted[0].server_version);
  });
});

test('limit outside 1..1000, a future scope_set_version or an invented scope is 400', async () => {
  await withCapture(async (h, s) => {
    for (const limit of [0, 1001, -1]) assert.equal((await pull(h, s, {}, { limit })).status, 400);
    assert.equal((await pull(h, s, {}, { limit: 1 })).status, 200);
    assert.equal((await pull(h, s, {}, { version: 2 })).status, 400);
    assert.equal((await pull(h, s, { invented: null })).status, 400);
  });
});

test('compaction moves a scope floor to the least needed position: older cursors turn stale, pinned rebuilds stay valid', async () => {
  await withCapture(async (h, s) => {
    const c0 = await bootstrap(h, s);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k1')`);
    await catchUp(h);
    // Another client rebuilds here and has not presented its final cursor yet: it pins the floor.
    const other = await connect(h);
    const pinned = (await rebuildAll(h, other, 'user:u1')).finalCursor;
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k2')`);
    await catchUp(h);
    const r1 = await pull(h, s, c0);
    const c1 = { ...c0, ...r1.json.scope_cursors };
    // Nothing is acknowledged past c0 yet, so nothing may go.
    assert.equal(Number((await h.sql.query("SELECT synchro.synchro_compact_scope('user:u1') AS n")).rows[0].n), 0);
    await pull(h, s, c1);
    assert.equal(Number((await h.sql.query("SELECT synchro.synchro_compact_scope('user:u1') AS n")).rows[0].n), 1);
    const stale = await pull(h, s, c0, { active: SCOPES });
    assert.equal(stale.status, 200, stale.text);
    assert.deepEqual(stale.json.rebuild, ['user:u1']);
    assert.deepEqual(Object.keys(stale.json.scope_cursors), ['shared']);
    const current = await pull(h, s, c1, { active: SCOPES });
    assert.deepEqual(current.json.rebuild, []);
    assert.deepEqual(current.json.changes, []);
    // The pinned final cursor still works and delivers k2; once presented, the pin is gone.
    const late = await pull(h, other, { 'user:u1': pinned });
    assert.deepEqual(late.json.rebuild, ['shared']);
    assert.deepEqual(late.json.changes.map((c: { pk: Record<string, string> }) => Object.values(c.pk)[0]), ['k2']);
    await pull(h, other, { 'user:u1': late.json.scope_cursors['user:u1'] });
    assert.equal(Number((await h.sql.query("SELECT synchro.synchro_compact_scope('user:u1') AS n")).rows[0].n), 1);
  });
});
