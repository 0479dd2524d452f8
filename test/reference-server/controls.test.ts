/**
 * The reference server's test controls: present only with `--test-controls`,
 * a clock that every `server_time` and the expiry follow, client expiry by the
 * real stale-interval rule (and forced for one client), retirement through the
 * operator SQL function, and the start-up checks of main.ts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import pg from 'pg';
import { CONTROL_NAMES, controlSchemaProblems } from '../../harness/adapters/control-protocol.ts';
import { type StartOptions, startServer } from '../../reference/server/app.ts';
import { isLoopback } from '../../reference/server/controls/routes.ts';
import { parseStaleInterval } from '../../reference/server/controls/stale-interval.ts';
import { resetClock } from '../../reference/server/core/clock.ts';
import { connect, freshServer, type Harness, insertNote, NOTES_SQL, pushBody, type Reply, useEnv } from './helpers.ts';

const DAY = 86_400_000;
const env = useEnv();

async function withServer(options: Partial<StartOptions>, fn: (h: Harness) => Promise<void>): Promise<void> {
  resetClock();
  const h = await freshServer(env(), NOTES_SQL, { start: options });
  try {
    await fn(h);
  } finally {
    resetClock();
    await h.close();
  }
}

async function ledgerCounts(h: Harness, clientId: string): Promise<[number, number]> {
  const { rows } = await h.sql.query<{ b: string; m: string }>(
    `SELECT (SELECT count(*) FROM synchro.push_batches WHERE client_id = $1) AS b, (SELECT count(*) FROM synchro.push_mutations WHERE client_id = $1) AS m`,
    [clientId],
  );
  return [Number(rows[0]?.b), Number(rows[0]?.m)];
}

test('without --test-controls every /__control/ path is an unknown endpoint', async () => {
  await withServer({}, async (h) => {
    for (const path of ['/__control/clock', '/__control/clients/expire']) {
      const res = await h.get(path);
      assert.equal(res.status, 404);
      assert.equal(res.json.error.code, 'invalid_request');
    }
    const post = await h.control('/__control/clock/advance', { milliseconds: DAY });
    assert.equal(post.status, 404);
    const schema = await h.get('/sync/schema');
    assert.ok(Math.abs(Date.parse(schema.json.server_time) - Date.now()) < 60_000, 'the clock was not moved');
  });
});

test('the clock moves every server_time: schema, connect and push', async () => {
  await withServer({ testControls: true }, async (h) => {
    const advanced = await h.control('/__control/clock/advance', { milliseconds: 20 * DAY });
    assert.equal(advanced.status, 200);
    assert.equal(advanced.json.offset_ms, 20 * DAY);
    const near = (text: string, offset: number) => Math.abs(Date.parse(text) - (Date.now() + offset)) < 60_000;
    assert.ok(near((await h.get('/__control/clock')).json.now, 20 * DAY));
    assert.ok(near((await h.get('/sync/schema')).json.server_time, 20 * DAY));
    const s = await connect(h);
    const push = await h.post('/sync/push', pushBody(s, [insertNote(s, 'n1', { body: 'x' })]));
    assert.equal(push.status, 200);
    assert.ok(near(push.json.server_time, 20 * DAY), push.json.server_time);

    const set = await h.control('/__control/clock/set', { now: '2031-03-04T05:06:07.000Z' });
    assert.equal(set.status, 200);
    const at = Date.parse((await h.get('/sync/schema')).json.server_time) - Date.parse('2031-03-04T05:06:07.000Z');
    assert.ok(at >= 0 && at < 60_000, `server_time follows a set clock (${at} ms after)`);
    const reconnect = await h.post('/sync/connect', { client_id: s.clientId, client_generation: s.generation, platform: 'test', app_version: '1.0.0', protocol_version: 3, schema: s.schema, scope_set_version: 1, known_scopes: { 'user:u1': { cursor: null } } });
    assert.match(reconnect.json.server_time, /^2031-03-04T05:06:\d{2}\.\d{6}Z$/);
  });
});

test('clock and client controls refuse bad bodies and change nothing', async () => {
  await withServer({ testControls: true }, async (h) => {
    for (const [path, body] of [
      ['/__control/clock/advance', { milliseconds: -1 }],
      ['/__control/clock/advance', { milliseconds: 1, extra: true }],
      ['/__control/clock/advance', { ms: 1 }],
      ['/__control/clock/set', { now: 'tomorrow' }],
      ['/__control/clock/set', { now: '2030-02-30T00:00:00Z' }],
      ['/__control/clock/set', { now: '2030-01-01T00:00:00+01:00' }],
      ['/__control/clients/expire', { user_id: 'u1' }],
      ['/__control/clients/expire', { user_id: 'u1', client_id: 'a\u0000b' }],
      ['/__control/clients/retire', { user_id: 'u\u0000', client_id: 'c1' }],
      ['/__control/clients/run-expiry', { now: 1 }],
    ] as const) {
      const res = await h.control(path, body);
      assert.equal(res.status, 400, `${path} ${JSON.stringify(body)}`);
      assert.deepEqual(controlSchemaProblems('error.schema.json', res.json), [], 'the control protocol\'s own error envelope');
      assert.equal(res.json.error.code, 'invalid_request');
    }
    assert.equal((await h.get('/__control/clock')).json.offset_ms, 0);
    const wrongMethod = await h.get('/__control/clock/advance');
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'POST');
  });
});

test('expiring a client: its next push is 409 with its generation, replay still answers, ledgers stay, reconnect renews', async () => {
  await withServer({ testControls: true }, async (h) => {
    const s = await connect(h);
    const first = pushBody(s, [insertNote(s, 'n1', { body: 'x' })]);
    const done = await h.post('/sync/push', first);
    assert.equal(done.status, 200);
    const before = await ledgerCounts(h, s.clientId);

    const expired = await h.control('/__control/clients/expire', { user_id: 'u1', client_id: s.clientId });
    assert.deepEqual(expired.json, { expired: true, client_generation: s.generation });
    const late = await h.post('/sync/push', pushBody(s, [insertNote(s, 'n2', { body: 'y' })]));
    assert.equal(late.status, 409);
    assert.deepEqual(late.json, { error: { code: 'client_generation_expired', message: late.json.error.message, retryable: false, current_client_generation: s.generation } });
    const replay = await h.post('/sync/push', first);
    assert.equal(replay.status, 200);
    assert.equal(replay.text, done.text, 'a completed batch replays byte for byte after expiry');
    assert.deepEqual(await ledgerCounts(h, s.clientId), before, 'expiry allocates and deletes no ledger rows');

    const again = await h.post('/sync/connect', { client_id: s.clientId, client_generation: s.generation, platform: 'test', app_version: '1.0.0', protocol_version: 3, schema: s.schema, scope_set_version: 1, known_scopes: { 'user:u1': { cursor: null } } });
    assert.equal(again.status, 200);
    assert.equal(again.json.client_generation, s.generation + 1);
    const renewed = await h.post('/sync/push', pushBody({ ...s, generation: again.json.client_generation }, [insertNote(s, 'n2', { body: 'y' })]));
    assert.equal(renewed.status, 200);
    assert.equal(renewed.json.accepted.length, 1);

    const unknown = await h.control('/__control/clients/expire', { user_id: 'u1', client_id: 'never-seen' });
    assert.equal(unknown.status, 404);
  });
});

test('the stale sweep expires exactly the clients idle past the interval by the server clock', async () => {
  await withServer({ testControls: true, staleClientIntervalMs: 30 * DAY }, async (h) => {
    const idle = await connect(h, 'u1', 'idle');
    const acked = await connect(h, 'u1', 'acked');
    await h.control('/__control/clock/advance', { milliseconds: 20 * DAY });
    // Connect and push traffic is not activity; a cursor acknowledgement is (stamped by the server clock).
    assert.equal((await h.post('/sync/push', pushBody(idle, [insertNote(idle, 'i1')]))).status, 200);
    const clockNow = (await h.get('/__control/clock')).json.now;
    await h.sql.query("UPDATE synchro.clients SET last_acknowledged_at = $1 WHERE client_id = 'acked'", [clockNow]);
    const young = await connect(h, 'u1', 'young');
    await h.control('/__control/clock/advance', { milliseconds: 9 * DAY });
    assert.deepEqual((await h.control('/__control/clients/run-expiry', {})).json.expired, [], 'nobody is 30 days idle yet');
    await h.control('/__control/clock/advance', { milliseconds: 2 * DAY });
    const sweep = await h.control('/__control/clients/run-expiry', {});
    assert.equal(sweep.status, 200);
    assert.equal(sweep.json.stale_client_interval_ms, 30 * DAY);
    assert.deepEqual(sweep.json.expired, [{ user_id: 'u1', client_id: 'idle', client_generation: idle.generation }]);
    const push = (s: typeof idle) => h.post('/sync/push', pushBody(s, [insertNote(s, `${s.clientId}-2`)]));
    assert.equal((await push(idle)).json.error.code, 'client_generation_expired');
    assert.equal((await push(acked)).status, 200);
    assert.equal((await push(young)).status, 200);
    assert.deepEqual((await h.control('/__control/clients/run-expiry', {})).json.expired, [], 'an expired client is not expired twice');
  });
});

test('retiring a client goes through synchro_retire_client: ledgers go, the identity never returns', async () => {
  await withServer({ testControls: true }, async (h) => {
    const s = await connect(h);
    assert.equal((await h.post('/sync/push', pushBody(s, [insertNote(s, 'n1')]))).status, 200);
    const retired = await h.control('/__control/clients/retire', { user_id: 'u1', client_id: s.clientId });
    assert.equal(retired.status, 200);
    assert.match(retired.json.retirement_id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(await ledgerCounts(h, s.clientId), [0, 0]);
    const again = await h.post('/sync/connect', { client_id: s.clientId, client_generation: s.generation, platform: 'test', app_version: '1.0.0', protocol_version: 3, schema: s.schema, scope_set_version: 1, known_scopes: {} });
    assert.equal(again.status, 409);
    assert.equal(again.json.error.code, 'client_retired');
    const twice = await h.control('/__control/clients/retire', { user_id: 'u1', client_id: s.clientId });
    assert.equal(twice.json.retirement_id, retired.json.retirement_id, 'retiring twice keeps the one marker');
  });
});

test('the stale-client interval is a positive whole duration; anything else is refused, never defaulted', () => {
  assert.equal(parseStaleInterval('30d'), 30 * DAY);
  assert.equal(parseStaleInterval('12h'), 12 * 3_600_000);
  assert.equal(parseStaleInterval('1500ms'), 1500);
  assert.equal(parseStaleInterval('90s'), 90_000);
  assert.equal(parseStaleInterval('5m'), 300_000);
  for (const bad of ['0d', '0', '-1d', '1.5d', '30', 'd', '', 'abc', '1e3s', '030d', '+3d', 'Infinityd', '99999999999999999999d']) {
    assert.throws(() => parseStaleInterval(bad), /stale-client-interval/, bad);
  }
});

test('only loopback peers count as loopback', () => {
  for (const yes of ['127.0.0.1', '127.9.8.7', '::1', '::ffff:127.0.0.1']) assert.equal(isLoopback(yes), true, yes);
  for (const no of [undefined, '', '10.0.0.1', '::ffff:10.0.0.1', '0.0.0.0', '::', '128.0.0.1', 'fe80::1']) assert.equal(isLoopback(no), false, String(no));
});

test('main.ts stops at start-up on a bad interval, limit or a non-loopback host with test controls', () => {
  const main = new URL('../../reference/server/main.ts', import.meta.url).pathname;
  // The URL is never used: the checks run before any database work.
  const run = (...args: string[]) => spawnSync(process.execPath, [main, '--database-url', 'postgres://127.0.0.1:1/none', '--jwt-secret', 's', ...args], { encoding: 'utf8', timeout: 20_000 });
  for (const [args, message] of [
    [['--stale-client-interval', '0d'], /--stale-client-interval must be a positive whole number/],
    [['--stale-client-interval', '-5d'], /--stale-client-interval/],
    [['--stale-client-interval', 'soon'], /--stale-client-interval/],
    [['--max-in-flight', 'push=0'], /--max-in-flight has "0"/],
    [['--max-in-flight', 'upload=2'], /--max-in-flight names unknown endpoint "upload"/],
    [['--test-controls', '--host', '0.0.0.0'], /--test-controls needs a loopback --host/],
  ] as const) {
    const result = run(...args);
    assert.equal(result.status, 1, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
    assert.equal(result.stdout, '', 'it never listened');
  }
});

test('capture catch-up answers once a committed source row is materialized, and refuses without a worker', async () => {
  resetClock();
  const h = await freshServer(env(), NOTES_SQL, { capture: true, start: { testControls: true } });
  try {
    await h.sql.query("INSERT INTO public.notes (id, body) VALUES ('caught', 'up')");
    const answer = await h.control('/__control/capture/await', { timeout_ms: 20_000 });
    assert.equal(answer.status, 200, answer.text);
    const { rows } = await h.sql.query("SELECT count(*)::int AS n FROM synchro.row_versions WHERE pk_text = 'caught'");
    assert.equal(rows[0].n, 1, 'the row is materialized when catch-up answers');
    assert.equal((await h.control('/__control/capture/await', { timeout_ms: 0 })).status, 400);
  } finally {
    await h.close();
  }
  await withServer({ testControls: true }, async (plain) => {
    const refused = await plain.control('/__control/capture/await', { timeout_ms: 1000 });
    assert.equal(refused.status, 409, refused.text);
  });
});

test('the control protocol is refused in a production environment, and --resettable needs --test-controls', async () => {
  const main = new URL('../../reference/server/main.ts', import.meta.url).pathname;
  const run = (env: NodeJS.ProcessEnv, ...args: string[]) => spawnSync(process.execPath, [main, '--database-url', 'postgres://127.0.0.1:1/none', '--jwt-secret', 's', ...args], { encoding: 'utf8', timeout: 20_000, env: { ...process.env, ...env } });
  for (const env of [{ NODE_ENV: 'production' }, { SYNCHRO_ENV: 'production' }]) {
    const result = run(env, '--test-controls');
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /--test-controls is refused in a production environment/);
    assert.equal(result.stdout, '', 'it never listened');
  }
  const orphan = run({}, '--resettable');
  assert.equal(orphan.status, 1);
  assert.match(orphan.stderr, /--resettable needs --test-controls/);
  // The same rule holds for any embedding of the server, not only main.ts.
  const saved = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await assert.rejects(startServer({ databaseUrl: 'postgres://127.0.0.1:1/none', jwtSecret: 's', testControls: true }), /never served in a production environment/);
  } finally {
    if (saved === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = saved;
  }
});

test('without --test-controls the control protocol, capabilities document included, is an unknown endpoint', async () => {
  await withServer({}, async (h) => {
    for (const path of ['/__control/capabilities', '/__control/clock', '/__control/reset']) {
      const res = await h.get(path);
      assert.equal(res.status, 404, path);
      assert.equal(res.json.error.code, 'invalid_request', 'the sync protocol\'s own unknown-path answer');
    }
  });
});

test('the capabilities document lists every control at its schema path, and answers follow their schemas', async () => {
  await withServer({ testControls: true }, async (h) => {
    const doc = await h.get('/__control/capabilities');
    assert.equal(doc.status, 200);
    assert.deepEqual(controlSchemaProblems('capabilities.schema.json', doc.json), []);
    assert.equal(doc.json.version, 1);
    assert.deepEqual(Object.keys(doc.json.controls).sort(), CONTROL_NAMES.filter((name) => name !== 'reset').sort(), 'reset only with --resettable');
    const answers: [string, Reply][] = [
      ['clock.now', await h.get('/__control/clock')],
      ['clock.advance', await h.control('/__control/clock/advance', { milliseconds: 5 })],
      ['clients.run-expiry', await h.control('/__control/clients/run-expiry', {})],
      ['compaction.run', await h.control('/__control/compaction/run', {})],
      ['logs.mark', await h.control('/__control/logs/mark', {})],
      ['logs.since', await h.control('/__control/logs/since', { mark: 0 })],
      ['inspect.readiness', await h.get('/__control/inspect/readiness')],
      ['inspect.health-detail', await h.get('/__control/inspect/health-detail')],
    ];
    for (const [name, res] of answers) {
      assert.equal(res.status, 200, `${name}: ${res.text}`);
      assert.deepEqual(controlSchemaProblems(`${name}.response.schema.json`, res.json), [], name);
    }
    // This server runs no capture worker: the export is refused with the server's reason, in the control envelope.
    const seed = await h.control('/__control/seed/export', {});
    assert.equal(seed.status, 422);
    assert.deepEqual(controlSchemaProblems('error.schema.json', seed.json), []);
    assert.match(seed.json.error.message, /capture has not started/);
    const unknown = await h.control('/__control/clock/rewind', {});
    assert.equal(unknown.status, 404);
    assert.deepEqual(controlSchemaProblems('error.schema.json', unknown.json), []);
    assert.equal(unknown.json.error.code, 'unknown_control');
    const client = await h.control('/__control/clients/expire', { user_id: 'u1', client_id: 'nobody' });
    assert.equal(client.status, 404);
    assert.deepEqual(client.json, { error: { code: 'not_found', message: client.json.error.message, control: 'clients.expire' } });
  });
});

test('push.in-transaction runs the caller\'s statements and the push in one transaction: commits when it returns, rolls back and names the failure otherwise', async () => {
  await withServer({ testControls: true }, async (h) => {
    const s = await connect(h);
    const call = (statements: string, request: unknown, userId = 'u1') => h.control('/__control/push/in-transaction', { statements, user_id: userId, request });
    const notes = async () => (await h.sql.query<{ id: string }>('SELECT id FROM public.notes ORDER BY id')).rows.map((r) => r.id);
    const done = await call("INSERT INTO public.notes (id, body) VALUES ('caller', 'x')", pushBody(s, [insertNote(s, 'pushed', { body: 'y' })]));
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(controlSchemaProblems('push.in-transaction.response.schema.json', done.json), []);
    assert.equal(done.json.ok, true);
    assert.equal(JSON.parse(done.json.body).accepted.length, 1, done.json.body);
    assert.deepEqual(await notes(), ['caller', 'pushed'], 'both the caller\'s row and the pushed one committed');
    // A SQL failure of the caller's statements: its SQLSTATE, and nothing of the transaction stays.
    const failed = await call("INSERT INTO public.notes (id) VALUES ('lost'); SELECT 1/0", pushBody(s, [insertNote(s, 'never')]));
    assert.equal(failed.status, 200, failed.text);
    assert.deepEqual(controlSchemaProblems('push.in-transaction.response.schema.json', failed.json), []);
    assert.equal(failed.json.sqlstate, '22012');
    // A refusal of the push itself: the sync protocol's error envelope, rolled back with the caller's write.
    const refused = await call("INSERT INTO public.notes (id) VALUES ('lost2')", { not: 'a push' });
    assert.equal(refused.status, 200, refused.text);
    assert.deepEqual(controlSchemaProblems('push.in-transaction.response.schema.json', refused.json), []);
    assert.equal(refused.json.ok, false);
    assert.equal(refused.json.error.error.code, 'invalid_request');
    assert.deepEqual(await notes(), ['caller', 'pushed']);
    // A body off the request schema is refused before anything runs.
    for (const body of [{ statements: 'SELECT 1', user_id: '', request: {} }, { statements: 1, user_id: 'u1', request: {} }, { statements: 'SELECT 1', user_id: 'u1' }]) {
      const bad = await h.control('/__control/push/in-transaction', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.json.error.code, 'invalid_request');
      assert.equal(bad.json.error.control, 'push.in-transaction');
    }
  });
});

test('logs since a mark hold exactly what the server logged after it', async () => {
  const lines: string[] = [];
  await withServer({ testControls: true, log: (line) => lines.push(line) }, async (h) => {
    const { mark } = (await h.control('/__control/logs/mark', {})).json;
    const failed = await h.control('/__control/seed/export', { page_limit: 0 });
    assert.equal(failed.status, 400, 'a refused control logs nothing');
    const quiet = await h.control('/__control/logs/since', { mark });
    assert.deepEqual(quiet.json, { mark, text: '', dropped: 0 });
    assert.ok(lines.length === mark, 'every line also went to the log callback');
    assert.equal((await h.control('/__control/logs/since', { mark: -1 })).status, 400);
  });
});

test('reset (with --resettable) returns the database, the clock and capture to a fresh install', async () => {
  resetClock();
  const h = await freshServer(env(), NOTES_SQL, { capture: true, start: { testControls: true, resettable: true } });
  try {
    const doc = (await h.get('/__control/capabilities')).json;
    assert.deepEqual(doc.controls.reset, { method: 'POST', path: 'reset' });
    await h.control('/__control/clock/advance', { milliseconds: 3 * DAY });
    await h.sql.query("INSERT INTO public.notes (id, body) VALUES ('left', 'over')");
    const { mark } = (await h.control('/__control/logs/mark', {})).json;
    // The reset ends this test's own session too: its error is expected.
    h.sql.on('error', () => undefined);
    const reset = await h.control('/__control/reset', {});
    assert.equal(reset.status, 200, reset.text);
    assert.deepEqual(controlSchemaProblems('reset.response.schema.json', reset.json), []);
    const logged = (await h.control('/__control/logs/since', { mark })).json.text;
    assert.match(logged, /reset: the database was wiped/);
    assert.equal((await h.get('/__control/clock')).json.offset_ms, 0, 'the clock is back at the system time');
    // The reset ended every other session of the database, this test's own included.
    const after = new pg.Client({ connectionString: h.url });
    await after.connect();
    try {
      const { rows } = await after.query("SELECT to_regclass('public.notes') IS NULL AS gone, to_regnamespace('synchro') IS NOT NULL AS installed, (SELECT count(*)::int FROM synchro.clients) AS clients");
      assert.deepEqual(rows[0], { gone: true, installed: true, clients: 0 });
    } finally {
      await after.end();
    }
    const { checks } = (await h.get('/__control/inspect/health-detail')).json.health_detail;
    for (const check of ['worker', 'replication_slot', 'publication', 'poison']) assert.equal(checks[check].state, 'ok', `${check} after the reset: ${JSON.stringify(checks[check])}`);
    const awaited = await h.control('/__control/capture/await', { timeout_ms: 20_000 });
    assert.equal(awaited.status, 200, `capture runs again after the reset: ${awaited.text}`);
  } finally {
    resetClock();
    await h.server.close();
    await h.sql.end().catch(() => undefined);
    await env().cluster.dropDatabase(h.url.split('/').pop()?.split('?')[0] as string);
  }
});
