/**
 * The canonical entry points (sql/085, core/entry-points.ts): every request the
 * core serves is answered with the result of exactly one call of its
 * endpoint's entry point, made as synchro_adapter; without EXECUTE on it the
 * endpoint answers the error envelope and changes nothing.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { catchUp, connect, type Harness, insertNote, NOTES_SQL, OWNED_NOTES_SQL, pushBody, useEnv, withCaptureServer } from './helpers.ts';
import { rebuildBody, rebuildPage } from './sync-flow.ts';

const env = useEnv();

interface Call {
  entry_point: string;
  caller_role: string;
  status: number;
  error_code: string | null;
  digest: string;
}

async function calls(h: Harness): Promise<Call[]> {
  const { rows } = await h.sql.query<Call>("SELECT entry_point, caller_role, status, error_code, encode(body_sha256, 'hex') AS digest FROM synchro.adapter_entry_calls ORDER BY call_id");
  return rows;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

test('each answered request is the result of one entry point call made as synchro_adapter, refusals included', async () => {
  await withCaptureServer(env(), NOTES_SQL, async (h) => {
    const s = await connect(h);
    const pushed = await h.post('/sync/push', pushBody(s, [insertNote(s, 'n1', { body: 'one' })]));
    assert.equal(pushed.status, 200, pushed.text);
    const stale = await h.post('/sync/push', pushBody(s, [insertNote(s, 'n2')], { schema: { version: s.schema.version, hash: 'f'.repeat(64) } }));
    assert.equal(stale.status, 422, stale.text);
    const recorded = await calls(h);
    assert.deepEqual(
      recorded.map((c) => [c.entry_point, c.caller_role, c.status, c.error_code]),
      [
        ['connect', 'synchro_adapter', 200, null],
        ['push', 'synchro_adapter', 200, null],
        ['push', 'synchro_adapter', 422, 'schema_mismatch'],
      ],
    );
    assert.equal(recorded[1]?.digest, sha256(pushed.text));
    assert.equal(recorded[2]?.digest, sha256(stale.text));
  });
});

test('a push replay is answered through a call of its own and writes nothing else', async () => {
  await withCaptureServer(env(), NOTES_SQL, async (h) => {
    const s = await connect(h);
    const body = pushBody(s, [insertNote(s, 'n1')]);
    const first = await h.post('/sync/push', body);
    const again = await h.post('/sync/push', body);
    assert.equal(again.text, first.text);
    const pushes = (await calls(h)).filter((c) => c.entry_point === 'push');
    assert.deepEqual(
      pushes.map((c) => c.digest),
      [sha256(first.text), sha256(first.text)],
    );
  });
});

test('without EXECUTE on synchro_push the push answers 500 sync_integrity_failure and changes nothing; granted back it succeeds', async () => {
  await withCaptureServer(env(), NOTES_SQL, async (h) => {
    const s = await connect(h);
    await h.sql.query('REVOKE EXECUTE ON FUNCTION synchro.synchro_push(text, jsonb) FROM synchro_adapter');
    const refused = await h.post('/sync/push', pushBody(s, [insertNote(s, 'n1')]));
    assert.equal(refused.status, 500, refused.text);
    assert.equal(refused.json.error.code, 'sync_integrity_failure');
    assert.equal((await h.sql.query('SELECT 1 FROM public.notes')).rowCount, 0);
    assert.equal((await h.sql.query('SELECT 1 FROM synchro.push_batches')).rowCount, 0);
    assert.deepEqual(
      (await calls(h)).map((c) => c.entry_point),
      ['connect'],
    );
    await h.sql.query('GRANT EXECUTE ON FUNCTION synchro.synchro_push(text, jsonb) TO synchro_adapter');
    const accepted = await h.post('/sync/push', pushBody(s, [insertNote(s, 'n1')]));
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal((await h.sql.query('SELECT 1 FROM public.notes')).rowCount, 1);
  });
});

test('the entry points refuse an outcome that is not a status and a body, and a refusal without an error code', async () => {
  await withCaptureServer(env(), NOTES_SQL, async (h) => {
    await assert.rejects(h.sql.query(`SELECT synchro.synchro_pull('u1', '{"status": 200}')`), (e: { code?: string }) => e.code === '22023');
    await assert.rejects(h.sql.query(`SELECT synchro.synchro_pull('', '{"status": 200, "body": "{}"}')`), (e: { code?: string }) => e.code === '22023');
    await assert.rejects(h.sql.query(`SELECT synchro.synchro_pull('u1', '{"status": 409, "body": "{}"}')`), (e: { code?: string }) => e.code === '22023');
    const { rows } = await h.sql.query<{ granted: boolean; fn: string }>(
      `SELECT p.oid::regprocedure::text AS fn, has_function_privilege('synchro_adapter', p.oid, 'EXECUTE') AS granted
         FROM pg_proc p WHERE p.pronamespace = 'synchro'::regnamespace AND p.proname IN ('synchro_connect', 'synchro_push', 'synchro_pull', 'synchro_rebuild', 'adapter_entry_result') ORDER BY 1`,
    );
    assert.deepEqual(
      rows.map((r) => [r.fn, r.granted]),
      [
        ['synchro.adapter_entry_result(text,text,jsonb)', false],
        ['synchro.synchro_connect(text,jsonb)', true],
        ['synchro.synchro_pull(text,jsonb)', true],
        ['synchro.synchro_push(text,jsonb)', true],
        ['synchro.synchro_rebuild(text,jsonb)', true],
      ],
    );
  });
});

test('a user id or body holding dollar-quote tags reaches the entry point unchanged', async () => {
  await withCaptureServer(env(), NOTES_SQL, async (h) => {
    const user = "u$synchro$'\\x$synchro";
    const s = await connect(h, user, 'c-$synchro0$');
    const pushed = await h.post('/sync/push', pushBody(s, [insertNote(s, 'n$synchro$', { body: "it's \\ $synchro$ $$" })]), { user });
    assert.equal(pushed.status, 200, pushed.text);
    assert.equal((await h.sql.query("SELECT body FROM public.notes WHERE id = 'n$synchro$'")).rows[0]?.body, "it's \\ $synchro$ $$");
    assert.equal((await calls(h)).at(-1)?.digest, sha256(pushed.text));
  });
});

test('a refusal whose envelope echoes a \\u0000 escape from the request is answered, not turned into a 500', async () => {
  await withCaptureServer(env(), NOTES_SQL, async (h) => {
    const s = await connect(h);
    const request = { client_id: s.clientId, client_generation: s.generation, platform: 'test', app_version: '1.0.0', protocol_version: 3, schema: { version: 1, hash: '\u0000' }, scope_set_version: 1, known_scopes: {} };
    const res = await h.post('/sync/connect', request);
    assert.equal(res.status, 400, res.text);
    assert.equal((res.json as { error: { code: string } }).error.code, 'invalid_schema_reference');
    const last = (await calls(h)).at(-1);
    assert.deepEqual([last?.entry_point, last?.status, last?.error_code, last?.digest], ['connect', 400, 'invalid_schema_reference', sha256(res.text)]);
  });
});

test('a page too large for a text constant reaches the entry point as a parameter; either way the answer is the call\'s result, not the core\'s page', async () => {
  await withCaptureServer(env(), OWNED_NOTES_SQL, async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id, body) SELECT 'n' || lpad(g::text, 4, '0'), repeat('x', 150) FROM generate_series(1, 400) g`);
    await catchUp(h);
    const s = await connect(h);
    const large = await rebuildPage(h, s, 'user:u1', randomUUID(), null, 1000);
    assert.equal(large.status, 200, large.text.slice(0, 300));
    assert.ok(large.text.length > 32_768, `the page has ${large.text.length} characters, under the parameter path's threshold`);
    assert.equal((await calls(h)).at(-1)?.digest, sha256(large.text));
    // An entry point whose result is not the page it was given: the answer must be that result on both paths.
    await h.sql.query(`CREATE OR REPLACE FUNCTION synchro.synchro_rebuild(p_user_id text, p_outcome jsonb) RETURNS jsonb
      LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, synchro
      RETURN synchro.adapter_entry_result('rebuild', p_user_id, jsonb_set(p_outcome, '{body}', to_jsonb((p_outcome ->> 'body') || ' ')))`);
    for (const limit of [1000, 1]) {
      const answered = await h.post('/sync/rebuild', rebuildBody(s, 'user:u1', randomUUID(), null, limit));
      assert.equal(answered.status, 200, answered.text.slice(0, 300));
      assert.ok(answered.text.endsWith('} '), `a page of limit ${limit} is not the entry point's result: it ends ${JSON.stringify(answered.text.slice(-20))}`);
      assert.equal((await calls(h)).at(-1)?.digest, sha256(answered.text));
    }
  });
});
