/**
 * The control protocol is language neutral: the Python shim in
 * examples/python-control-shim (standard library only, PostgreSQL through
 * psql) runs beside a reference server started without any controls of its
 * own, and offers await-materialization, logs, the clients controls and the
 * per-scenario reset. Its answers follow the protocol's schemas, and
 * requirements that commit source rows and pull them (SYNC-PROTO-004) or
 * expire a client (SYNC-STATE-003) certify through it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { CONTROL_NAMES, ControlClient, capabilitiesOffered, controlSchemaProblems, discoverControls } from '../../harness/adapters/control-protocol.ts';
import { mintJwt } from '../../harness/adapters/token.ts';
import { runHarness, SHIM_JWT_SECRET, type ShimStack, type ShimUrls, shimUnavailable, startShimStack, writeShimServerConfig } from '../../scripts/lib/behind-shim.ts';

const scratch = mkdtempSync(join(tmpdir(), 'synchro-python-shim-test-'));
const unavailable = shimUnavailable();
const skip = unavailable ?? false;
/** The reference server's default stale-client interval (30 days), which the shim takes as its own. */
const DEFAULT_STALE_CLIENT_INTERVAL_MS = 2_592_000_000;

let stack: ShimStack | undefined;
let started: ShimUrls;

before(async () => {
  if (unavailable !== undefined) return;
  stack = await startShimStack();
  started = stack.urls;
});

after(async () => {
  await stack?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

test('the shim offers await, logs, clients and reset, each answer on its schema; the server itself offers no control', { skip }, async () => {
  const own = await fetch(`${started.base_url}/__control/capabilities`);
  assert.equal(own.status, 404, 'the server was started without --test-controls');
  const document = await discoverControls(started.control_url);
  assert.deepEqual(Object.keys(document.controls).sort(), ['capture.await', 'clients.counters', 'clients.expire', 'clients.retire', 'clients.run-expiry', 'logs.mark', 'logs.since', 'reset']);
  assert.ok(Object.keys(document.controls).every((name) => (CONTROL_NAMES as readonly string[]).includes(name)));
  const client = new ControlClient(started.control_url, document);
  assert.deepEqual(capabilitiesOffered(client).sort(), ['clients', 'logs'], 'the clients controls earn the clients capability (await alone earns no capture)');
  // A committed source row is materialized once capture.await answers (the call checks the answer's schema).
  const db = new pg.Client({ connectionString: started.database_url });
  await db.connect();
  try {
    await db.query('CREATE TABLE public.notes (id text PRIMARY KEY, body text)');
    await db.query("SELECT synchro.synchro_register_table(relation => 'public.notes')");
    await db.query("INSERT INTO public.notes VALUES ('n1', 'hello')");
    await client.call('capture.await', { timeout_ms: 30_000 });
    const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM synchro.row_versions WHERE pk_text = 'n1'");
    assert.equal(rows[0]?.n, 1, 'the row is materialized when await answers');
  } finally {
    await db.end().catch(() => undefined);
  }
  const { mark } = await client.call<{ mark: number }>('logs.mark', {});
  const since = await client.call<{ mark: number; text: string }>('logs.since', { mark });
  assert.ok(since.mark >= mark);
  const bad = await fetch(`${started.control_url}/logs/since`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"mark": -1}' });
  assert.equal(bad.status, 400);
  assert.deepEqual(controlSchemaProblems('error.schema.json', await bad.json()), []);
  await client.call('reset', {}, 120_000);
  const after = new pg.Client({ connectionString: started.database_url });
  await after.connect();
  try {
    const { rows } = await after.query("SELECT to_regclass('public.notes') IS NULL AS gone");
    assert.equal(rows[0]?.gone, true, 'the reset dropped the table');
  } finally {
    await after.end();
  }
  const ready = await fetch(`${started.base_url}/ready`);
  assert.ok([200, 503].includes(ready.status), `the server answers again after the reset (${ready.status})`);
});

/** POSTs one control's body as JSON and returns the status and the parsed answer. */
async function post(path: string, body: unknown): Promise<{ status: number; answer: unknown }> {
  const response = await fetch(`${started.control_url}/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: response.status, answer: await response.json() };
}

/** A 200 answer of `control` that conforms to its response schema. */
async function answered<T>(control: string, body: unknown): Promise<T> {
  const { status, answer } = await post(control.replace('.', '/'), body);
  assert.equal(status, 200, `${control} answered ${status}: ${JSON.stringify(answer)}`);
  assert.deepEqual(controlSchemaProblems(`${control}.response.schema.json`, answer), [], `${control} answer off its schema`);
  return answer as T;
}

/** An error answer of `control` with that status and code, in the protocol's envelope. */
async function refused(control: string, body: unknown, status: number, code: string): Promise<void> {
  const got = await post(control.replace('.', '/'), body);
  assert.deepEqual(controlSchemaProblems('error.schema.json', got.answer), [], `${control} error off the envelope`);
  const error = (got.answer as { error: { code: string; control: string } }).error;
  assert.deepEqual([got.status, error.code, error.control], [status, code, control], `${control} ${JSON.stringify(body)}: ${JSON.stringify(got.answer)}`);
}

async function connectClient(userId: string, clientId: string): Promise<void> {
  const response = await fetch(`${started.base_url}/sync/connect`, {
    method: 'POST',
    headers: { authorization: `Bearer ${await mintJwt({ secret: SHIM_JWT_SECRET }, userId)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: clientId, platform: 'shim-test', app_version: '1.0.0', protocol_version: 3, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} }),
  });
  const text = await response.text();
  assert.equal(response.status, 200, `connect of ${clientId}: ${text}`);
}

test('the clients controls act on the server\'s client records, quote-safe, with the reference\'s refusals', { skip }, async () => {
  // Quotes, a backslash and a psql variable reference in the identities: none may reach the SQL as text.
  const alice = { user_id: "o'brien \\ :'x'", client_id: `phone'); DROP TABLE synchro.clients; --` };
  const idle = { user_id: "o'brien \\ :'x'", client_id: 'tablet "idle"' };
  await connectClient(alice.user_id, alice.client_id);
  await connectClient(idle.user_id, idle.client_id);
  const db = new pg.Client({ connectionString: started.database_url });
  await db.connect();
  try {
    const stored = async (who: { user_id: string; client_id: string }) =>
      (
        await db.query<{ client_generation: string; scope_set_version: string; expired: boolean }>(
          'SELECT client_generation::text, scope_set_version::text, expired FROM synchro.clients WHERE user_id = $1 AND client_id = $2',
          [who.user_id, who.client_id],
        )
      ).rows[0];

    // counters: a read, then a set of each counter to the top of the portable range.
    const read = await answered<{ client_generation: number; scope_set_version: number }>('clients.counters', alice);
    const before = await stored(alice);
    assert.deepEqual([read.client_generation, read.scope_set_version], [Number(before?.client_generation), Number(before?.scope_set_version)]);
    const set = await answered<{ client_generation: number; scope_set_version: number }>('clients.counters', { ...alice, set: { client_generation: 9_007_199_254_740_991, scope_set_version: 9_007_199_254_740_991 } });
    assert.deepEqual(set, { client_generation: 9_007_199_254_740_991, scope_set_version: 9_007_199_254_740_991 });
    assert.deepEqual(await stored(alice), { client_generation: '9007199254740991', scope_set_version: '9007199254740991', expired: false });
    assert.deepEqual(await answered('clients.counters', { ...alice, set: { scope_set_version: 0 } }), { client_generation: 9_007_199_254_740_991, scope_set_version: 0 });
    for (const bad of [{ client_generation: 0 }, { scope_set_version: -1 }, { client_generation: 9_007_199_254_740_992 }, { scope_set_version: 1.5 }, { epoch: 1 }]) {
      await refused('clients.counters', { ...alice, set: bad }, 400, 'invalid_request');
    }
    await refused('clients.counters', { ...alice, set: null }, 400, 'invalid_request');
    assert.equal((await stored(alice))?.scope_set_version, '0', 'a refused set changed nothing');

    // expire: the generation stays; expiring again answers the same; the other client is untouched.
    assert.deepEqual(await answered('clients.expire', alice), { expired: true, client_generation: 9_007_199_254_740_991 });
    assert.equal((await stored(alice))?.expired, true);
    assert.deepEqual(await answered('clients.expire', alice), { expired: true, client_generation: 9_007_199_254_740_991 });
    assert.equal((await stored(idle))?.expired, false);

    // run-expiry by the database clock: only a client idle for longer than the interval is expired, once.
    await db.query("UPDATE synchro.clients SET created_at = now() - interval '31 days', last_acknowledged_at = NULL WHERE user_id = $1 AND client_id = $2", [idle.user_id, idle.client_id]);
    const run = await answered<{ now: string; stale_client_interval_ms: number; expired: unknown[] }>('clients.run-expiry', {});
    assert.equal(run.stale_client_interval_ms, DEFAULT_STALE_CLIENT_INTERVAL_MS);
    const clock = (await db.query<{ now: Date }>('SELECT now()')).rows[0]?.now as Date;
    assert.ok(Math.abs(Date.parse(run.now) - clock.getTime()) < 60_000, `now ${run.now} is the database clock (${clock.toISOString()})`);
    assert.deepEqual(run.expired, [{ ...idle, client_generation: 1 }]);
    assert.equal((await stored(idle))?.expired, true);
    assert.deepEqual((await answered<{ expired: unknown[] }>('clients.run-expiry', {})).expired, [], 'an expired client is not expired again');

    // retire: through the server's entry point, the same id twice, for any identity.
    const first = await answered<{ retirement_id: string }>('clients.retire', alice);
    assert.deepEqual(await answered('clients.retire', alice), first);
    const marker = await db.query<{ id: string }>('SELECT retirement_id::text AS id FROM synchro.client_retirements WHERE user_id = $1 AND client_id = $2', [alice.user_id, alice.client_id]);
    assert.equal(marker.rows[0]?.id, first.retirement_id);

    // An unknown client is not_found where the reference says so; bad bodies are invalid_request.
    const stranger = { user_id: 'nobody', client_id: "never'seen" };
    await refused('clients.expire', stranger, 404, 'not_found');
    await refused('clients.counters', stranger, 404, 'not_found');
    await refused('clients.counters', { ...stranger, set: { client_generation: 2 } }, 404, 'not_found');
    await refused('clients.expire', { user_id: '', client_id: 'x' }, 400, 'invalid_request');
    await refused('clients.expire', { user_id: 'u' }, 400, 'invalid_request');
    await refused('clients.retire', { user_id: 'u', client_id: 'c', extra: true }, 400, 'invalid_request');
    await refused('clients.retire', { user_id: 'u', client_id: 7 }, 400, 'invalid_request');
    await refused('clients.retire', '[]', 400, 'invalid_request');
    await refused('clients.retire', { user_id: 'u\u0000', client_id: 'c' }, 400, 'invalid_request');
    await refused('clients.run-expiry', { now: 'later' }, 400, 'invalid_request');
    const retired = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM synchro.client_retirements WHERE user_id LIKE 'u%'");
    assert.equal(retired.rows[0]?.n, 0, 'a refused retire retired nobody');
  } finally {
    await db.end();
  }
});

test('requirements that need await-materialization and the clients controls certify through the shim alone', { skip }, async () => {
  const config = writeShimServerConfig(join(scratch, 'behind-shim.json'), started);
  const out = join(scratch, 'report');
  // SYNC-PROTO-004 commits source rows and pulls them: without await-materialization it fails falsely.
  // SYNC-STATE-003 makes a client's scope rebuild by expiring the client (the clients controls).
  // scripts/certify-behind-shim.ts certifies the whole Protocol section the same way.
  const ids = ['SYNC-PROTO-004', 'SYNC-STATE-003'];
  const { status, output } = await runHarness(['run', '--server', config, '--tags', ids.map((id) => `@${id}`).join(' or '), '--out', out]);
  assert.ok(status === 0 || status === 1, `the run ended with ${status}:\n${output}`);
  const report = JSON.parse(readFileSync(join(out, 'conformance.json'), 'utf8')) as { requirements: { id: string; status: string }[] };
  const statuses = Object.fromEntries(report.requirements.filter((r) => ids.includes(r.id)).map((r) => [r.id, r.status]));
  assert.deepEqual(statuses, { 'SYNC-PROTO-004': 'passed', 'SYNC-STATE-003': 'passed' }, output);
});
