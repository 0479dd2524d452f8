/**
 * The reference adapter's `clock`, `clients` and `capture` capabilities
 * against the real reference server process (started with --test-controls by
 * the adapter): scenarios tagged @cap:clock / @cap:clients / @cap:capture run
 * on the reference.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { requiredCapabilities } from '../../harness/adapters/capabilities.ts';
import { openReferenceServer, type PreparedServer, prepareReferenceServer } from '../../harness/adapters/reference-server.ts';
import type { ServerAdapter } from '../../harness/adapters/server.ts';
import type { ReferenceServerSetup } from '../../harness/adapters/setup.ts';

const root = new URL('../../', import.meta.url).pathname;
const DAY = 86_400_000;
let prepared: PreparedServer;
let server: ServerAdapter;

before(async () => {
  prepared = await prepareReferenceServer(root);
  assert.ok(prepared.setup.available, `the reference server is unavailable: ${prepared.setup.reason}`);
  server = await openReferenceServer(prepared.setup as ReferenceServerSetup, { name: `controls_${process.pid}`, faults: [], deadlineMs: 60_000 });
  await server.provision?.exec('CREATE TABLE public.notes (id text PRIMARY KEY, body text)');
  await server.provision?.registerTable({ relation: 'public.notes' });
});
after(async () => {
  await server?.close();
  await prepared?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: response members are read one by one in assertions
async function post(path: string, body: unknown, user = 'alice'): Promise<{ status: number; json: any }> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${await server.token(user)}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

async function freshClient(clientId: string) {
  const res = await post('/sync/connect', { client_id: clientId, platform: 'test', app_version: '1.0.0', protocol_version: 3, schema: { version: 0, hash: '' }, scope_set_version: 0, known_scopes: {} });
  assert.equal(res.status, 200);
  const table = res.json.schema_definition.tables.find((t: { name: string }) => t.name === 'notes');
  const field = (name: string) => table.fields.find((f: { name: string }) => f.name === name).field_id;
  const schema = { version: res.json.schema.version, hash: res.json.schema.hash };
  const push = (generation: number, id: string) =>
    post('/sync/push', {
      client_id: clientId,
      client_generation: generation,
      batch_id: randomUUID(),
      schema,
      mutations: [{ mutation_id: randomUUID(), table: table.table_id, pk: { [field('id')]: id }, authored_schema: schema, op: 'insert', client_version: '2026-09-01T08:00:00.000000Z', columns: { [field('body')]: id } }],
    });
  const reconnect = (generation: number) => post('/sync/connect', { client_id: clientId, client_generation: generation, platform: 'test', app_version: '1.0.0', protocol_version: 3, schema, scope_set_version: res.json.scope_set_version, known_scopes: {} });
  return { generation: res.json.client_generation as number, push, reconnect };
}

test('the reference declares and provides clock, clients, compaction and every capture control', () => {
  const { known } = requiredCapabilities(['@cap:clock', '@cap:clients', '@cap:compaction', '@cap:capture']);
  for (const capability of known) assert.ok((server.capabilities as readonly string[]).includes(capability), capability);
  assert.ok(server.clock && server.clients && server.compaction);
  for (const control of ['awaitMaterialized', 'stopWorker', 'killWorker', 'restartWorker', 'injectPoison', 'killWorkerAt', 'holdBeforeCommit', 'awaitHold', 'resetStream'] as const) assert.equal(typeof server.capture?.[control], 'function', control);
  assert.equal(typeof server.sourceSql?.pushInTransaction, 'function', 'sourceSql.pushInTransaction (control push.in-transaction)');
});

test('a hold reached through the control protocol: waiting for capture is refused while held, a restart commits the held transaction', async () => {
  const capture = server.capture as Required<NonNullable<ServerAdapter['capture']>>;
  await capture.holdBeforeCommit();
  await server.sourceSql?.query("INSERT INTO public.notes (id, body) VALUES ('held', 'h')");
  await capture.awaitHold(15_000);
  await assert.rejects(capture.awaitMaterialized(5_000), /capture\.await answered 409 capture_stopped/);
  assert.equal((await server.inspect?.query("SELECT 1 FROM synchro.projections WHERE pk_text = 'held'"))?.length, 0);
  await capture.restartWorker();
  await capture.awaitMaterialized(30_000);
  assert.equal((await server.inspect?.query("SELECT 1 FROM synchro.projections WHERE pk_text = 'held'"))?.length, 1);
  await assert.rejects(capture.awaitHold(1_000), /capture\.held answered 409 not_offered/);
});

test('sourceSql.pushInTransaction answers what the push entry point did, through the control protocol', async () => {
  const entry = server.sourceSql?.pushInTransaction;
  assert.ok(entry);
  const failed = await entry("INSERT INTO public.notes (id) VALUES ('rolled-back'); SELECT 1/0", 'alice', {});
  assert.deepEqual({ ok: failed.ok, sqlstate: 'sqlstate' in failed ? failed.sqlstate : undefined }, { ok: false, sqlstate: '22012' });
  const refused = await entry('', 'alice', { not: 'a push' });
  assert.equal(refused.ok, false);
  assert.ok('error' in refused, JSON.stringify(refused));
  assert.equal((await server.sourceSql?.query("SELECT 1 FROM public.notes WHERE id = 'rolled-back'"))?.length, 0);
});

test('capture.awaitMaterialized returns once a source row is visible, and compaction reports what it expired and deleted', async () => {
  await server.sourceSql?.query("INSERT INTO public.notes (id, body) VALUES ('waited', 'for')");
  await server.capture?.awaitMaterialized(30_000);
  const versions = await server.inspect?.query("SELECT 1 FROM synchro.row_versions WHERE pk_text = 'waited'");
  assert.equal(versions?.length, 1);
  const compacted = (await server.compaction?.compact()) as { expired: unknown[]; deleted: Record<string, number> };
  assert.ok(Array.isArray(compacted.expired));
  assert.equal(typeof compacted.deleted, 'object');
});

test('a stopped, killed or poisoned capture worker materializes nothing and refuses to be waited on; a restart or retry catches up', async () => {
  const capture = server.capture as Required<NonNullable<ServerAdapter['capture']>>;
  const visible = async (id: string) => (await server.inspect?.query('SELECT 1 FROM synchro.projections WHERE pk_text = $1', [id]))?.length;
  for (const halt of [capture.stopWorker, capture.killWorker]) {
    const id = `halted-${randomUUID()}`;
    await halt();
    await server.sourceSql?.query('INSERT INTO public.notes (id, body) VALUES ($1, $1)', [id]);
    await assert.rejects(capture.awaitMaterialized(30_000), /409.*stopped/);
    assert.equal(await visible(id), 0);
    await capture.restartWorker();
    await capture.awaitMaterialized(30_000);
    assert.equal(await visible(id), 1);
  }
  // Poison: the next transaction is quarantined and blocks the wait until a retry materializes it.
  const id = `poisoned-${randomUUID()}`;
  await capture.injectPoison();
  await server.sourceSql?.query('INSERT INTO public.notes (id, body) VALUES ($1, $1)', [id]);
  await assert.rejects(capture.awaitMaterialized(30_000), /409.*quarantine/);
  assert.equal(await visible(id), 0);
  await server.sourceSql?.query('SELECT synchro.synchro_retry_wal_poison()');
  await capture.awaitMaterialized(30_000);
  assert.equal(await visible(id), 1);
});

test('clock.advance and clock.set move the server time the protocol reports', async () => {
  const clock = server.clock as NonNullable<ServerAdapter['clock']>;
  const before = Date.parse(await clock.now());
  await clock.advance(2 * DAY);
  const schema = (await (await fetch(`${server.baseUrl}/sync/schema`)).json()) as { server_time: string };
  assert.ok(Date.parse(schema.server_time) - before >= 2 * DAY, `${schema.server_time} is two days on`);
  await clock.set('2030-01-01T00:00:00Z');
  const now = Date.parse(await clock.now());
  assert.ok(now >= Date.parse('2030-01-01T00:00:00Z') && now < Date.parse('2030-01-01T00:01:00Z'));
  // The harness checks its own requests against the schemas before sending them.
  await assert.rejects(clock.advance(-1), /breaks its schema/);
});

test('clients.expire makes the next push 409 and a reconnect renews the generation; retire is final', async () => {
  const clients = server.clients as NonNullable<ServerAdapter['clients']>;
  const c = await freshClient('expire-me');
  assert.equal((await c.push(c.generation, 'a')).status, 200);
  await clients.expire('alice', 'expire-me');
  const refused = await c.push(c.generation, 'b');
  assert.equal(refused.status, 409);
  assert.equal(refused.json.error.code, 'client_generation_expired');
  const renewed = await c.reconnect(c.generation);
  assert.equal(renewed.json.client_generation, c.generation + 1);
  assert.equal((await c.push(c.generation + 1, 'b')).status, 200);
  await clients.retire('alice', 'expire-me');
  assert.equal((await c.reconnect(c.generation + 1)).json.error.code, 'client_retired');
  await assert.rejects(clients.expire('alice', 'nobody'), /answered 404/);
});

test('clients.runExpiry applies the 30-day stale interval at the server clock', async () => {
  const clock = server.clock as NonNullable<ServerAdapter['clock']>;
  const clients = server.clients as NonNullable<ServerAdapter['clients']>;
  const c = await freshClient('goes-stale');
  await clock.advance(29 * DAY);
  assert.deepEqual((await clients.runExpiry()).filter((x) => x.clientId === 'goes-stale'), []);
  await clock.advance(2 * DAY);
  assert.deepEqual((await clients.runExpiry()).filter((x) => x.clientId === 'goes-stale'), [{ userId: 'alice', clientId: 'goes-stale' }]);
  assert.equal((await c.push(c.generation, 'x')).json.error.code, 'client_generation_expired');
});
