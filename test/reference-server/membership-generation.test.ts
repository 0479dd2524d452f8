import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import { rowIdentityFromWire } from '../../harness/codec/index.ts';
import { catchUp, connect, freshServer, type Harness, type Session, useEnv } from './helpers.ts';
import { pull, rebuildAll, rebuildPage } from './sync-flow.ts';

const env = useEnv();

// Rule 1 puts a note in its owner's scope, and in 'shared' when its body starts with 'shared'.
// Rule 2 keeps the owner's scope and moves 'shared' to bodies containing 'pin': only 'shared' changes.
const SETUP = `
CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL DEFAULT 'u1', body text NOT NULL DEFAULT '',
  updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz);
SELECT synchro.synchro_prepare_projection_view('public.notes');
CREATE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id
    UNION ALL SELECT 'shared' FROM synchro_projection.notes WHERE id = p_id AND body LIKE 'shared%';
END;
CREATE FUNCTION public.note_scopes_pinned(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id
    UNION ALL SELECT 'shared' FROM synchro_projection.notes WHERE id = p_id AND body LIKE '%pin%';
END;
SELECT synchro.synchro_register_table('public.notes', membership_fn => 'public.note_scopes', composition => 'multi_scope',
  updated_at_col => 'updated_at', deleted_at_col => 'deleted_at', max_scope_fanout => 2);
SELECT synchro.synchro_register_shared_scope('shared');
-- Staging runs these, so they meet the contract and fail only when evaluated.
CREATE FUNCTION public.note_scopes_null(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT CASE WHEN body = 'pin me' THEN NULL ELSE 'user:' || owner END FROM synchro_projection.notes WHERE id = p_id;
END;
CREATE FUNCTION public.note_scopes_wide(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner || ':' || g FROM synchro_projection.notes, generate_series(1, 3) g WHERE id = p_id;
END;
-- Casting the key to an integer fails for every note id.
CREATE FUNCTION public.note_scopes_raises(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT ('no rule for ' || p_id)::integer::text FROM synchro_projection.notes WHERE id = p_id;
END;
CREATE FUNCTION public.note_scopes_int(p_id integer) RETURNS SETOF text LANGUAGE sql STABLE AS $$ SELECT 'x' $$;
CREATE FUNCTION public.note_scope_one(p_id text) RETURNS text LANGUAGE sql STABLE AS $$ SELECT 'x' $$;
CREATE FUNCTION public.note_scopes_volatile(p_id text) RETURNS SETOF text LANGUAGE sql VOLATILE AS $$ SELECT 'user:u1' $$;
INSERT INTO public.notes (id, body) VALUES ('n1', 'shared one'), ('n2', 'pin me'), ('n3', 'mine');
INSERT INTO public.notes (id, owner, body) VALUES ('o1', 'u2', 'shared other');
`;

const SCOPES = ['shared', 'user:u1'];

async function withCapture(fn: (h: Harness, s: Session) => Promise<void>): Promise<void> {
  const h = await freshServer(env(), SETUP, { capture: true });
  try {
    await catchUp(h);
    await fn(h, await connect(h));
  } finally {
    await h.close();
  }
}

const reconfigure = (h: Harness, fn: string) => h.sql.query<{ r: Record<string, unknown> }>("SELECT synchro.synchro_reconfigure_membership('public.notes', $1) AS r", [fn]);

async function generations(h: Harness): Promise<Record<string, number>> {
  const { rows } = await h.sql.query<{ scope_id: string; g: string }>('SELECT scope_id, membership_generation AS g FROM synchro.scope_state ORDER BY scope_id');
  return Object.fromEntries(rows.map((r) => [r.scope_id, Number(r.g)]));
}

async function edges(h: Harness): Promise<string[]> {
  const { rows } = await h.sql.query<{ e: string }>("SELECT pk_text || '>' || scope_id AS e FROM synchro.membership_edges ORDER BY 1");
  return rows.map((r) => r.e);
}

/** Everything a failed change must leave as it was. */
async function registryState(h: Harness) {
  const reg = await h.sql.query('SELECT coalesce(max(generation), 0)::int AS g FROM synchro.registry_generations');
  const rel = await h.sql.query("SELECT membership_function, registry_generation FROM synchro.relations WHERE physical_relation = 'notes'");
  const rows = await h.sql.query("SELECT scope_id || '/' || pk_text AS r FROM synchro.scope_rows ORDER BY 1");
  const staged = await h.sql.query('SELECT count(*)::int AS n FROM synchro.membership_staging');
  return { registry: reg.rows[0], relation: rel.rows[0], generations: await generations(h), edges: await edges(h), rows: rows.rows, staged: staged.rows[0] };
}

/** Cursors for the two scopes of u1, from a rebuild of each. */
async function bootstrap(h: Harness, s: Session): Promise<Record<string, string>> {
  const cursors: Record<string, string> = {};
  for (const scope of SCOPES) cursors[scope] = (await rebuildAll(h, s, scope)).finalCursor;
  return cursors;
}

const ids = (records: Array<{ pk: Record<string, unknown> }>) => records.map((r) => Object.values(r.pk)[0]).sort();

test('a rule change bumps the membership generation of exactly the scopes whose edges change, through a new registry generation', async () => {
  await withCapture(async (h) => {
    const before = await registryState(h);
    assert.deepEqual(before.generations, {});
    const { rows } = await reconfigure(h, 'public.note_scopes_pinned');
    const r = rows[0]?.r as Record<string, unknown>;
    // 'shared' loses n1 and o1 and gains n2; the owners' scopes are identical under both rules.
    assert.deepEqual(r.membership_generations, { shared: 2 });
    assert.equal(r.registry_generation, Number(before.registry?.g) + 1);
    assert.equal(r.edges_added, 1);
    assert.equal(r.edges_removed, 2);
    assert.deepEqual(await generations(h), { shared: 2 });
    const after = await registryState(h);
    assert.deepEqual(after.relation, { membership_function: 'public.note_scopes_pinned', registry_generation: String(Number(before.registry?.g) + 1) });
    assert.deepEqual(after.edges, ['n1>user:u1', 'n2>shared', 'n2>user:u1', 'n3>user:u1', 'o1>user:u2']);
    assert.deepEqual(after.rows.map((x) => x.r), ['shared/n2', 'user:u1/n1', 'user:u1/n2', 'user:u1/n3', 'user:u2/o1']);
    assert.equal(after.staged?.n, 0);
    // The identity staging wrote for n2 in 'shared' is the one capture wrote for it in 'user:u1'.
    const bytes = await h.sql.query<{ b: Buffer }>("SELECT pk_bytes AS b FROM synchro.scope_rows WHERE pk_text = 'n2' ORDER BY scope_id");
    assert.equal(bytes.rows.length, 2);
    assert.deepEqual(bytes.rows[0]?.b, bytes.rows[1]?.b);
    // A second change bumps again, from the stored generation.
    await reconfigure(h, 'public.note_scopes');
    assert.deepEqual(await generations(h), { shared: 3 });
  });
});

test('after the change a cursor of the affected scope is sent to rebuild while the other scope stays incremental; the rebuild serves the new membership', async () => {
  await withCapture(async (h, s) => {
    const cursors = await bootstrap(h, s);
    await reconfigure(h, 'public.note_scopes_pinned');
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('n4', 'after')`);
    await catchUp(h);
    const reply = await pull(h, s, cursors, { active: SCOPES });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.json.rebuild, ['shared']);
    assert.deepEqual(Object.keys(reply.json.scope_cursors), ['user:u1']);
    assert.deepEqual(
      reply.json.changes.map((c: Record<string, unknown>) => [c.scope, Object.values(c.pk as object)[0], c.op]),
      [['user:u1', 'n4', 'upsert']],
    );
    const rebuilt = await rebuildAll(h, s, 'shared');
    assert.deepEqual(ids(rebuilt.records), ['n2']);
    assert.equal(rebuilt.checksum, reply.json.checksums.shared.digest);
    // The new cursor is bound to the new generation: incremental from here.
    const next = await pull(h, s, { shared: rebuilt.finalCursor, 'user:u1': reply.json.scope_cursors['user:u1'] }, { active: SCOPES });
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(next.json.rebuild, []);
    assert.deepEqual(next.json.changes, []);
  });
});

test('a rebuild in progress of the affected scope must restart, one of an unaffected scope continues', async () => {
  await withCapture(async (h, s) => {
    const shared = randomUUID();
    const own = randomUUID();
    const firstShared = await rebuildPage(h, s, 'shared', shared, null, 1);
    const firstOwn = await rebuildPage(h, s, 'user:u1', own, null, 1);
    assert.equal(firstShared.json.has_more, true, firstShared.text);
    assert.equal(firstOwn.json.has_more, true, firstOwn.text);
    await reconfigure(h, 'public.note_scopes_pinned');
    const nextShared = await rebuildPage(h, s, 'shared', shared, firstShared.json.cursor, 1);
    assert.equal(nextShared.status, 409, nextShared.text);
    assert.equal(nextShared.json.error.code, 'rebuild_restart_required');
    const nextOwn = await rebuildPage(h, s, 'user:u1', own, firstOwn.json.cursor, 1);
    assert.equal(nextOwn.status, 200, nextOwn.text);
  });
});

test('a row written after the change is placed by the new function', async () => {
  await withCapture(async (h, s) => {
    await reconfigure(h, 'public.note_scopes_pinned');
    const shared = (await rebuildAll(h, s, 'shared')).finalCursor;
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('p1', 'pinned later'), ('p2', 'shared only')`);
    await h.sql.query(`UPDATE public.notes SET body = 'plain' WHERE id = 'n2'`);
    await catchUp(h);
    assert.deepEqual(
      (await edges(h)).filter((e) => e.endsWith('>shared')),
      ['p1>shared'],
    );
    const reply = await pull(h, s, { shared }, { active: SCOPES });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(
      reply.json.changes.filter((c: Record<string, unknown>) => c.scope === 'shared').map((c: Record<string, unknown>) => [Object.values(c.pk as object)[0], c.op]),
      [
        ['p1', 'upsert'],
        ['n2', 'delete'],
      ],
    );
  });
});

test('a change waits for capture to project every committed write of the table, so no earlier write is placed by the old rule', async () => {
  await withCapture(async (h) => {
    const capture = h.server.capture as NonNullable<Harness['server']['capture']>;
    await capture.pause();
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('late', 'pin before the change')`);
    const other = new pg.Client({ connectionString: h.url });
    await other.connect();
    try {
      const pid = (await other.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
      let settled = false;
      const pending = other.query("SELECT synchro.synchro_reconfigure_membership('public.notes', 'public.note_scopes_pinned') AS r").finally(() => {
        settled = true;
      });
      // The change has to be seen waiting for capture (or to have finished, which the rule forbids) before capture resumes.
      const deadline = Date.now() + 15_000;
      for (;;) {
        const waiting = await h.sql.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'PgSleep'", [pid]);
        if (settled || waiting.rowCount !== 0) break;
        assert.ok(Date.now() < deadline, 'the change neither waited nor finished');
      }
      await capture.resume();
      await pending;
    } finally {
      await other.end();
    }
    await catchUp(h);
    assert.ok((await edges(h)).includes('late>shared'));
    assert.deepEqual(await generations(h), { shared: 2 });
  });
});

test('a failing new function changes nothing: no registry generation, no function identity, no edges, no scope rows, no generation', async () => {
  await withCapture(async (h) => {
    const before = await registryState(h);
    const cases: Array<[string, string, string]> = [
      ['public.note_scopes_null', '22023', 'invalid_scope'],
      ['public.note_scopes_wide', '22023', 'fanout_exceeded'],
      ['public.note_scopes_raises', '22023', 'function_failed'],
      ['public.note_scopes_int', '22023', 'invalid_scope_function'],
      ['public.note_scope_one', '22023', 'invalid_scope_function'],
      ['public.note_scopes_volatile', '22023', 'invalid_scope_function'],
      ['public.missing', '22023', 'invalid_scope_function'],
    ];
    for (const [fn, code, reason] of cases) {
      await assert.rejects(reconfigure(h, fn), (e: { code?: string; message: string }) => {
        assert.equal(e.code, code, fn);
        assert.equal(JSON.parse(e.message).error.reason, reason, fn);
        return true;
      });
      assert.deepEqual(await registryState(h), before, fn);
    }
    await assert.rejects(h.sql.query("SELECT synchro.synchro_reconfigure_membership('notes', 'public.note_scopes_pinned')"), /schema-qualified/);
    await assert.rejects(h.sql.query("SELECT synchro.synchro_reconfigure_membership('public.notes', NULL)"), /invalid_scope_function/);
    assert.deepEqual(await registryState(h), before);
  });
});

test('row identity octets built in SQL equal the codec for every key type', async () => {
  const h = await freshServer(env(), '');
  try {
    const cases: Array<['string' | 'int' | 'int64', string, unknown]> = [
      ['string', 'n1', 'n1'],
      ['string', 'ключ ✓ 🙂', 'ключ ✓ 🙂'],
      ['int', '0', 0],
      ['int', '-2147483648', -2147483648],
      ['int', '42', 42],
      ['int64', '9007199254740993', '9007199254740993'],
      ['int64', '-1', '-1'],
    ];
    for (const [type, text, wire] of cases) {
      const { rows } = await h.sql.query<{ b: Buffer }>('SELECT synchro.row_identity($1, $2, $3, $4) AS b', ['t7', 't7f1', type, text]);
      assert.deepEqual(rows[0]?.b, Buffer.from(rowIdentityFromWire('t7', 't7f1', type, wire)), `${type} ${text}`);
    }
  } finally {
    await h.close();
  }
});

test('a composition change bumps the generation of every scope holding rows of the table and no other; bad or impossible changes change nothing', async () => {
  await withCapture(async (h) => {
    const recompose = (composition: string | null, relation = 'public.notes') =>
      h.sql.query<{ r: Record<string, unknown> }>('SELECT synchro.synchro_reconfigure_composition($1, $2) AS r', [relation, composition]);
    const before = await registryState(h);
    // n1 and o1 are each in two scopes, so the multi-scope table cannot become single-scope.
    await assert.rejects(recompose('single_scope'), /more than one scope/);
    await assert.rejects(recompose('multi_scope'), /already multi_scope/);
    await assert.rejects(recompose('several'), /single_scope or multi_scope/);
    await assert.rejects(recompose(null), /single_scope or multi_scope/);
    await assert.rejects(recompose('multi_scope', 'notes'), /schema-qualified/);
    assert.deepEqual(await registryState(h), before);
    // Once every row is in one scope, the change goes through and bumps every scope the table's rows are in.
    await h.sql.query(`CREATE FUNCTION public.note_scopes_owner(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
      SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id; END`);
    await reconfigure(h, 'public.note_scopes_owner');
    const placed = await generations(h);
    const { rows } = await h.sql.query<{ r: Record<string, unknown> }>("SELECT synchro.synchro_reconfigure_composition('public.notes', 'single_scope') AS r");
    const scopesOfRows = [...new Set((await edges(h)).map((e) => e.split('>')[1] as string))].sort();
    assert.deepEqual(scopesOfRows, ['user:u1', 'user:u2']);
    assert.deepEqual(Object.keys(rows[0]?.r.membership_generations as object).sort(), scopesOfRows);
    // 'shared' holds no row of the table any more: its generation stays where the membership change left it.
    assert.deepEqual(await generations(h), { ...placed, 'user:u1': (placed['user:u1'] ?? 1) + 1, 'user:u2': (placed['user:u2'] ?? 1) + 1 });
    const relation = await h.sql.query("SELECT composition FROM synchro.relations WHERE physical_relation = 'notes'");
    assert.deepEqual(relation.rows, [{ composition: 'single_scope' }]);
  });
});

test('a rebinding after a rename binds the registration to the new name and bumps the scopes holding its rows; a wrong rebinding changes nothing', async () => {
  await withCapture(async (h) => {
    const rebind = (relation: string, renamed: string) => h.sql.query<{ r: Record<string, unknown> }>('SELECT synchro.synchro_rebind_relation($1, $2) AS r', [relation, renamed]);
    await h.sql.query('CREATE TABLE public.other (id text PRIMARY KEY)');
    const before = await registryState(h);
    // Not renamed yet: the registered name still exists.
    await assert.rejects(rebind('public.notes', 'public.notes'), /still exists/);
    // Renamed and rebound in one transaction, as an operator does: capture never sees the registered name gone.
    await h.sql.query('BEGIN');
    await h.sql.query('ALTER TABLE public.notes RENAME TO notes_v2');
    // Another relation is never taken for the registered one, and names must be qualified.
    for (const [relation, renamed, refusal] of [
      ['public.notes', 'public.other', /not the registered one/],
      ['notes', 'public.notes_v2', /schema-qualified/],
      ['public.nothing', 'public.notes_v2', /no active registration/],
    ] as const) {
      await h.sql.query('SAVEPOINT attempt');
      await assert.rejects(rebind(relation, renamed), refusal);
      await h.sql.query('ROLLBACK TO SAVEPOINT attempt');
    }
    const unchanged = await registryState(h);
    assert.deepEqual({ ...unchanged, relation: undefined }, { ...before, relation: undefined });
    const { rows } = await rebind('public.notes', 'public.notes_v2');
    await h.sql.query('COMMIT');
    assert.equal(rows[0]?.r.relation, 'public.notes_v2');
    const scopesOfRows = [...new Set((await edges(h)).map((e) => e.split('>')[1] as string))].sort();
    assert.deepEqual(Object.keys(rows[0]?.r.membership_generations as object).sort(), scopesOfRows);
    assert.deepEqual(await generations(h), Object.fromEntries(scopesOfRows.map((s) => [s, 2])));
    // Capture reads the renamed relation again: a write after the rebinding is materialized.
    await h.sql.query("INSERT INTO public.notes_v2 (id, body) VALUES ('n9', 'after')");
    await catchUp(h);
    assert.equal((await h.sql.query("SELECT count(*)::int AS n FROM synchro.scope_rows WHERE pk_text = 'n9'")).rows[0].n, 1);
  });
});
