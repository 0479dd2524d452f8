/**
 * The scope function contract at the SQL level: what membership registration
 * refuses (and that a refusal activates nothing), when a membership function
 * may read a capture dependency's projection, and that the capture worker
 * evaluates a membership function with its owner's rights.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CapturePoisoned } from '../../reference/server/core/capture-control.ts';
import { catchUp, freshServer, type Harness, useEnv } from './helpers.ts';

const env = useEnv();

/** Tasks are registered with a valid function; `memberships` has a projection but no registration. */
const TASKS_SQL = `
CREATE SCHEMA app;
CREATE TABLE public.tasks (id text PRIMARY KEY, owner_id text NOT NULL, title text NOT NULL DEFAULT '');
CREATE TABLE public.memberships (user_id text PRIMARY KEY, team text NOT NULL);
SELECT synchro.synchro_prepare_projection_view('public.tasks');
SELECT synchro.synchro_prepare_projection_view('public.memberships');
CREATE FUNCTION app.task_scopes(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE SECURITY INVOKER
  BEGIN ATOMIC SELECT 'user:' || owner_id FROM synchro_projection.tasks WHERE id = p_row_key; END;
SELECT synchro.synchro_register_table('public.tasks', membership_fn => 'app.task_scopes');
`;

const activeGeneration = async (h: Harness) => (await h.sql.query<{ g: number }>('SELECT max(generation)::int AS g FROM synchro.registry_generations')).rows[0]?.g;

/** Asserts `sql` fails with invalid_registration and `reason`, and that no registry generation activated. */
async function assertRefused(h: Harness, sql: string, reason: string, label: string): Promise<void> {
  const before = await activeGeneration(h);
  await assert.rejects(h.sql.query(sql), (e: { code?: string; message: string }) => {
    assert.equal(e.code, '22023', `${label}: ${e.message}`);
    const error = JSON.parse(e.message).error;
    assert.deepEqual([error.code, error.reason], ['invalid_registration', reason], label);
    return true;
  });
  assert.equal(await activeGeneration(h), before, `${label}: nothing activates`);
}

// One function per way of breaking the contract; each is created (PostgreSQL accepts it) and then offered to registration.
const REFUSALS: Array<[label: string, name: string, fanout: number, reason: string, definition: string]> = [
  ['plpgsql', 'app.f_plpgsql', 10, 'invalid_scope_function',
    "CREATE FUNCTION app.f_plpgsql(p_row_key text) RETURNS SETOF text LANGUAGE plpgsql STABLE AS $$ BEGIN RETURN NEXT 'user:x'; END $$"],
  ['VOLATILE', 'app.f_volatile', 10, 'invalid_scope_function',
    "CREATE FUNCTION app.f_volatile(p_row_key text) RETURNS SETOF text LANGUAGE sql VOLATILE BEGIN ATOMIC SELECT 'user:' || owner_id FROM synchro_projection.tasks WHERE id = p_row_key; END"],
  ['SECURITY DEFINER', 'app.f_definer', 10, 'invalid_scope_function',
    "CREATE FUNCTION app.f_definer(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER BEGIN ATOMIC SELECT 'user:' || owner_id FROM synchro_projection.tasks WHERE id = p_row_key; END"],
  ['an integer key for a text key', 'app.f_int_arg', 10, 'invalid_scope_function',
    "CREATE FUNCTION app.f_int_arg(p_row_key integer) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:x'; END"],
  ['a single text result', 'app.f_scalar', 10, 'invalid_scope_function',
    "CREATE FUNCTION app.f_scalar(p_row_key text) RETURNS text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:x'; END"],
  ['a name without its schema', 'f_unqualified', 10, 'invalid_scope_function',
    "CREATE FUNCTION public.f_unqualified(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:x'; END"],
  ['a read of the live table', 'app.f_live', 10, 'undeclared_dependency',
    "CREATE FUNCTION app.f_live(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' || owner_id FROM public.tasks WHERE id = p_row_key; END"],
  ['a read of an undeclared projection', 'app.f_undeclared', 10, 'undeclared_dependency',
    "CREATE FUNCTION app.f_undeclared(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'team:' || team FROM synchro_projection.memberships WHERE user_id = p_row_key; END"],
  ['the wall clock', 'app.f_clock', 10, 'invalid_scope_function',
    "CREATE FUNCTION app.f_clock(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'day:' || extract(dow FROM now())::text; END"],
  ['the caller identity', 'app.f_caller', 10, 'invalid_scope_function',
    "CREATE FUNCTION app.f_caller(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' || current_user::text; END"],
  ['a setting', 'app.f_setting', 10, 'invalid_scope_function',
    "CREATE FUNCTION app.f_setting(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' || current_setting('app.tenant'); END"],
  ['random values', 'app.f_random', 10, 'invalid_scope_function',
    "CREATE FUNCTION app.f_random(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'shard:' || floor(random() * 4)::text; END"],
  ['sequence state', 'app.f_sequence', 10, 'invalid_scope_function',
    "CREATE SEQUENCE app.s; CREATE FUNCTION app.f_sequence(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'shard:' || currval('app.s')::text; END"],
  ['dynamic SQL', 'app.f_dynamic', 10, 'invalid_scope_function',
    "CREATE FUNCTION app.f_dynamic(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' || (xpath('/row/o/text()', query_to_xml('select owner_id as o from public.tasks where id = ' || quote_literal(p_row_key), false, false, '')))[1]::text; END"],
  ['a fanout bound of 0', 'app.task_scopes', 0, 'invalid_limit', ''],
  ['a fanout bound of -1', 'app.task_scopes', -1, 'invalid_limit', ''],
];

test('membership registration refuses each breach of the contract with its reason and activates nothing', async () => {
  const h = await freshServer(env(), TASKS_SQL);
  try {
    const before = await activeGeneration(h);
    const identity = async () => (await h.sql.query("SELECT membership_function FROM synchro.relations WHERE physical_relation = 'tasks'")).rows;
    const was = await identity();
    for (const [label, name, fanout, reason, definition] of REFUSALS) {
      if (definition !== '') await h.sql.query(definition);
      await assertRefused(h, `SELECT synchro.synchro_reconfigure_membership('public.tasks', '${name}', ${fanout})`, reason, label);
    }
    assert.equal(await activeGeneration(h), before);
    assert.deepEqual(await identity(), was, 'the registered function stays');
    // The control: a function meeting the whole contract does activate a new generation.
    await h.sql.query("CREATE FUNCTION app.task_scopes_v2(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' || owner_id FROM synchro_projection.tasks WHERE id = p_row_key; END");
    await h.sql.query("SELECT synchro.synchro_reconfigure_membership('public.tasks', 'app.task_scopes_v2', 10)");
    assert.ok(Number(await activeGeneration(h)) > Number(before));
  } finally {
    await h.close();
  }
});

test('registering a new table with a function that breaks the contract registers nothing', async () => {
  const h = await freshServer(env(), TASKS_SQL);
  try {
    await h.sql.query('CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL)');
    await h.sql.query("SELECT synchro.synchro_prepare_projection_view('public.notes')");
    await h.sql.query("CREATE FUNCTION app.note_live(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' || owner FROM public.notes WHERE id = p_id; END");
    await assertRefused(h, "SELECT synchro.synchro_register_table('public.notes', membership_fn => 'app.note_live')", 'undeclared_dependency', 'live read');
    assert.equal((await h.sql.query("SELECT count(*)::int AS n FROM synchro.relations WHERE physical_relation = 'notes'")).rows[0].n, 0);
  } finally {
    await h.close();
  }
});

/** Tasks whose membership reads the projects projection; projects is a capture-only dependency. */
const PROJECTS_SQL = `
CREATE TABLE public.projects (id text PRIMARY KEY, team text NOT NULL);
CREATE TABLE public.tasks (id text PRIMARY KEY, project_id text NOT NULL);
SELECT synchro.synchro_register_capture_dependency('public.projects');
SELECT synchro.synchro_prepare_projection_view('public.tasks');
CREATE FUNCTION public.task_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'team:' || p.team FROM synchro_projection.tasks t JOIN synchro_projection.projects p ON p.id = t.project_id WHERE t.id = p_id;
END;
-- Reads synchro.relations for the tasks table_id: not a projection, so never a valid impact function.
CREATE FUNCTION public.project_tasks_catalog(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT ROW(r.table_id, 'string', t.id)::synchro.synchro_row_ref FROM synchro_projection.tasks t, synchro.relations r
   WHERE r.physical_relation = 'tasks' AND t.project_id IN (p_old ->> 'id', p_new ->> 'id');
END;
`;

/** Creates the impact function once the tasks table_id exists (inside the registering transaction). */
const IMPACT_SQL = `DO $do$ BEGIN
  EXECUTE format($f$CREATE FUNCTION public.project_tasks(p_old jsonb, p_new jsonb) RETURNS SETOF synchro.synchro_row_ref LANGUAGE sql STABLE
    BEGIN ATOMIC SELECT ROW(%L, 'string', t.id)::synchro.synchro_row_ref FROM synchro_projection.tasks t
      WHERE t.project_id IN (p_old ->> 'id', p_new ->> 'id'); END$f$, (SELECT table_id FROM synchro.relations WHERE physical_relation = 'tasks'));
END $do$;`;

test('a membership function reading a dependency projection registers only with the dependency declared in the same transaction', async () => {
  const h = await freshServer(env(), PROJECTS_SQL);
  try {
    const tasksRegistered = async () => (await h.sql.query("SELECT count(*)::int AS n FROM synchro.relations WHERE physical_relation = 'tasks'")).rows[0].n;
    // Alone, the registration's own transaction ends without the declaration.
    await assertRefused(h, "SELECT synchro.synchro_register_table('public.tasks', membership_fn => 'public.task_scopes')", 'undeclared_dependency', 'no declaration');
    assert.equal(await tasksRegistered(), 0);
    // A declaration in a later transaction is too late: the first one already failed. Together they commit.
    await h.sql.query(`BEGIN;
      SELECT synchro.synchro_register_table('public.tasks', membership_fn => 'public.task_scopes');
      ${IMPACT_SQL}
      SELECT synchro.synchro_register_membership_dependency('public.tasks', 'public.projects', 'public.project_tasks');
      COMMIT`);
    assert.equal(await tasksRegistered(), 1);
    assert.equal((await h.sql.query('SELECT count(*)::int AS n FROM synchro.membership_dependencies')).rows[0].n, 1);
  } finally {
    await h.close();
  }
});

test('an impact function reading synchro metadata is refused: it may read only the two projections', async () => {
  const h = await freshServer(env(), `${PROJECTS_SQL}
CREATE FUNCTION public.task_scopes_own(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'team:x' FROM synchro_projection.tasks t WHERE t.id = p_id;
END;
SELECT synchro.synchro_register_table('public.tasks', membership_fn => 'public.task_scopes_own');`);
  try {
    await assertRefused(h, "SELECT synchro.synchro_register_membership_dependency('public.tasks', 'public.projects', 'public.project_tasks_catalog')", 'undeclared_dependency', 'catalog read');
  } finally {
    await h.close();
  }
});

const OWNED_SQL = `
CREATE ROLE scope_fn_owner NOLOGIN;
CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL DEFAULT 'u1');
SELECT synchro.synchro_prepare_projection_view('public.notes');
GRANT USAGE ON SCHEMA synchro_projection TO scope_fn_owner;
GRANT SELECT ON synchro_projection.notes TO scope_fn_owner;
CREATE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id;
END;
ALTER FUNCTION public.note_scopes(text) OWNER TO scope_fn_owner;
SELECT synchro.synchro_register_table('public.notes', membership_fn => 'public.note_scopes');
`;

test('the worker evaluates a membership function as its owner: once the owner loses SELECT on the projection, the next transaction is quarantined', async () => {
  const h = await freshServer(env(), OWNED_SQL, { capture: true });
  try {
    await h.sql.query("INSERT INTO public.notes (id) VALUES ('a')");
    await catchUp(h);
    assert.deepEqual((await h.sql.query('SELECT pk_text, scope_id FROM synchro.membership_edges')).rows, [{ pk_text: 'a', scope_id: 'user:u1' }]);
    // The worker itself can still read the projection; only the owner's rights changed.
    await h.sql.query('REVOKE SELECT ON synchro_projection.notes FROM scope_fn_owner');
    await h.sql.query("INSERT INTO public.notes (id) VALUES ('b')");
    await assert.rejects(catchUp(h), CapturePoisoned);
    const poison = await h.sql.query("SELECT failure_class FROM synchro.wal_poison WHERE lifecycle = 'active'");
    assert.deepEqual(poison.rows.map((r) => r.failure_class), ['scope_evaluation_failed']);
    assert.equal((await h.sql.query("SELECT count(*)::int AS n FROM synchro.membership_edges WHERE pk_text = 'b'")).rows[0].n, 0);
  } finally {
    await h.close();
  }
});
