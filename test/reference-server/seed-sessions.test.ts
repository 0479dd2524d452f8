/**
 * The seed session controls: seed calls on a connection the caller keeps,
 * one at a time, in whatever transaction the caller began there.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { controlSchemaProblems } from '../../harness/adapters/control-protocol.ts';
import { freshServer, type Harness, useEnv } from './helpers.ts';

const env = useEnv();

const SETUP = `
CREATE TABLE public.items (id text PRIMARY KEY, title text NOT NULL);
SELECT synchro.synchro_prepare_projection_view('public.items');
CREATE FUNCTION public.item_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'catalog' FROM synchro_projection.items WHERE id = p_id;
END;
SELECT synchro.synchro_register_table('public.items', membership_fn => 'public.item_scopes');
SELECT synchro.synchro_register_shared_scope('catalog', true);
INSERT INTO public.items VALUES ('c1', 'one'), ('c2', 'two'), ('c3', 'three');
`;

const SERIALIZABLE = 'BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE';

async function withServer(fn: (h: Harness, call: (member: Record<string, unknown>) => Promise<Record<string, unknown>>) => Promise<void>): Promise<void> {
  const h = await freshServer(env(), SETUP, { capture: true, start: { testControls: true } });
  try {
    await (h.server.capture as NonNullable<Harness['server']['capture']>).catchUp(15_000);
    assert.equal((await h.get('/sync/schema')).status, 200);
    const opened = await h.control('/__control/seed/session/open', {});
    assert.equal(opened.status, 200);
    const session = opened.json.session as string;
    await fn(h, async (member) => {
      const reply = await h.control('/__control/seed/session/call', { session, ...member });
      assert.equal(reply.status, 200, JSON.stringify(reply.json));
      assert.deepEqual(controlSchemaProblems('seed.session.call.response.schema.json', reply.json), []);
      return reply.json;
    });
    assert.deepEqual((await h.control('/__control/seed/session/close', { session })).json, { closed: true });
    assert.deepEqual((await h.control('/__control/seed/session/close', { session })).json, { closed: false });
  } finally {
    await h.close();
  }
}

test('a seed session pages in its transaction and refuses the token after it ends', async () => {
  await withServer(async (_h, call) => {
    assert.deepEqual(await call({ statement: SERIALIZABLE }), { ok: true, value: null });
    const manifest = await call({ manifest: { page_limit: 2 } });
    assert.equal(manifest.ok, true);
    const token = (manifest.value as { portable_scopes: { page_token: string }[] }).portable_scopes[0]?.page_token;
    const page = { scope: 'catalog', page_token: token, continuation_receipt: null, expected_row_ordinal: 0, limit: 2 };
    const first = await call({ page });
    assert.equal((first.value as { records: unknown[] }).records.length, 2);
    assert.deepEqual(await call({ page }), first, 'the same token in the same transaction gives the same page');
    assert.equal((await call({ page: { ...page, expected_row_ordinal: 1 } })).ok, false);
    await call({ statement: 'COMMIT' });
    await call({ statement: SERIALIZABLE });
    await call({ manifest: { page_limit: 2 } });
    const later = await call({ page });
    assert.deepEqual(later, { ok: false, error: { code: 'invalid_request', message: 'the seed page token is not valid for this export' } });
  });
});

test('a seed session answers a weak transaction with an SQL error and runs transaction control statements only', async () => {
  await withServer(async (h, call) => {
    await call({ statement: 'BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ' });
    const weak = await call({ manifest: { page_limit: 2 } });
    assert.equal(weak.ok, false);
    assert.equal((weak.sql_error as { sqlstate: string }).sqlstate, '25000');
    const other = await call({ statement: 'SELECT 1' });
    assert.equal((other.sql_error as { sqlstate: string }).sqlstate, '42601');
    const both = await h.control('/__control/seed/session/call', { session: 'nope', statement: 'COMMIT' });
    assert.equal(both.status, 400);
  });
});
