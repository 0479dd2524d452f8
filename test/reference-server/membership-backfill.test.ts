import assert from 'node:assert/strict';
import { test } from 'node:test';
import { catchUp, freshServer, type Harness, useEnv } from './helpers.ts';

const env = useEnv();

// Rule 1 places a note in its owner's scope; rule 2 adds the scope of its topic.
const SETUP = `
CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL, topic text NOT NULL);
SELECT synchro.synchro_prepare_projection_view('public.notes');
CREATE FUNCTION public.note_owner(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id;
END;
CREATE FUNCTION public.note_owner_topic(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT unnest(ARRAY['user:' || owner, 'topic:' || topic]) FROM synchro_projection.notes WHERE id = p_id;
END;
SELECT synchro.synchro_register_table('public.notes', membership_fn => 'public.note_owner', composition => 'multi_scope');
INSERT INTO public.notes (id, owner, topic) VALUES ('n1', 'u1', 'red'), ('n2', 'u1', 'blue'), ('n3', 'u2', 'red');
`;

async function withServer(fn: (h: Harness) => Promise<void>): Promise<void> {
  const h = await freshServer(env(), SETUP, { capture: true });
  try {
    await catchUp(h);
    await fn(h);
  } finally {
    await h.close();
  }
}

const scalar = async (h: Harness, sql: string, params: unknown[] = []) => Object.values((await h.sql.query(sql, params)).rows[0] ?? {})[0];

async function edges(h: Harness): Promise<string[]> {
  const { rows } = await h.sql.query<{ e: string }>("SELECT pk_text || '>' || scope_id AS e FROM synchro.membership_edges ORDER BY 1");
  return rows.map((r) => r.e);
}

async function scopeRows(h: Harness): Promise<string[]> {
  const { rows } = await h.sql.query<{ r: string }>("SELECT scope_id || '/' || pk_text AS r FROM synchro.scope_rows ORDER BY 1");
  return rows.map((r) => r.r);
}

const begin = async (h: Harness, batch = 1) => String(await scalar(h, "SELECT synchro.synchro_begin_membership_backfill('public.notes', 'public.note_owner_topic', $1)::text", [batch]));
const batch = async (h: Harness, id: string) => Number(await scalar(h, 'SELECT synchro.synchro_membership_backfill_batch($1::bigint)', [id]));
const activate = (h: Harness, id: string) => scalar(h, 'SELECT synchro.synchro_activate_membership_backfill($1::bigint)', [id]) as Promise<Record<string, unknown>>;

test('a held backfill stages edges apart and leaves the live edges, contents and generations alone', async () => {
  await withServer(async (h) => {
    const liveBefore = await edges(h);
    const rowsBefore = await scopeRows(h);
    const id = await begin(h);
    assert.equal(await batch(h, id), 1);
    assert.equal(await batch(h, id), 1);
    assert.deepEqual(await edges(h), liveBefore);
    assert.deepEqual(await scopeRows(h), rowsBefore);
    assert.equal(await scalar(h, 'SELECT count(*)::int FROM synchro.scope_state'), 0);
    const { rows } = await h.sql.query<{ e: string }>("SELECT pk_text || '>' || scope_id AS e FROM synchro.membership_backfill_edges ORDER BY 1");
    assert.deepEqual(
      rows.map((r) => r.e),
      ['n1>topic:red', 'n1>user:u1', 'n2>topic:blue', 'n2>user:u1'],
    );
  });
});

test('activation catches up writes to rows already staged and new rows, then swaps everything at once', async () => {
  await withServer(async (h) => {
    const id = await begin(h);
    assert.equal(await batch(h, id), 1);
    await h.sql.query("UPDATE public.notes SET topic = 'blue' WHERE id = 'n1'; INSERT INTO public.notes VALUES ('n0', 'u3', 'red'); DELETE FROM public.notes WHERE id = 'n3'");
    await catchUp(h);
    while ((await batch(h, id)) > 0);
    const result = await activate(h, id);
    assert.deepEqual(await edges(h), ['n0>topic:red', 'n0>user:u3', 'n1>topic:blue', 'n1>user:u1', 'n2>topic:blue', 'n2>user:u1']);
    assert.deepEqual(
      (await scopeRows(h)).filter((r) => r.startsWith('topic:')),
      ['topic:blue/n1', 'topic:blue/n2', 'topic:red/n0'],
    );
    assert.deepEqual(result.membership_generations, { 'topic:blue': 2, 'topic:red': 2 });
    const record = (await h.sql.query('SELECT state, activation_position_kind, activation_xid, registry_generation FROM synchro.membership_backfills')).rows[0];
    assert.equal(record?.state, 'activated');
    assert.equal(record?.activation_position_kind, 'transaction_end');
    const xmins = await h.sql.query<{ x: string }>("SELECT xmin::text AS x FROM synchro.scope_state UNION SELECT xmin::text FROM synchro.relations WHERE physical_relation = 'notes'");
    assert.deepEqual(
      xmins.rows.map((r) => r.x),
      [record?.activation_xid],
    );
    assert.equal(await scalar(h, 'SELECT count(*)::int FROM synchro.membership_backfill_keys'), 0);
  });
});

test('a backfill refuses a bad batch size, a second pending backfill and work after activation', async () => {
  await withServer(async (h) => {
    await assert.rejects(begin(h, 0), /invalid_limit/);
    const id = await begin(h, 10);
    await assert.rejects(begin(h), /already staging/);
    await activate(h, id);
    await assert.rejects(batch(h, id), /is not staging/);
    await assert.rejects(activate(h, id), /is not staging/);
  });
});
