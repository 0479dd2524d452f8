/**
 * Admission control: a per-endpoint in-flight limit answering
 * `429 retry_later` with Retry-After and the exact envelope at step 8 of the
 * dispatch precedence: after every earlier gate (whose answers never turn
 * into 429) and before execution, so it changes nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { checkMessage } from '../../harness/wire/index.ts';
import { Admission, parseAdmissionLimits } from '../../reference/server/core/admission.ts';
import { SyncError } from '../../reference/server/core/errors.ts';
import { connect, freshServer, type Harness, insertNote, NOTES_SQL, pushBody, snapshot, useEnv } from './helpers.ts';

const env = useEnv();

async function withServer(limits: ReadonlyMap<string, number> | undefined, fn: (h: Harness) => Promise<void>): Promise<void> {
  const h = await freshServer(env(), NOTES_SQL, limits ? { start: { admissionLimits: limits } } : {});
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

/** Waits (bounded) until some session of this database waits for a lock: the held request is then in flight. */
async function untilBlocked(h: Harness, deadlineMs = 10_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const { rows } = await h.sql.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
    if (Number(rows[0]?.n) > 0) return;
    if (Date.now() > deadline) throw new Error('the held request never reached the lock');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const BUSY = '{"error":{"code":"retry_later","message":"the server is busy; retry later","retryable":true}}';

test('limits parse as one number for every endpoint or endpoint=n pairs; anything else is refused', () => {
  assert.deepEqual([...parseAdmissionLimits('8')], [['connect', 8], ['push', 8], ['pull', 8], ['rebuild', 8]]);
  assert.deepEqual([...parseAdmissionLimits('push=2, pull=4')], [['push', 2], ['pull', 4]]);
  for (const bad of ['0', '-1', '1.5', '', 'push', 'push=', 'push=0', 'push=2,push=3', 'schema=1', 'push=1=2', '99999999999999999999']) {
    assert.throws(() => parseAdmissionLimits(bad), /--max-in-flight/, bad);
  }
});

test('the limiter admits up to the limit per endpoint and frees a slot exactly once', () => {
  const admission = new Admission(new Map([['push', 2]]));
  const a = admission.enter('/sync/push');
  const b = admission.enter('/sync/push');
  assert.throws(() => admission.enter('/sync/push'), (e: unknown) => e instanceof SyncError && e.status === 429 && JSON.stringify(e.body()) === BUSY);
  admission.enter('/sync/connect')();
  a();
  a();
  assert.equal(admission.inFlight('push'), 1, 'a second release of the same request frees nothing');
  const c = admission.enter('/sync/push');
  assert.throws(() => admission.enter('/sync/push'));
  b();
  c();
  assert.equal(admission.inFlight('push'), 0);
});

test('a push over the limit gets 429 retry_later with Retry-After, changes nothing, and succeeds once the slot frees', async () => {
  await withServer(new Map([['push', 1]]), async (h) => {
    const s = await connect(h);
    const completed = pushBody(s, [insertNote(s, 'n0', { body: 'earlier' })]);
    const completedReply = await h.post('/sync/push', completed);
    assert.equal(completedReply.status, 200);
    // Hold the first push inside its transaction, past admission: its insert waits on the key an open transaction holds.
    const holder = new pg.Client({ connectionString: h.url });
    await holder.connect();
    try {
      await holder.query("BEGIN; INSERT INTO public.notes (id) VALUES ('n1')");
      const held = h.post('/sync/push', pushBody(s, [insertNote(s, 'n1', { body: 'first' })]));
      await untilBlocked(h);
      const before = await snapshot(h);
      const second = pushBody(s, [insertNote(s, 'n2', { body: 'second' })]);
      const refused = await h.post('/sync/push', second);
      assert.equal(refused.status, 429);
      assert.equal(refused.text, BUSY);
      assert.equal(refused.headers.get('retry-after'), '5');
      assert.deepEqual(checkMessage('error-response', refused.json).violations, []);
      assert.equal(await snapshot(h), before, 'the refused push changed nothing');
      // Every gate before admission answers first: authentication, parsing, replay, generation, schema.
      assert.equal((await h.post('/sync/push', second, { user: '' })).status, 401);
      assert.equal((await h.post('/sync/push', null, { raw: '{"client_id":' })).status, 400);
      const replayed = await h.post('/sync/push', completed);
      assert.equal(replayed.status, 200, 'a completed batch is replayed even at the limit');
      assert.equal(replayed.text, completedReply.text);
      assert.equal((await h.post('/sync/push', { ...second, client_generation: second.client_generation + 1 })).status, 409);
      assert.equal((await h.post('/sync/push', { ...second, schema: { ...second.schema, version: second.schema.version + 1 } })).status, 422);
      // Other endpoints keep their own (here: no) limit.
      assert.equal((await fetch(`${h.server.url}/sync/schema`)).status, 200);
      await holder.query('ROLLBACK');
      assert.equal((await held).status, 200);
      const retried = await h.post('/sync/push', second);
      assert.equal(retried.status, 200);
      assert.equal(retried.json.accepted.length, 1);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
  });
});

test('without a configured limit, concurrent pushes are all admitted', async () => {
  await withServer(undefined, async (h) => {
    const s = await connect(h);
    const replies = await Promise.all([1, 2, 3, 4, 5].map((k) => h.post('/sync/push', pushBody(s, [insertNote(s, `n${k}`)]))));
    assert.deepEqual(replies.map((r) => r.status), [200, 200, 200, 200, 200]);
  });
});
