import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect, freshServer, type Harness, useEnv } from './helpers.ts';
import { pull, rebuildAll } from './sync-flow.ts';

const env = useEnv();

const SETUP = `
CREATE TABLE public.items (id text PRIMARY KEY, owner text NOT NULL, title text NOT NULL);
SELECT synchro.synchro_prepare_projection_view('public.items');
CREATE FUNCTION public.item_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.items WHERE id = p_id;
END;
CREATE TABLE public.refs (id text PRIMARY KEY, label text NOT NULL);
SELECT synchro.synchro_prepare_projection_view('public.refs');
CREATE FUNCTION public.ref_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'shared'::text FROM synchro_projection.refs WHERE id = p_id;
END;
SELECT synchro.synchro_register_table('public.items', membership_fn => 'public.item_scopes');
SELECT synchro.synchro_register_table('public.refs', membership_fn => 'public.ref_scopes');
SELECT synchro.synchro_register_shared_scope('shared');
`;

async function withServer(fn: (h: Harness) => Promise<void>, capture = false): Promise<void> {
  const h = await freshServer(env(), SETUP, { capture });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

const fresh = (clientId: string, appVersion: unknown) => ({
  client_id: clientId,
  platform: 'test',
  app_version: appVersion,
  protocol_version: 3,
  schema: { version: 0, hash: '' },
  scope_set_version: 0,
  known_scopes: {},
});

test('the minimum client version: malformed values are refused, the gate ranks by SemVer 2.0.0 and names the runtime pair', async () => {
  await withServer(async (h) => {
    for (const bad of ['v1.0.0', '1.0', '1.0.0-', ' 1.0.0', '1.0.0-01']) {
      await assert.rejects(h.sql.query('SELECT synchro.synchro_set_minimum_client_version($1)', [bad]), { code: '22023' }, bad);
    }
    assert.equal((await h.post('/sync/connect', fresh('c0', 'v1.0.0'))).json.error.code, 'invalid_request');
    await h.sql.query("SELECT synchro.synchro_set_minimum_client_version('2.0.0')");
    const below = await h.post('/sync/connect', fresh('c1', '2.0.0-rc.1'));
    assert.equal(below.status, 426);
    assert.deepEqual(below.json.error, {
      code: 'upgrade_required',
      message: below.json.error.message,
      retryable: false,
      minimum_client_version: '2.0.0',
      received_client_version: '2.0.0-rc.1',
    });
    assert.equal((await h.post('/sync/connect', fresh('c2', '2.0.0+build.1'))).status, 200);
    assert.equal((await h.post('/sync/connect', fresh('c3', '10.0.0'))).status, 200);
    // The protocol gate comes first and keeps its own pair.
    const protocol = await h.post('/sync/connect', { ...fresh('c4', '1.0.0'), protocol_version: 2 });
    assert.deepEqual([protocol.status, protocol.json.error.required_protocol_version, protocol.json.error.minimum_client_version], [426, 3, undefined]);
    // A malformed version cannot be ranked: it is a malformed request, not a runtime answer.
    assert.equal((await h.post('/sync/connect', fresh('c5', '2.0'))).json.error.code, 'invalid_request');
    await h.sql.query('SELECT synchro.synchro_set_minimum_client_version(NULL)');
    assert.equal((await h.post('/sync/connect', fresh('c6', '0.0.1'))).status, 200);
  });
});

test('reconfiguration publishes Class 2, 3 and 4 manifests; Class 3 names the scopes whose rows gained values; cursors of unaffected scopes are carried over', async () => {
  await withServer(async (h) => {
    const catchUp = () => (h.server.capture as NonNullable<Harness['server']['capture']>).catchUp(15_000);
    await h.sql.query("INSERT INTO public.items VALUES ('i1', 'u1', 'first'); INSERT INTO public.refs VALUES ('r1', 'one')");
    await catchUp();
    const s = await connect(h, 'u1', 'c1');
    const cursors: Record<string, string | null> = {};
    for (const scope of ['shared', 'user:u1']) cursors[scope] = (await rebuildAll(h, s, scope)).finalCursor;
    const known = Object.fromEntries(Object.entries(cursors).map(([k, v]) => [k, { cursor: v }]));
    const body = { client_id: 'c1', client_generation: s.generation, platform: 'test', app_version: '1.0.0', protocol_version: 3, scope_set_version: 1, known_scopes: known };

    // An unmanaged column change publishes nothing.
    await h.sql.query('ALTER TABLE public.items ADD COLUMN note text');
    assert.equal((await h.post('/sync/connect', { ...body, schema: s.schema })).json.schema.action, 'none');

    // Class 2: a nullable field with no values; both cursors are carried over to the new schema.
    await h.sql.query("SELECT synchro.synchro_reconfigure_table('public.items')");
    const c2 = await h.post('/sync/connect', { ...body, schema: s.schema });
    assert.equal(c2.json.schema.action, 'replace');
    assert.equal(c2.json.schema_definition.transition_class, 'class_2');
    assert.deepEqual(Object.keys(c2.json.scope_cursor_updates).sort(), ['shared', 'user:u1']);
    for (const cursor of Object.values(c2.json.scope_cursor_updates)) assert.equal(typeof cursor, 'string');
    const s2 = { ...s, schema: { version: c2.json.schema.version, hash: c2.json.schema.hash } };
    const carried = await pull(h, s2, c2.json.scope_cursor_updates);
    assert.equal(carried.status, 200, carried.text);
    assert.deepEqual(carried.json.rebuild, []);
    // An old-schema cursor is never accepted under the new schema.
    const old = await pull(h, s2, cursors);
    assert.deepEqual(old.json.rebuild, ['shared', 'user:u1']);
    // Rows already captured take the new shape.
    const note = c2.json.schema_definition.tables.find((t: { name: string }) => t.name === 'items').fields.find((f: { name: string }) => f.name === 'note').field_id;
    const rebuilt = await rebuildAll(h, s2, 'user:u1');
    assert.equal(rebuilt.records[0]?.row[note], null);

    // Class 3: values for an added field in rows of scope "shared" only.
    await h.sql.query("BEGIN; ALTER TABLE public.refs ADD COLUMN rank integer; UPDATE public.refs SET rank = 5; SELECT synchro.synchro_reconfigure_table('public.refs'); COMMIT");
    await catchUp();
    const known2 = Object.fromEntries(Object.entries(c2.json.scope_cursor_updates).map(([k, v]) => [k, { cursor: v }]));
    const c3 = await h.post('/sync/connect', { ...body, known_scopes: known2, schema: s2.schema });
    assert.equal(c3.json.schema.action, 'rebuild_local');
    assert.equal(c3.json.schema_definition.transition_class, 'class_3');
    assert.deepEqual(c3.json.affected_scopes, ['shared']);
    assert.equal(c3.json.scope_cursor_updates.shared, null);
    assert.equal(typeof c3.json.scope_cursor_updates['user:u1'], 'string');
    const other = await connect(h, 'u2', 'c2');
    const c3other = await h.post('/sync/connect', { ...body, client_id: 'c2', client_generation: other.generation, known_scopes: {}, schema: s.schema }, { user: 'u2' });
    // u2 holds "shared" too (a registered shared scope), so it is affected as well.
    assert.deepEqual(c3other.json.affected_scopes, ['shared']);

    // Class 4: a removed field; the step is incompatible for every earlier reference.
    await h.sql.query("BEGIN; ALTER TABLE public.items DROP COLUMN title; SELECT synchro.synchro_reconfigure_table('public.items'); COMMIT");
    const c4 = await h.post('/sync/connect', { ...body, schema: s2.schema });
    assert.deepEqual([c4.json.schema.action, c4.json.schema.reason], ['unsupported', 'incompatible_schema_transition']);
    const published = await h.sql.query<{ transition_class: string }>('SELECT transition_class FROM synchro.manifests ORDER BY schema_version');
    assert.deepEqual(
      published.rows.map((r) => r.transition_class),
      ['initial', 'class_2', 'class_3', 'class_4'],
    );
  }, true);
});
