import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkMessage } from '../../harness/wire/index.ts';
import { connect, freshServer, type Harness, NOTES_SQL, useEnv } from './helpers.ts';

const env = useEnv();

async function withServer(fn: (h: Harness) => Promise<void>, setup = NOTES_SQL): Promise<void> {
  const h = await freshServer(env(), setup);
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

const base = { platform: 'test', app_version: '1.0.0', protocol_version: 3 };

async function connectAs(h: Harness, body: Record<string, unknown>, user = 'u1') {
  const res = await h.post('/sync/connect', { ...base, ...body }, { user });
  if (res.status === 200) {
    const checked = checkMessage('connect-response', res.json);
    assert.deepEqual(checked.schemaErrors, []);
    assert.deepEqual(checked.violations, []);
  }
  return res;
}

test('a fresh client gets replace, a generation and its user scope; an exact reference gets none and no version step', async () => {
  await withServer(async (h) => {
    const first = await connectAs(h, { client_id: 'c1', schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} });
    assert.equal(first.status, 200);
    assert.equal(first.json.schema.action, 'replace');
    assert.equal(first.json.client_generation, 1);
    assert.equal(first.json.scope_set_version, 1);
    assert.deepEqual(first.json.scopes, { add: [{ id: 'user:u1', cursor: null }], remove: [] });
    const schema = { version: first.json.schema.version, hash: first.json.schema.hash };
    const again = await connectAs(h, { client_id: 'c1', client_generation: 1, schema, scope_set_version: 1, known_scopes: { 'user:u1': { cursor: null } } });
    assert.equal(again.json.schema.action, 'none');
    assert.equal(again.json.schema_definition, undefined);
    assert.equal(again.json.scope_set_version, 1);
    assert.deepEqual(again.json.scopes, { add: [], remove: [] });
    // The same identity may not present the fresh sentinel again.
    const sentinel = await connectAs(h, { client_id: 'c1', schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} });
    assert.equal(sentinel.status, 400);
    assert.equal(sentinel.json.error.code, 'invalid_schema_reference');
    const noGeneration = await connectAs(h, { client_id: 'c1', schema, scope_set_version: 1, known_scopes: {} });
    assert.equal(noGeneration.json.error.code, 'invalid_schema_reference');
    // Retirement is irreversible: the identity never connects again.
    await h.sql.query("SELECT synchro.synchro_retire_client('u1', 'c1')");
    const retired = await connectAs(h, { client_id: 'c1', client_generation: 1, schema, scope_set_version: 1, known_scopes: {} });
    assert.equal(retired.status, 409);
    assert.equal(retired.json.error.code, 'client_retired');
  });
});

test('malformed references, sentinel misuse and other protocols', async () => {
  await withServer(async (h) => {
    for (const schema of [{ version: 0, hash: 'x' }, { version: 5, hash: '' }]) {
      const res = await connectAs(h, { client_id: 'c2', schema, scope_set_version: 0, known_scopes: {} });
      assert.equal(res.status, 400);
      assert.equal(res.json.error.code, 'invalid_schema_reference');
      assert.deepEqual(res.json.error.received_schema, schema);
    }
    const reset = await connectAs(h, { client_id: 'c2', schema: { version: 0, hash: '' }, schema_reset: true, client_generation: 1, scope_set_version: 0, known_scopes: {} });
    assert.equal(reset.json.error.code, 'invalid_schema_reference');
    const old = await connectAs(h, { client_id: 'c2', protocol_version: 2, schema: { version: 0, hash: 'x' }, scope_set_version: 0, known_scopes: {} });
    assert.equal(old.status, 426);
    assert.equal(old.json.error.received_protocol_version, 2);
    const { rows } = await h.sql.query('SELECT count(*)::int n FROM synchro.clients');
    assert.equal(rows[0].n, 0);
  });
});

test('grants, revocations and shared scopes change the set at the next connect by exactly one version', async () => {
  await withServer(async (h) => {
    const s = await connect(h, 'u1', 'c1');
    const again = (v: number) => connectAs(h, { client_id: 'c1', client_generation: s.generation, schema: s.schema, scope_set_version: v, known_scopes: {} });
    await h.sql.query("SELECT synchro.synchro_grant_user_scope('u1', 'project:1'), synchro.synchro_register_shared_scope('catalog_public')");
    const added = await again(1);
    assert.equal(added.json.scope_set_version, 2);
    assert.deepEqual(added.json.scopes.add.map((a: { id: string }) => a.id), ['catalog_public', 'project:1']);
    const same = await again(2);
    assert.equal(same.json.scope_set_version, 2);
    await h.sql.query("SELECT synchro.synchro_revoke_user_scope('u1', 'project:1'), synchro.synchro_revoke_user_scope('u1', 'user:u1')");
    const removed = await again(2);
    assert.equal(removed.json.scope_set_version, 3);
    assert.deepEqual(removed.json.scopes.remove, ['project:1', 'user:u1']);
  });
});

const ASSIGNMENT_SQL = `
CREATE TABLE public.memberships (user_id text, team text);
INSERT INTO public.memberships VALUES ('u1', 'team:a'), ('u1', 'team:b'), ('u1', 'team:c');
CREATE FUNCTION public.teams_of(p_user text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro
BEGIN ATOMIC SELECT team FROM public.memberships WHERE user_id = p_user; END;
REVOKE EXECUTE ON FUNCTION public.teams_of(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.teams_of(text) TO synchro_owner;
`;

test('the assignment function: NULL name changes nothing, bounds fail closed, bad results are 500 with no change', async () => {
  await withServer(async (h) => {
    const nothing = await h.sql.query('SELECT synchro.synchro_register_assignment_function(NULL, 0) IS NULL AS is_null');
    assert.equal(nothing.rows[0].is_null, true);
    await assert.rejects(h.sql.query("SELECT synchro.synchro_register_assignment_function('public.teams_of', 0)"), { code: '22023' });
    await h.sql.query("SELECT synchro.synchro_register_assignment_function('public.teams_of', 2)");
    const body = { client_id: 'c1', schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} };
    const over = await connectAs(h, body);
    assert.equal(over.status, 500);
    assert.equal(over.json.error.code, 'sync_integrity_failure');
    const clients = await h.sql.query('SELECT count(*)::int n FROM synchro.clients');
    assert.equal(clients.rows[0].n, 0, 'a failed evaluation writes nothing');
    await h.sql.query("SELECT synchro.synchro_register_assignment_function('public.teams_of', NULL)");
    const ok = await connectAs(h, body);
    assert.deepEqual(ok.json.scopes.add.map((a: { id: string }) => a.id), ['team:a', 'team:b', 'team:c', 'user:u1']);
    await h.sql.query("INSERT INTO public.memberships VALUES ('u1', 'user:x')");
    const bad = await connectAs(h, { ...body, client_id: 'c2' });
    assert.equal(bad.status, 500);
    // Editing the function body without registering again fails closed.
    await h.sql.query("DELETE FROM public.memberships WHERE team = 'user:x'");
    await h.sql.query(`CREATE OR REPLACE FUNCTION public.teams_of(p_user text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro
      BEGIN ATOMIC SELECT team FROM public.memberships WHERE user_id = p_user AND team <> 'team:c'; END`);
    assert.equal((await connectAs(h, { ...body, client_id: 'c3' })).status, 500);
  }, `${NOTES_SQL}${ASSIGNMENT_SQL}`);
});

test('registration refuses functions that break the rules', async () => {
  await withServer(async (h) => {
    const reject = async (ddl: string) => {
      await h.sql.query('DROP FUNCTION IF EXISTS public.f(text)');
      await h.sql.query(ddl);
      await h.sql.query('REVOKE EXECUTE ON FUNCTION public.f(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.f(text) TO synchro_owner');
      await assert.rejects(h.sql.query("SELECT synchro.synchro_register_assignment_function('public.f')"), ddl);
    };
    await reject("CREATE FUNCTION public.f(p text) RETURNS SETOF text LANGUAGE plpgsql STABLE SET search_path = pg_catalog, synchro AS $$ BEGIN RETURN NEXT 'x'; END $$");
    await reject("CREATE FUNCTION public.f(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro AS $$ SELECT 'x' $$");
    await reject("CREATE FUNCTION public.f(p text) RETURNS text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro RETURN 'x'");
    await reject("CREATE FUNCTION public.f(p text) RETURNS SETOF text LANGUAGE sql VOLATILE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'x'; END");
    await reject("CREATE FUNCTION public.f(p text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'x'; END");
    await reject("CREATE FUNCTION public.f(p text) RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'x'; END");
    await h.sql.query("CREATE FUNCTION public.g(t text) RETURNS text LANGUAGE sql IMMUTABLE RETURN t");
    await reject("CREATE FUNCTION public.f(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT public.g(p); END");
    await reject("CREATE FUNCTION public.f(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT scope_id FROM synchro.shared_scopes; END");
    const { rows } = await h.sql.query('SELECT count(*)::int n FROM synchro.assignment_function');
    assert.equal(rows[0].n, 0);
    // PUBLIC keeps EXECUTE: refused; once revoked, the same function is accepted.
    await h.sql.query('DROP FUNCTION IF EXISTS public.f(text)');
    await h.sql.query("CREATE FUNCTION public.f(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:' || p; END");
    await h.sql.query('GRANT EXECUTE ON FUNCTION public.f(text) TO synchro_owner');
    await assert.rejects(h.sql.query("SELECT synchro.synchro_register_assignment_function('public.f')"), /PUBLIC/);
    await h.sql.query('REVOKE EXECUTE ON FUNCTION public.f(text) FROM PUBLIC');
    await h.sql.query("SELECT synchro.synchro_register_assignment_function('public.f')");
    const after = await h.sql.query('SELECT count(*)::int n, max(max_scopes) m FROM synchro.assignment_function');
    assert.deepEqual(after.rows[0], { n: 1, m: 1000 });
  });
});

test('schema dispatch: reset rebuilds every assigned scope, unknown lineage is unsupported, an additive change replaces', async () => {
  await withServer(async (h) => {
    const s = await connect(h, 'u1', 'c1');
    const cont = { client_id: 'c1', client_generation: s.generation, scope_set_version: 1, known_scopes: { 'user:u1': { cursor: null } } };
    const unknown = await connectAs(h, { ...cont, schema: { version: 7, hash: 'b'.repeat(64) } });
    assert.equal(unknown.json.schema.action, 'unsupported');
    assert.equal(unknown.json.schema.reason, 'unknown_schema_lineage');
    const reset = await connectAs(h, { ...cont, schema: { version: 7, hash: 'b'.repeat(64) }, schema_reset: true });
    assert.equal(reset.json.schema.action, 'rebuild_local');
    assert.deepEqual(reset.json.affected_scopes, ['user:u1']);
    await h.sql.query("CREATE TABLE public.extra (id uuid PRIMARY KEY, label text); SELECT synchro.synchro_register_table('public.extra')");
    const moved = await connectAs(h, { ...cont, schema: s.schema });
    assert.equal(moved.json.schema.action, 'replace');
    assert.equal(moved.json.schema.version, s.schema.version + 1);
    assert.equal(moved.json.schema_definition.transition_class, 'class_2');
    assert.deepEqual(moved.json.schema_definition.parent_schema, s.schema);
    assert.deepEqual(moved.json.scope_cursor_updates, { 'user:u1': null });
    const immutable = h.sql.query('UPDATE synchro.manifests SET body_text = body_text');
    await assert.rejects(immutable, { code: '55000' });
  });
});

test('without a capture worker readiness fails closed and valid pulls and rebuilds answer a retryable 503', async () => {
  await withServer(async (h) => {
    const ready = await fetch(`${h.server.url}/ready`);
    assert.equal(ready.status, 503);
    assert.equal(await ready.text(), '{"ready":false}');
    const s = await connect(h);
    const envelope = { client_id: s.clientId, client_generation: s.generation, schema: s.schema };
    const bodies: Array<[string, unknown]> = [
      ['/sync/pull', { ...envelope, scope_set_version: 1, scopes: {}, limit: 10 }],
      ['/sync/rebuild', { ...envelope, scope: 'user:u1', rebuild_id: '0197e83a-f7e8-7e21-92c0-c621732bd5de', cursor: null, limit: 10 }],
    ];
    for (const [path, body] of bodies) {
      assert.equal((await h.post(path, {})).status, 400);
      const res = await h.post(path, body);
      assert.equal(res.status, 503);
      assert.equal(res.json.error.code, 'temporary_unavailable');
      assert.equal(res.json.error.retryable, true);
      assert.equal(res.headers.get('retry-after'), '5');
    }
    const schema = await fetch(`${h.server.url}/sync/schema`);
    assert.equal(schema.status, 200);
    assert.deepEqual(checkMessage('schema-response', await schema.json()).schemaErrors, []);
    const tables = await fetch(`${h.server.url}/sync/tables`);
    assert.equal(tables.status, 200);
    const tablesBody = (await tables.json()) as { tables: Array<{ table_name: string }> };
    assert.deepEqual(checkMessage('tables-response', tablesBody).schemaErrors, []);
    assert.deepEqual(tablesBody.tables.map((t) => t.table_name), ['notes', 'tags']);
    const wrong = await fetch(`${h.server.url}/sync/connect`, { method: 'GET' });
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.get('allow'), 'POST');
  });
});

test('table registration enforces the key and replica identity rules', async () => {
  await withServer(async (h) => {
    const cases: Array<[string, string]> = [
      ['CREATE TABLE public.x (v text)', 'missing_primary_key'],
      ['CREATE TABLE public.x (a text, b text, PRIMARY KEY (a, b))', 'composite_primary_key'],
      ['CREATE TABLE public.x (id text PRIMARY KEY DEFERRABLE)', 'unsupported_primary_key_type'],
      ['CREATE TABLE public.x (id numeric PRIMARY KEY)', 'unsupported_primary_key_type'],
      ['CREATE TABLE public.x (id timestamptz PRIMARY KEY)', 'unsupported_primary_key_type'],
      ['CREATE DOMAIN public.d AS text; CREATE TABLE public.x (id public.d PRIMARY KEY)', 'unsupported_primary_key_type'],
      ['CREATE TABLE public.x (id text PRIMARY KEY); ALTER TABLE public.x REPLICA IDENTITY FULL', 'unsupported_replica_identity'],
      ['CREATE TABLE public.x (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY)', 'unsupported_primary_key_type'],
    ];
    for (const [ddl, reason] of cases) {
      await h.sql.query('DROP TABLE IF EXISTS public.x; DROP DOMAIN IF EXISTS public.d');
      await h.sql.query(ddl);
      await assert.rejects(h.sql.query("SELECT synchro.synchro_register_table('public.x')"), (e: Error) => e.message.includes(reason), ddl);
    }
    await h.sql.query('CREATE SCHEMA a; CREATE SCHEMA b; CREATE TABLE a.items (id text PRIMARY KEY); CREATE TABLE b.items (id text PRIMARY KEY)');
    await assert.rejects(h.sql.query("SELECT synchro.synchro_register_table('items')"), /ambiguous_physical_relation/);
    const gens = await h.sql.query('SELECT count(*)::int n FROM synchro.registry_generations');
    assert.equal(gens.rows[0].n, 2, 'failed registrations activate nothing');
    await h.sql.query("CREATE TABLE public.k (id bigint PRIMARY KEY, r int4range); SELECT synchro.synchro_register_table('public.k')");
    const s = await connect(h);
    const k = s.manifest.tables.find((t: { name: string }) => t.name === 'k');
    assert.equal(k.fields.find((f: { name: string }) => f.name === 'id').type, 'int64');
    assert.equal(k.fields.find((f: { name: string }) => f.name === 'r').type, 'string');
  });
});
