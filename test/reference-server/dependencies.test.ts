import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { CapturePoisoned } from '../../reference/server/core/capture-control.ts';
import { catchUp, connect, freshServer, type Harness, NOW, pushBody, type Session, useEnv } from './helpers.ts';
import { pull, rebuildAll } from './sync-flow.ts';

const env = useEnv();

/**
 * Tasks belong to the team of their project. Projects are a capture-only
 * dependency: clients never see them, but a project changing team moves its
 * tasks. The impact functions are created once the target's table_id is known.
 */
function projectSetup(impactFn: string, bound = 1000, rows = true): string {
  return `
CREATE TABLE public.projects (id text PRIMARY KEY, team text NOT NULL);
CREATE TABLE public.tasks (id text PRIMARY KEY, project_id text NOT NULL, title text NOT NULL DEFAULT '');
SELECT synchro.synchro_register_capture_dependency('public.projects');
SELECT synchro.synchro_prepare_projection_view('public.tasks');
-- Reads the projects projection: the dependency declared below, in the same transaction, makes that legal.
CREATE FUNCTION public.task_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'team:' || p.team FROM synchro_projection.tasks t JOIN synchro_projection.projects p ON p.id = t.project_id WHERE t.id = p_id;
END;
SELECT synchro.synchro_register_table('public.tasks', membership_fn => 'public.task_scopes');
SELECT synchro.synchro_register_shared_scope('team:A');
SELECT synchro.synchro_register_shared_scope('team:B');
DO $do$
DECLARE
  t text := (SELECT table_id FROM synchro.relations WHERE physical_relation = 'tasks');
BEGIN
  -- Old and new image: the tasks of the project before and after the change.
  EXECUTE format($f$CREATE FUNCTION public.project_tasks(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref
    LANGUAGE sql STABLE BEGIN ATOMIC SELECT ROW(%L, 'string', t.id)::synchro.synchro_row_ref FROM synchro_projection.tasks t
      WHERE t.project_id IN (p_old ->> 'id', p_new ->> 'id'); END$f$, t);
  -- Wrong on purpose: it ignores the old image, so a deleted project impacts nothing.
  EXECUTE format($f$CREATE FUNCTION public.project_tasks_new_only(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref
    LANGUAGE sql STABLE BEGIN ATOMIC SELECT ROW(%L, 'string', t.id)::synchro.synchro_row_ref FROM synchro_projection.tasks t
      WHERE t.project_id = p_new ->> 'id'; END$f$, t);
  EXECUTE format($f$CREATE FUNCTION public.project_tasks_wrong_table(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref
    LANGUAGE sql STABLE BEGIN ATOMIC SELECT ROW(%L, 'string', t.id)::synchro.synchro_row_ref FROM synchro_projection.tasks t
      WHERE t.project_id = p_new ->> 'id'; END$f$, t || 'x');
  EXECUTE format($f$CREATE FUNCTION public.project_tasks_wrong_type(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref
    LANGUAGE sql STABLE BEGIN ATOMIC SELECT ROW(%L, 'int', t.id)::synchro.synchro_row_ref FROM synchro_projection.tasks t
      WHERE t.project_id = p_new ->> 'id'; END$f$, t);
END
$do$;
-- Casting the project id to an integer fails for every project of these tests.
CREATE FUNCTION public.project_tasks_raises(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT ROW('none', 'string', ('no impact rule for ' || (p_new ->> 'id'))::integer::text)::synchro.synchro_row_ref;
END;
SELECT synchro.synchro_register_membership_dependency('public.tasks', 'public.projects', '${impactFn}', ${bound});
${rows ? `INSERT INTO public.projects VALUES ('p1', 'A'), ('p2', 'B');
INSERT INTO public.tasks (id, project_id) VALUES ('k1', 'p1'), ('k2', 'p1'), ('k3', 'p2');` : ''}
`;
}

/** Items are 'hot' when any item of their group is flagged, else 'cold': membership reads siblings. */
function siblingSetup(impactFn: string): string {
  return `
CREATE TABLE public.items (id text PRIMARY KEY, grp text NOT NULL, flagged boolean NOT NULL DEFAULT false);
SELECT synchro.synchro_prepare_projection_view('public.items');
CREATE FUNCTION public.item_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT CASE WHEN EXISTS (SELECT 1 FROM synchro_projection.items s WHERE s.grp = i.grp AND s.flagged) THEN 'hot' ELSE 'cold' END
    FROM synchro_projection.items i WHERE i.id = p_id;
END;
SELECT synchro.synchro_register_table('public.items', membership_fn => 'public.item_scopes');
SELECT synchro.synchro_register_shared_scope('hot');
SELECT synchro.synchro_register_shared_scope('cold');
DO $do$
DECLARE
  t text := (SELECT table_id FROM synchro.relations WHERE physical_relation = 'items');
BEGIN
  -- Every item of the group the row left and of the group it is in now. Images come typed as
  -- to_jsonb gives a row (flagged is a JSON boolean, not the text 't'): the last condition relies on it.
  EXECUTE format($f$CREATE FUNCTION public.item_siblings(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref
    LANGUAGE sql STABLE BEGIN ATOMIC SELECT ROW(%L, 'string', s.id)::synchro.synchro_row_ref FROM synchro_projection.items s
      WHERE s.grp IN (p_old ->> 'grp', p_new ->> 'grp') AND jsonb_typeof(coalesce(p_new, p_old) -> 'flagged') = 'boolean'; END$f$, t);
  EXECUTE format($f$CREATE FUNCTION public.item_siblings_new_only(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref
    LANGUAGE sql STABLE BEGIN ATOMIC SELECT ROW(%L, 'string', s.id)::synchro.synchro_row_ref FROM synchro_projection.items s
      WHERE s.grp = p_new ->> 'grp'; END$f$, t);
END
$do$;
SELECT synchro.synchro_register_membership_dependency('public.items', 'public.items', '${impactFn}');
INSERT INTO public.items (id, grp) VALUES ('a1', 'g1'), ('a2', 'g1'), ('a3', 'g1'), ('b1', 'g2');
`;
}

async function withCapture(setup: string, fn: (h: Harness) => Promise<void>): Promise<void> {
  const h = await freshServer(env(), setup, { capture: true });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

/** The live edges of a table next to a from-scratch evaluation of its membership function over the final projection. */
async function edgesAndScratch(h: Harness, table: string, fn: string): Promise<{ live: string[]; scratch: string[]; contents: string[] }> {
  const q = async (sql: string) => (await h.sql.query<{ x: string }>(sql, [table])).rows.map((r) => r.x).sort();
  return {
    live: await q(`SELECT e.pk_text || '>' || e.scope_id AS x FROM synchro.membership_edges e JOIN synchro.relations r USING (table_id)
                    WHERE r.physical_relation = $1`),
    scratch: await q(`SELECT p.id || '>' || s AS x FROM synchro_projection.${table} p, LATERAL ${fn}(p.id) s WHERE $1::text IS NOT NULL`),
    contents: await q(`SELECT c.pk_text || '>' || c.scope_id AS x FROM synchro.scope_rows c JOIN synchro.relations r USING (table_id)
                        WHERE r.physical_relation = $1`),
  };
}

/** Edges equal a from-scratch evaluation, and scope contents follow the edges (no soft deletes here). */
async function assertScratch(h: Harness, table: string, fn: string, expected: string[]): Promise<void> {
  const { live, scratch, contents } = await edgesAndScratch(h, table, fn);
  assert.deepEqual(live, scratch);
  assert.deepEqual(contents, live);
  assert.deepEqual(live, expected);
}

async function cursorsFor(h: Harness, s: Session, scopes: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const scope of scopes) out[scope] = (await rebuildAll(h, s, scope)).finalCursor;
  return out;
}

/** Pulls every scope from its cursor; returns [scope, key, op, has row] per change (by scope, then key), and the next cursors. */
async function pullChanges(h: Harness, s: Session, cursors: Record<string, string>): Promise<{ changes: Array<[string, unknown, string, boolean]>; next: Record<string, string> }> {
  const reply = await pull(h, s, cursors, { active: Object.keys(cursors) });
  assert.equal(reply.status, 200, reply.text);
  assert.equal(reply.json.has_more, false);
  const changes = reply.json.changes.map((c: { scope: string; pk: object; op: string; row?: unknown }) => [c.scope, Object.values(c.pk)[0], c.op, c.row !== undefined]);
  changes.sort((a: [string, string], b: [string, string]) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1));
  return { changes, next: reply.json.scope_cursors };
}

// Every client also holds its own user scope; pulls name all assigned scopes.
const TEAMS = ['team:A', 'team:B', 'user:u1'];

test('a project moving to another team in one transaction moves its tasks: a rowless delete in the old team, an upsert in the new one', async () => {
  await withCapture(projectSetup('public.project_tasks'), async (h) => {
    await catchUp(h);
    await assertScratch(h, 'tasks', 'public.task_scopes', ['k1>team:A', 'k2>team:A', 'k3>team:B']);
    const s = await connect(h);
    let cursors = await cursorsFor(h, s, TEAMS);

    await h.sql.query("BEGIN; UPDATE public.projects SET team = 'C' WHERE id = 'p1'; UPDATE public.projects SET team = 'B' WHERE id = 'p1'; COMMIT");
    await catchUp(h);
    await assertScratch(h, 'tasks', 'public.task_scopes', ['k1>team:B', 'k2>team:B', 'k3>team:B']);
    let pulled = await pullChanges(h, s, cursors);
    assert.deepEqual(pulled.changes, [
      ['team:A', 'k1', 'delete', false],
      ['team:A', 'k2', 'delete', false],
      ['team:B', 'k1', 'upsert', true],
      ['team:B', 'k2', 'upsert', true],
    ]);
    cursors = pulled.next;
    assert.deepEqual((await rebuildAll(h, s, 'team:B')).records.map((r) => Object.values(r.pk)[0]).sort(), ['k1', 'k2', 'k3']);

    // Deleting a project takes its tasks out of every team (seen only through the old image);
    // a new project and a task moved to it in the same transaction land in team A.
    await h.sql.query("BEGIN; DELETE FROM public.projects WHERE id = 'p2'; INSERT INTO public.projects VALUES ('p3', 'A'); UPDATE public.tasks SET project_id = 'p3' WHERE id = 'k2'; COMMIT");
    await catchUp(h);
    await assertScratch(h, 'tasks', 'public.task_scopes', ['k1>team:B', 'k2>team:A']);
    pulled = await pullChanges(h, s, cursors);
    assert.deepEqual(pulled.changes, [
      ['team:A', 'k2', 'upsert', true],
      ['team:B', 'k2', 'delete', false],
      ['team:B', 'k3', 'delete', false],
    ]);
    // The dependency's rows are projected, but it has no edges and no scope contents of its own.
    const own = await h.sql.query(`SELECT (SELECT count(*) FROM synchro.membership_edges WHERE table_id LIKE 'd%')::int AS e,
      (SELECT count(*) FROM synchro.scope_effects WHERE table_id LIKE 'd%')::int AS f, (SELECT count(*) FROM synchro_projection.projects)::int AS p`);
    assert.deepEqual(own.rows[0], { e: 0, f: 0, p: 2 });
  });
});

test('the effects one project move derives are numbered from zero within each scope, in key order', async () => {
  await withCapture(projectSetup('public.project_tasks'), async (h) => {
    await h.sql.query("INSERT INTO public.tasks (id, project_id) VALUES ('k0', 'p1')");
    await catchUp(h);
    await h.sql.query("UPDATE public.projects SET team = 'B' WHERE id = 'p1'");
    await catchUp(h);
    const { rows } = await h.sql.query<{ x: string }>(
      `SELECT e.scope_id || ' ' || e.pk_text || ' ' || e.op || ' ' || e.event_ordinal || '/' || e.effect_ordinal AS x
         FROM synchro.scope_effects e WHERE e.commit_lsn = (SELECT max(commit_lsn) FROM synchro.wal_transactions)
        ORDER BY e.scope_id, e.event_ordinal, e.effect_ordinal`,
    );
    // The project itself is capture-only, so each scope holds only the moved tasks: 0, 1, 2 in each.
    assert.deepEqual(
      rows.map((r) => r.x),
      ['team:A k0 delete 0/0', 'team:A k1 delete 0/1', 'team:A k2 delete 0/2', 'team:B k0 upsert 0/0', 'team:B k1 upsert 0/1', 'team:B k2 upsert 0/2'],
    );
  });
});

test('an impact function that ignores the old image leaves edges a from-scratch evaluation does not have', async () => {
  await withCapture(projectSetup('public.project_tasks_new_only'), async (h) => {
    await catchUp(h);
    await h.sql.query("DELETE FROM public.projects WHERE id = 'p2'");
    await catchUp(h);
    const { live, scratch } = await edgesAndScratch(h, 'tasks', 'public.task_scopes');
    // k3 lost its project, but the new-image-only function named no task: its edge stays.
    assert.deepEqual(scratch, ['k1>team:A', 'k2>team:A']);
    assert.deepEqual(live, ['k1>team:A', 'k2>team:A', 'k3>team:B']);
  });
});

test('self-impact: flipping one item moves its siblings, and moving it to another group moves both groups', async () => {
  await withCapture(siblingSetup('public.item_siblings'), async (h) => {
    await catchUp(h);
    await assertScratch(h, 'items', 'public.item_scopes', ['a1>cold', 'a2>cold', 'a3>cold', 'b1>cold']);
    const s = await connect(h);
    let cursors = await cursorsFor(h, s, ['cold', 'hot', 'user:u1']);

    await h.sql.query("UPDATE public.items SET flagged = true WHERE id = 'a1'");
    await catchUp(h);
    await assertScratch(h, 'items', 'public.item_scopes', ['a1>hot', 'a2>hot', 'a3>hot', 'b1>cold']);
    let pulled = await pullChanges(h, s, cursors);
    assert.deepEqual(pulled.changes, [
      ['cold', 'a1', 'delete', false],
      ['cold', 'a2', 'delete', false],
      ['cold', 'a3', 'delete', false],
      ['hot', 'a1', 'upsert', true],
      ['hot', 'a2', 'upsert', true],
      ['hot', 'a3', 'upsert', true],
    ]);
    cursors = pulled.next;

    await h.sql.query("UPDATE public.items SET grp = 'g2' WHERE id = 'a1'");
    await catchUp(h);
    await assertScratch(h, 'items', 'public.item_scopes', ['a1>hot', 'a2>cold', 'a3>cold', 'b1>hot']);
    pulled = await pullChanges(h, s, cursors);
    assert.deepEqual(pulled.changes, [
      ['cold', 'a2', 'upsert', true],
      ['cold', 'a3', 'upsert', true],
      ['cold', 'b1', 'delete', false],
      ['hot', 'a1', 'upsert', true],
      ['hot', 'a2', 'delete', false],
      ['hot', 'a3', 'delete', false],
      ['hot', 'b1', 'upsert', true],
    ]);
  });
});

test('self-impact without the old image: the group an item left keeps stale edges', async () => {
  await withCapture(siblingSetup('public.item_siblings_new_only'), async (h) => {
    await catchUp(h);
    await h.sql.query("UPDATE public.items SET flagged = true WHERE id = 'a1'");
    await h.sql.query("UPDATE public.items SET grp = 'g2' WHERE id = 'a1'");
    await catchUp(h);
    const { live, scratch } = await edgesAndScratch(h, 'items', 'public.item_scopes');
    assert.deepEqual(scratch, ['a1>hot', 'a2>cold', 'a3>cold', 'b1>hot']);
    assert.notDeepEqual(live, scratch);
  });
});

/** What a quarantined transaction must not have changed. */
async function materializedState(h: Harness) {
  const q = async (sql: string) => JSON.stringify((await h.sql.query(sql)).rows);
  return [
    await q('SELECT table_id, pk_text, server_version FROM synchro.projections ORDER BY 1, 2'),
    await q('SELECT * FROM synchro.membership_edges ORDER BY 1, 2, 3'),
    await q('SELECT scope_id, pk_text FROM synchro.scope_rows ORDER BY 1, 2'),
    await q('SELECT count(*) FROM synchro.scope_effects'),
    await q('SELECT * FROM synchro_projection.projects ORDER BY id'),
  ].join('\n');
}

for (const [name, fn, bound] of [
  ['a row reference naming another table', 'public.project_tasks_wrong_table', 1000],
  ['a row reference with the wrong key type', 'public.project_tasks_wrong_type', 1000],
  ['more rows than max_impact_rows', 'public.project_tasks', 2],
  ['nothing but an error', 'public.project_tasks_raises', 1000],
] as const) {
  test(`an impact function returning ${name} quarantines the transaction with scope_evaluation_failed and materializes nothing`, async () => {
    await withCapture(projectSetup(fn, bound, false), async (h) => {
      await h.sql.query("INSERT INTO public.tasks (id, project_id) VALUES ('k1', 'p1'), ('k2', 'p1'), ('k3', 'p1')");
      await catchUp(h);
      const before = await materializedState(h);
      await h.sql.query("INSERT INTO public.projects VALUES ('p1', 'A')");
      await assert.rejects(catchUp(h), CapturePoisoned);
      const poison = await h.sql.query("SELECT failure_class, table_id FROM synchro.wal_poison WHERE lifecycle = 'active'");
      assert.deepEqual(poison.rows.map((r) => r.failure_class), ['scope_evaluation_failed']);
      assert.match(String(poison.rows[0]?.table_id), /^t\d+$/);
      assert.equal(await materializedState(h), before);
    });
  });
}

test('an impact result exactly at its bound passes', async () => {
  await withCapture(projectSetup('public.project_tasks', 3, false), async (h) => {
    await h.sql.query("INSERT INTO public.tasks (id, project_id) VALUES ('k1', 'p1'), ('k2', 'p1'), ('k3', 'p1')");
    await h.sql.query("INSERT INTO public.projects VALUES ('p1', 'A')");
    await catchUp(h);
    await assertScratch(h, 'tasks', 'public.task_scopes', ['k1>team:A', 'k2>team:A', 'k3>team:A']);
  });
});

const REFUSALS_SQL = `
CREATE TABLE public.projects (id text PRIMARY KEY, team text NOT NULL);
CREATE TABLE public.tasks (id text PRIMARY KEY, project_id text NOT NULL);
CREATE TABLE public.loose (id text PRIMARY KEY);
CREATE TABLE public.keyless (id text);
SELECT synchro.synchro_register_capture_dependency('public.projects');
CREATE FUNCTION public.task_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'team:x'; END;
SELECT synchro.synchro_register_table('public.tasks', membership_fn => 'public.task_scopes');
CREATE FUNCTION public.ok_impact(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref LANGUAGE sql STABLE
  BEGIN ATOMIC SELECT NULL::synchro.synchro_row_ref WHERE false; END;
CREATE FUNCTION public.volatile_impact(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref LANGUAGE sql VOLATILE
  BEGIN ATOMIC SELECT NULL::synchro.synchro_row_ref WHERE false; END;
CREATE FUNCTION public.one_arg_impact(p_new jsonb) RETURNS SETOF synchro.synchro_row_ref LANGUAGE sql STABLE
  BEGIN ATOMIC SELECT NULL::synchro.synchro_row_ref WHERE false; END;
CREATE FUNCTION public.text_impact(p_old jsonb, p_new jsonb) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'x' WHERE false; END;
CREATE FUNCTION public.single_impact(p_old jsonb, p_new jsonb) RETURNS synchro.synchro_row_ref LANGUAGE sql STABLE
  BEGIN ATOMIC SELECT NULL::synchro.synchro_row_ref; END;
`;

async function registryCounts(h: Harness) {
  const { rows } = await h.sql.query(`SELECT (SELECT max(generation) FROM synchro.registry_generations)::int AS g,
    (SELECT count(*) FROM synchro.membership_dependencies)::int AS d, (SELECT count(*) FROM synchro.relations)::int AS r`);
  return rows[0];
}

test('dependency registration refuses bad input with invalid_registration and opens no registry generation', async () => {
  const h = await freshServer(env(), REFUSALS_SQL);
  try {
    const before = await registryCounts(h);
    const cases: Array<[string, string, string | null, string | number, string]> = [
      ['public.nope', 'public.projects', 'public.ok_impact', 10, 'unknown_relation'],
      ['public.tasks', 'public.loose', 'public.ok_impact', 10, 'undeclared_dependency'],
      ['tasks', 'public.projects', 'public.ok_impact', 10, 'unknown_relation'],
      ['public.projects', 'public.tasks', 'public.ok_impact', 10, 'invalid_dependency_target'],
      ['public.tasks', 'public.projects', 'public.volatile_impact', 10, 'invalid_scope_function'],
      ['public.tasks', 'public.projects', 'public.one_arg_impact', 10, 'invalid_scope_function'],
      ['public.tasks', 'public.projects', 'public.text_impact', 10, 'invalid_scope_function'],
      ['public.tasks', 'public.projects', 'public.single_impact', 10, 'invalid_scope_function'],
      ['public.tasks', 'public.projects', 'public.missing_impact', 10, 'invalid_scope_function'],
      ['public.tasks', 'public.projects', null, 10, 'undeclared_dependency'],
      ['public.tasks', 'public.projects', 'public.ok_impact', 0, 'invalid_limit'],
      ['public.tasks', 'public.projects', 'public.ok_impact', -1, 'invalid_limit'],
      ['public.tasks', 'public.projects', 'public.ok_impact', 'NULL', 'invalid_limit'],
    ];
    for (const [target, dep, fn, bound, reason] of cases) {
      await assert.rejects(
        h.sql.query(`SELECT synchro.synchro_register_membership_dependency($1, $2, $3, ${bound}::integer)`, [target, dep, fn]),
        (e: { code?: string; message: string }) => e.code === '22023' && JSON.parse(e.message).error.reason === reason,
        `${target} ${dep} ${fn} ${bound}`,
      );
      assert.deepEqual(await registryCounts(h), before);
    }
    // A capture dependency follows the key rules of a synced table.
    await assert.rejects(h.sql.query("SELECT synchro.synchro_register_capture_dependency('public.keyless')"), (e: { message: string }) =>
      JSON.parse(e.message).error.reason === 'missing_primary_key');
    assert.deepEqual(await registryCounts(h), before);

    // The valid declaration opens exactly one registry generation; declaring it twice is refused.
    const ok = await h.sql.query<{ id: string }>("SELECT synchro.synchro_register_membership_dependency('public.tasks', 'public.projects', 'public.ok_impact', 5) AS id");
    const after = await registryCounts(h);
    assert.deepEqual(after, { g: Number(before?.g) + 1, d: 1, r: before?.r });
    const rec = await h.sql.query(`SELECT d.dependency_id, d.dependency_registration_kind, d.impact_function_id, d.max_impact_rows, d.registry_generation::int AS g,
        cardinality(d.dependency_field_ids) AS fields FROM synchro.membership_dependencies d`);
    assert.deepEqual(rec.rows[0], { dependency_id: ok.rows[0]?.id, dependency_registration_kind: 'capture_dependency', impact_function_id: 'public.ok_impact', max_impact_rows: 5, g: after?.g, fields: 2 });
    await assert.rejects(h.sql.query("SELECT synchro.synchro_register_membership_dependency('public.tasks', 'public.projects', 'public.ok_impact')"), (e: { message: string }) =>
      JSON.parse(e.message).error.reason === 'duplicate_dependency');
    assert.deepEqual(await registryCounts(h), after);
  } finally {
    await h.close();
  }
});

test('a capture dependency never reaches a client: not in the manifest, not in synchro_tables(), and a push naming it is refused', async () => {
  await withCapture(projectSetup('public.project_tasks'), async (h) => {
    await catchUp(h);
    const dep = (await h.sql.query<{ table_id: string; relation_id: string; kind: string }>("SELECT table_id, relation_id, kind FROM synchro.relations WHERE physical_relation = 'projects'")).rows[0];
    assert.equal(dep?.kind, 'capture_dependency');
    assert.match(String(dep?.table_id), /^d\d+$/);
    const schema = await h.get('/sync/schema');
    assert.equal(schema.status, 200);
    assert.deepEqual(schema.json.manifest.tables.map((t: { name: string }) => t.name), ['tasks']);
    for (const hidden of [JSON.stringify(dep?.table_id), JSON.stringify(dep?.relation_id), 'projects']) assert.ok(!schema.text.includes(hidden), hidden);
    const tables = await h.sql.query<{ t: { tables: Array<{ table_name: string }> } }>('SELECT synchro.synchro_tables() AS t');
    assert.deepEqual(tables.rows[0]?.t.tables.map((t) => t.table_name), ['tasks']);

    const s = await connect(h);
    const before = await h.sql.query('SELECT * FROM public.projects ORDER BY id');
    const mutation = { mutation_id: randomUUID(), table: dep?.table_id, pk: { [`${dep?.table_id}f1`]: 'p9' }, authored_schema: s.schema, op: 'insert', client_version: NOW, columns: { [`${dep?.table_id}f2`]: 'A' } };
    const pushed = await h.post('/sync/push', pushBody(s, [mutation]));
    assert.equal(pushed.status, 200, pushed.text);
    assert.equal(pushed.json.accepted.length, 0, pushed.text);
    assert.match(pushed.text, /table_not_synced/);
    assert.deepEqual((await h.sql.query('SELECT * FROM public.projects ORDER BY id')).rows, before.rows);
  });
});
