import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { scratchDir } from '../support/scratch-dir.ts';
import { DriverProcess } from './driver-process.ts';
import { FakeServer } from './fake-server.ts';
import { manifest } from './fixtures.ts';

let server: FakeServer;
before(async () => {
  server = await new FakeServer(manifest()).start();
});
after(() => server.stop());

let n = 0;
function config(extra: Record<string, unknown> = {}) {
  n++;
  return { dataDir: scratchDir('synchro-driver-'), serverUrl: server.url, token: 't', clientId: `driver-${n}`, appVersion: '1.0.0', ...extra };
}

async function opened(cfg: Record<string, unknown>, env: Record<string, string> = {}): Promise<DriverProcess> {
  const d = new DriverProcess(env);
  await d.call('open', cfg);
  return d;
}

/** Runs `method` with `point` armed and checks the process was killed by SIGKILL. */
async function dieAt(d: DriverProcess, point: string, method: string, params: Record<string, unknown> = {}): Promise<void> {
  await d.call('armCrash', { point });
  const out = await d.raw(method, params);
  assert.deepEqual(out, { killed: 'SIGKILL' }, `expected a kill at ${point}`);
}

type Mutations = { mutations: { id: string; status: string }[] };

test('the driver speaks the adapter protocol', async () => {
  const d = await opened(config());
  assert.deepEqual(await d.call('syncNow'), { completion: 'idle', status: 'ready', detail: { state: 'ready' } });
  assert.deepEqual(await d.call('execute', { sql: "INSERT INTO orders(id, title) VALUES ('p', 'q')" }), { changes: 1 });
  assert.deepEqual((await d.call<{ rows: unknown[] }>('query', { sql: "SELECT title FROM orders WHERE id = 'p'" })).rows, [{ title: 'q' }]);
  const refused = await d.raw('execute', { sql: 'BEGIN' });
  assert.equal((refused as { error: { code: number } }).error.code, -32001);
  assert.deepEqual(await d.call('atomicWrite', { statements: [{ sql: "DELETE FROM orders WHERE id = 'p'" }, { sql: "UPDATE orders SET title = 'x' WHERE id = 'p'" }] }), {
    ok: false,
    errorCode: 'atomic_group_invalid',
    reason: 'deleteFollowedByWrite',
  });
  assert.deepEqual(await d.call('validateTransition', { from: 'error', to: 'ready' }), { legal: false, error: { type: 'invalid_state_transition', retryable: false } });
  assert.deepEqual(await d.call('validateTransition', { from: 'backoff', to: 'pulling', interrupted: 'pulling' }), { legal: true });
  assert.equal((await d.call<{ legal: boolean }>('validateTransition', { from: 'backoff', to: 'pushing', interrupted: 'pulling' })).legal, false);
  // Without an interrupted operation and with no backoff record, no operation can be resumed.
  assert.equal((await d.call<{ legal: boolean }>('validateTransition', { from: 'backoff', to: 'pulling' })).legal, false);
  const status = await d.call<{ status: string; statusLog: string[]; statusTimes: number[] }>('getStatus');
  assert.equal(status.statusLog[0], 'uninitialized');
  assert.equal(status.statusTimes.length, status.statusLog.length);
  const m = await d.call<{ mutations: { columns: Record<string, unknown> }[] }>('inspectMutations');
  assert.deepEqual(m.mutations[0]?.columns, { paid: null, qty: null, title: 'q' });
  // A client opened without a seed stores no continuation receipt.
  assert.deepEqual(await d.call('inspectSeedReceipts'), { receipts: [] });
  await d.close();
});

test('the durable snapshot digest moves with sync state, not with status, and can leave out the backoff record', async () => {
  const d = await opened(config());
  await d.call('syncNow');
  type Snap = { digest: string; sections: Record<string, string> };
  const first = await d.call<Snap>('snapshotDigest', { excludeBackoff: true });
  assert.equal(first.sections._synchro_backoff, undefined);
  assert.ok((await d.call<Snap>('snapshotDigest', {})).sections._synchro_backoff !== undefined);
  await d.call('stop');
  await d.call('start');
  assert.equal((await d.call<Snap>('snapshotDigest', { excludeBackoff: true })).digest, first.digest, 'a lifecycle change is not sync state');
  await d.call('execute', { sql: "INSERT INTO orders(id, title) VALUES ('s', 't')" });
  const after = await d.call<Snap>('snapshotDigest', { excludeBackoff: true });
  assert.notEqual(after.digest, first.digest);
  assert.notEqual(after.sections._synchro_pending_changes, first.sections._synchro_pending_changes);
  assert.notEqual(after.sections['app:orders'], first.sections['app:orders']);
  assert.deepEqual(await d.call('inspectBackoff'), { backoff: null });
  await d.close();
});

/** A loopback server that holds every request unanswered; `reached` resolves at the first one. */
async function silentServer(): Promise<{ silent: import('node:http').Server; reached: Promise<void>; held: import('node:http').ServerResponse[] }> {
  let arrived: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const held: import('node:http').ServerResponse[] = [];
  const silent = createServer((_req, res) => {
    held.push(res);
    arrived();
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  return { silent, reached, held };
}

test('read-only calls and application SQL are answered while a sync waits on the network', async () => {
  // A server that accepts the connect and never answers until the test cuts the connection.
  const { silent, reached, held } = await silentServer();
  const d = await opened(config({ serverUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}` }));
  const sync = d.call<{ completion: string }>('syncNow');
  await reached;
  assert.equal((await d.call<{ status: string }>('getStatus')).status, 'connecting');
  assert.ok((await d.call<{ digest: string }>('snapshotDigest', {})).digest.length > 0);
  // The application keeps reading its tables while the sync waits: no write is possible here, the schema is not installed yet.
  assert.deepEqual(await d.call('query', { sql: 'SELECT 1 AS one' }), { rows: [{ one: 1 }] });
  for (const res of held) res.socket?.destroy();
  assert.equal((await sync).completion, 'blocked');
  assert.equal((await d.call<{ backoff: { operation: string; attempt: number } }>('inspectBackoff')).backoff.operation, 'connecting');
  await d.close();
  silent.close();
});

test('application SQL is answered while a sync waits on the network, and lands in the queue', async () => {
  // The schema comes from a first sync against the fake server; then the same database syncs against a server that never answers.
  const cfg = config();
  const first = await opened(cfg);
  await first.call('syncNow');
  await first.close();
  const { silent, reached, held } = await silentServer();
  const d = await opened({ ...cfg, serverUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}` });
  let syncEnded = false;
  const sync = d.call<{ completion: string }>('syncNow').finally(() => {
    syncEnded = true;
  });
  await reached;
  assert.deepEqual(await d.call('execute', { sql: "INSERT INTO orders(id, title) VALUES ('w', 'while syncing')" }), { changes: 1 });
  assert.equal(syncEnded, false, 'the write was answered while the sync still waited, not after it');
  assert.deepEqual((await d.call<{ rows: unknown[] }>('query', { sql: "SELECT title FROM orders WHERE id = 'w'" })).rows, [{ title: 'while syncing' }]);
  assert.equal((await d.call<Mutations>('inspectMutations')).mutations.filter((m) => m.status === 'pending').length, 1);
  for (const res of held) res.socket?.destroy();
  assert.equal((await sync).completion, 'blocked');
  await d.close();
  silent.close();
});

test('killed after sealing: the same batch bytes are sent after restart, once', async () => {
  const cfg = config();
  let d = await opened(cfg);
  await d.call('syncNow');
  await d.call('execute', { sql: "INSERT INTO orders(id) VALUES ('k1')" });
  await dieAt(d, 'after_seal_commit', 'syncNow');
  const pushes = server.count('/sync/push');
  d = await opened(cfg);
  const batches = await d.call<{ batches: { requestBytes: string; state: string }[] }>('inspectBatches');
  assert.equal(batches.batches.length, 1);
  assert.equal((await d.call('syncNow')).completion, 'idle');
  const sent = server.requests.filter((r) => r.path === '/sync/push').slice(pushes);
  assert.equal(sent.length, 1);
  assert.equal(sent[0]?.body.toString('base64'), batches.batches[0]?.requestBytes);
  assert.deepEqual((await d.call<Mutations>('inspectMutations')).mutations.map((m) => m.status), ['accepted']);
  await d.close();
});

test('killed after the server committed but before the response was applied: replay applies once', async () => {
  const cfg = config();
  let d = await opened(cfg);
  await d.call('syncNow');
  await d.call('execute', { sql: "INSERT INTO orders(id, qty) VALUES ('k2', 1)" });
  const before = (await d.call<Mutations>('inspectMutations')).mutations.map((m) => m.id);
  await dieAt(d, 'after_push_response_received', 'syncNow');
  d = await opened(cfg);
  assert.equal((await d.call('syncNow')).completion, 'idle');
  const after = (await d.call<Mutations>('inspectMutations')).mutations;
  assert.deepEqual(after.map((m) => m.id), before);
  assert.deepEqual(after.map((m) => m.status), ['accepted']);
  assert.equal(server.log.filter((e) => e.key === 'k2').length, 1);
  await d.close();
});

test('killed inside a pull page apply: no cursor without its data, and the page is applied after restart', async () => {
  const cfg = config();
  let d = await opened(cfg);
  await d.call('syncNow');
  const scopesBefore = await d.call('inspectScopes');
  server.putRow('tbl_notes', { fld_notes_id: 7000 + n, fld_notes_body: 'pulled' });
  await dieAt(d, 'inside_pull_apply', 'syncNow');
  d = await opened(cfg);
  assert.deepEqual(await d.call('inspectScopes'), scopesBefore);
  assert.deepEqual((await d.call<{ rows: unknown[] }>('query', { sql: `SELECT * FROM notes WHERE id = ${7000 + n}` })).rows, []);
  assert.equal((await d.call('syncNow')).completion, 'idle');
  assert.deepEqual((await d.call<{ rows: unknown[] }>('query', { sql: `SELECT body FROM notes WHERE id = ${7000 + n}` })).rows, [{ body: 'pulled' }]);
  await d.close();
});

test('killed after a rebuild page: the same attempt continues from its stored token', async () => {
  const cfg = config({ rebuildLimit: 1 });
  let d = await opened(cfg);
  await d.call('armCrash', { point: 'after_rebuild_page_commit' });
  assert.deepEqual(await d.raw('syncNow'), { killed: 'SIGKILL' });
  d = await opened(cfg);
  const attempt = (await d.call<{ rebuilds: { rebuildId: string; token: string | null; pagesApplied: number }[] }>('inspectRebuilds')).rebuilds[0];
  assert.equal(attempt?.pagesApplied, 1);
  assert.ok(attempt?.token !== null);
  const start = server.requests.length;
  assert.equal((await d.call('syncNow')).completion, 'idle');
  const next = JSON.parse(server.requests.slice(start).find((r) => r.path === '/sync/rebuild')?.body.toString() ?? '{}') as { rebuild_id: string; cursor: string };
  assert.equal(next.rebuild_id, attempt?.rebuildId);
  assert.equal(next.cursor, attempt?.token);
  const scopes = await d.call<{ scopes: { checksum: string }[] }>('inspectScopes');
  assert.equal(scopes.scopes[0]?.checksum, server.scopeChecksum('all').digest);
  await d.close();
});

test('killed before rebuild finality commits: reopening finishes it from the stored final page, without the network', async () => {
  const cfg = config();
  let d = await opened(cfg);
  await dieAt(d, 'before_rebuild_finality_commit', 'syncNow');
  const rebuilds = server.count('/sync/rebuild');
  d = await opened({ ...cfg, serverUrl: 'http://127.0.0.1:9' });
  const scopes = await d.call<{ scopes: { checksum: string | null; rebuildRequired: boolean }[] }>('inspectScopes');
  assert.equal(scopes.scopes[0]?.rebuildRequired, false);
  assert.equal(scopes.scopes[0]?.checksum, server.scopeChecksum('all').digest);
  assert.equal(server.count('/sync/rebuild'), rebuilds);
  await d.close();
});

for (const point of ['migration_prepared', 'migration_ddl_applied']) {
  test(`killed at ${point}: restart finishes the migration from the journal without the network`, async () => {
    const cfg = { ...config(), serverUrl: 'http://127.0.0.1:9', bundledManifest: manifest() };
    const d1 = new DriverProcess({ SYNCHRO_CRASH_AT: point });
    assert.deepEqual(await d1.raw('open', cfg), { killed: 'SIGKILL' });
    const d = await opened(cfg);
    await d.call('execute', { sql: "INSERT INTO orders(id) VALUES ('after-migration')" });
    const scopes = await d.call<{ schema: { hash: string } }>('inspectScopes');
    assert.equal(scopes.schema.hash, manifest().schema_hash);
    assert.equal((await d.call<Mutations>('inspectMutations')).mutations.length, 1);
    await d.close();
  });
}

test('offline writes with a bundled manifest survive a kill and are pushed with the same IDs', async () => {
  const cfg = { ...config(), bundledManifest: manifest() };
  let d = await opened(cfg);
  await d.call('execute', { sql: "INSERT INTO orders(id) VALUES ('offline-kill')" });
  const ids = (await d.call<Mutations>('inspectMutations')).mutations.map((m) => m.id);
  await dieAt(d, 'after_capture_commit', 'execute', { sql: "INSERT INTO orders(id) VALUES ('offline-kill-2')" });
  d = await opened(cfg);
  const all = (await d.call<Mutations>('inspectMutations')).mutations;
  assert.equal(all.length, 2);
  assert.equal(all[0]?.id, ids[0]);
  assert.equal((await d.call('syncNow')).completion, 'idle');
  const pushed = server.requests.filter((r) => r.path === '/sync/push').flatMap((r) => (JSON.parse(r.body.toString()) as { mutations: { mutation_id: string }[] }).mutations.map((m) => m.mutation_id));
  for (const m of all) assert.ok(pushed.includes(m.id));
  await d.close();
});

test('killed in backoff: the restarted client waits in local_ready until the stored deadline, then connects', async () => {
  const cfg = config();
  let d = await opened(cfg);
  await d.call('syncNow');
  await d.call('execute', { sql: "INSERT INTO orders(id) VALUES ('bk')" });
  server.script('/sync/push', { status: 503, body: { error: { code: 'temporary_unavailable', message: 'busy', retryable: true } }, retryAfter: '1' });
  await dieAt(d, 'after_backoff_commit', 'syncNow');
  d = await opened(cfg);
  const { backoff } = await d.call<{ backoff: { nextRetryAt: number; operation: string } }>('inspectBackoff');
  assert.equal(backoff.operation, 'pushing');
  const start = server.requests.length;
  assert.equal((await d.call('syncNow')).completion, 'idle');
  const first = server.requests[start];
  assert.equal(first?.path, '/sync/connect');
  assert.ok((first?.at ?? 0) >= backoff.nextRetryAt, 'no request before the stored deadline');
  const log = (await d.call<{ statusLog: string[] }>('getStatus')).statusLog;
  assert.deepEqual(log.slice(0, 3), ['uninitialized', 'local_ready', 'connecting']);
  await d.close();
});

const EVERY_POINT = [
  'migration_prepared',
  'migration_ddl_applied',
  'after_capture_commit',
  'after_seal_commit',
  'before_push_send',
  'after_push_response_received',
  'after_push_apply_commit',
  'after_rebuild_attempt_commit',
  'after_rebuild_page_commit',
  'before_rebuild_finality_commit',
  'after_pull_response_received',
  'inside_pull_apply',
  'after_pull_apply_commit',
];

// Independent clients and data directories, so two run at a time.
describe('every crash point', { concurrency: 2 }, () => {
for (const point of EVERY_POINT) {
  test(`killed at ${point}: after restart nothing is lost, nothing duplicated, every cursor has its data`, async (t) => {
    // A server of its own, so a concurrent test cannot change the scope digest under this one.
    const server = await new FakeServer(manifest()).start();
    t.after(() => server.stop());
    const cfg = { ...config({ rebuildLimit: 2, serverUrl: server.url }), bundledManifest: manifest() };
    server.putRow('tbl_notes', { fld_notes_id: 1, fld_notes_body: 'seed' });
    const noteId = 20_000 + n;
    const key = `crash-${point}`;
    server.putRow('tbl_notes', { fld_notes_id: noteId, fld_notes_body: point });
    const first = new DriverProcess({ SYNCHRO_CRASH_AT: point });
    let died = false;
    for (const [method, params] of [
      ['open', cfg],
      ['execute', { sql: 'INSERT INTO orders(id, title) VALUES (?, ?)', params: [key, point] }],
      ['syncNow', {}],
    ] as const) {
      const out = await first.raw(method, params);
      if ('killed' in out) {
        assert.equal(out.killed, 'SIGKILL');
        died = true;
        break;
      }
    }
    assert.ok(died, `${point} was never reached`);
    const d = await opened(cfg);
    const rows = (await d.call<{ rows: unknown[] }>('query', { sql: 'SELECT id FROM orders WHERE id = ?', params: [key] })).rows;
    if (rows.length === 0) await d.call('execute', { sql: 'INSERT INTO orders(id, title) VALUES (?, ?)', params: [key, point] });
    assert.equal((await d.call('syncNow')).completion, 'idle');
    const mine = (await d.call<{ mutations: { id: string; status: string; recordId: string }[] }>('inspectMutations')).mutations.filter((m) => m.recordId === key);
    assert.deepEqual(mine.map((m) => m.status), ['accepted'], 'one mutation, accepted once');
    assert.equal(server.log.filter((e) => e.key === key).length, 1, 'applied once by the server');
    const scopes = await d.call<{ scopes: { scopeId: string; checksum: string | null; cursor: string | null }[] }>('inspectScopes');
    assert.equal(scopes.scopes[0]?.checksum, server.scopeChecksum('all').digest, 'the cursor comes with exactly its data');
    const local = (await d.call<{ rows: unknown[] }>('query', { sql: 'SELECT count(*) AS n FROM notes WHERE id = ?', params: [noteId] })).rows;
    assert.deepEqual(local, [{ n: 1 }]);
    await d.close();
  });
}
});
