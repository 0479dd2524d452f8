/**
 * A real process kill at `inside_scope_cleanup`: the client loses a scope it
 * holds rows in, dies by SIGKILL in the middle of removing it, and restarts
 * on the same file. The removal must be all-or-nothing, keep rows that carry
 * unresolved local intent, and never turn cleanup into a mutation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { scratchDir } from '../support/scratch-dir.ts';
import { DriverProcess } from './driver-process.ts';
import { FakeServer } from './fake-server.ts';
import { manifest } from './fixtures.ts';

type Row = Record<string, unknown>;
type Mutation = { id: string; recordId: string; status: string; op: string };
type Scopes = { scopes: { scopeId: string; cursor: string | null; checksum: string | null; rebuildRequired: boolean }[] };
type Provenance = { provenance: { scopeId: string; table: string; recordId: string }[] };

/** Orders are routed to scopes by title: 'a', 'b', or 'ab' for both; notes all live in 'a'. */
function routedServer(): FakeServer {
  const server = new FakeServer(manifest());
  server.defaultScopes = ['a', 'b'];
  server.scopesOf = (table, row) => {
    if (table !== 'tbl_orders') return ['a'];
    const title = String(row.fld_orders_title ?? '');
    return title === 'ab' ? ['a', 'b'] : title === 'b' ? ['b'] : ['a'];
  };
  return server;
}

function order(id: string, title: string): Row {
  return { fld_orders_id: id, fld_orders_title: title, fld_orders_qty: 1, fld_orders_paid: null, fld_orders_deleted_at: null, fld_orders_updated_at: null };
}

/** Every driver a test starts; a failed assertion must not leave one running and hold the test runner open. */
const live: DriverProcess[] = [];

async function opened(cfg: Record<string, unknown>): Promise<DriverProcess> {
  const d = new DriverProcess();
  live.push(d);
  await d.call('open', cfg);
  return d;
}

function killLeftovers(): void {
  for (const d of live.splice(0)) if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGKILL');
}

async function ids(d: DriverProcess, table: string): Promise<string[]> {
  const rows = (await d.call<{ rows: { id: string }[] }>('query', { sql: `SELECT CAST(id AS TEXT) AS id FROM ${table} ORDER BY id` })).rows;
  return rows.map((r) => r.id);
}

test('killed inside scope cleanup: the removal happens once after restart, keeps pending intent and creates no mutation', async (t) => {
  const server = await routedServer().start();
  t.after(() => server.stop());
  t.after(killLeftovers);
  const clientId = 'cleanup-kill';
  const cfg = { dataDir: scratchDir('synchro-cleanup-'), serverUrl: server.url, token: 't', clientId, appVersion: '1.0.0' };
  for (const [id, title] of [
    ['only-a', 'a'],
    ['only-b', 'b'],
    ['both', 'ab'],
    ['edited-b', 'b'],
  ] as const) {
    server.putRow('tbl_orders', order(id, title));
  }

  // 1. The client holds both scopes, then edits a row of 'b' and writes a new 'b' row while offline.
  let d = await opened(cfg);
  assert.equal((await d.call('syncNow')).completion, 'idle');
  assert.deepEqual((await d.call<Scopes>('inspectScopes')).scopes.map((s) => s.scopeId), ['a', 'b']);
  await d.call('execute', { sql: "UPDATE orders SET qty = 5 WHERE id = 'edited-b'" });
  await d.call('execute', { sql: "INSERT INTO orders(id, title, qty) VALUES ('local-b', 'b', 7)" });
  const intent = (await d.call<{ mutations: Mutation[] }>('inspectMutations')).mutations;
  assert.deepEqual(intent.map((m) => [m.recordId, m.status]), [
    ['edited-b', 'pending'],
    ['local-b', 'pending'],
  ]);
  const before = {
    digest: (await d.call<{ digest: string }>('snapshotDigest', { excludeBackoff: true })).digest,
    provenance: await d.call<Provenance>('inspectProvenance'),
    orders: await ids(d, 'orders'),
  };
  assert.ok(before.provenance.provenance.some((p) => p.scopeId === 'b' && p.recordId === 'only-b'));
  await d.close();

  // 2. The server takes 'b' away; the next connect removes it and the process dies inside the cleanup.
  server.assign(clientId, ['a']);
  d = await opened(cfg);
  await d.call('armCrash', { point: 'inside_scope_cleanup' });
  assert.deepEqual(await d.raw('syncNow'), { killed: 'SIGKILL' });
  assert.equal(server.count('/sync/push'), 0, 'the kill came before any push');

  // 3. Restart on the same file: nothing of the interrupted removal is durable.
  d = await opened(cfg);
  assert.equal((await d.call<{ digest: string }>('snapshotDigest', { excludeBackoff: true })).digest, before.digest, 'the cleanup committed nothing');
  assert.deepEqual(await d.call<Provenance>('inspectProvenance'), before.provenance);
  assert.deepEqual(await ids(d, 'orders'), before.orders);

  // 4. Sync again, holding the push back so the state right after the cleanup can be inspected.
  server.script('/sync/push', { status: 503, body: { error: { code: 'temporary_unavailable', message: 'busy', retryable: true } } });
  assert.equal((await d.call('syncNow')).completion, 'blocked');
  const scopes = (await d.call<Scopes>('inspectScopes')).scopes;
  assert.deepEqual(scopes.map((s) => s.scopeId), ['a'], "'b' is gone with its cursor and checksum");
  const provenance = (await d.call<Provenance>('inspectProvenance')).provenance;
  assert.deepEqual(provenance.filter((p) => p.scopeId !== 'a'), [], "no provenance of 'b' is left");
  assert.deepEqual(await ids(d, 'orders'), ['both', 'edited-b', 'local-b', 'only-a'], "the unprotected 'b' row is deleted, rows with intent and rows 'a' still justifies stay");
  assert.deepEqual(
    (await d.call<{ rows: Row[] }>('query', { sql: "SELECT id, qty FROM orders WHERE id IN ('edited-b', 'local-b') ORDER BY id" })).rows,
    [
      { id: 'edited-b', qty: 5 },
      { id: 'local-b', qty: 7 },
    ],
    'the local intent is still what the application sees',
  );
  const versions = (await d.call<{ versions: { recordId: string }[] }>('inspectRowVersions')).versions.map((v) => v.recordId);
  assert.equal(versions.includes('only-b'), false, 'the deleted row leaves no stored version behind');
  const afterCleanup = (await d.call<{ mutations: Mutation[] }>('inspectMutations')).mutations;
  assert.deepEqual(afterCleanup.map((m) => m.id), intent.map((m) => m.id), 'cleanup created no mutation and lost none');

  // 5. Once pushed, every mutation is accepted exactly once and the cursor of 'a' comes with exactly its data.
  assert.equal((await d.call('syncNow')).completion, 'idle');
  const final = (await d.call<{ mutations: Mutation[] }>('inspectMutations')).mutations;
  assert.deepEqual(final.map((m) => [m.id, m.status]), intent.map((m) => [m.id, 'accepted']));
  const pushed = server.requests
    .filter((r) => r.path === '/sync/push')
    .flatMap((r) => (JSON.parse(r.body.toString()) as { batch_id: string; mutations: { mutation_id: string }[] }).mutations.map((m) => m.mutation_id));
  assert.deepEqual([...new Set(pushed)].sort(), intent.map((m) => m.id).sort(), 'only the authored mutations were ever sent');
  assert.equal(server.log.filter((e) => e.key === 'local-b').length, 1, 'the insert was applied once');
  assert.equal(server.log.filter((e) => e.key === 'edited-b').length, 2, 'the seed and one applied update');
  assert.equal(server.rows.get('tbl_orders')?.has('only-b'), true, 'cleanup deleted nothing on the server');
  const a = (await d.call<Scopes>('inspectScopes')).scopes;
  assert.deepEqual(a.map((s) => [s.scopeId, s.rebuildRequired, s.cursor !== null]), [['a', false, true]]);
  assert.equal(a[0]?.checksum, server.scopeChecksum('a').digest);
  assert.deepEqual(
    (await d.call<Provenance>('inspectProvenance')).provenance.map((p) => p.recordId).sort(),
    ['both', 'only-a'],
  );
  await d.close();
});

test('killed inside scope cleanup during a pull page: restart removes the scope once and keeps the row a retained rejection protects', async (t) => {
  const server = await routedServer().start();
  t.after(() => server.stop());
  t.after(killLeftovers);
  const clientId = 'cleanup-kill-pull';
  const cfg = { dataDir: scratchDir('synchro-cleanup-'), serverUrl: server.url, token: 't', clientId, appVersion: '1.0.0' };
  server.putRow('tbl_orders', order('only-a', 'a'));
  server.putRow('tbl_orders', order('only-b', 'b'));
  server.putRow('tbl_orders', order('refused-b', 'b'));
  let d = await opened(cfg);
  assert.equal((await d.call('syncNow')).completion, 'idle');
  // A local edit the server refuses for good: the retained rejection keeps protecting the row.
  server.reject = (m) => ((m.pk as { fld_orders_id?: string }).fld_orders_id === 'refused-b' ? 'policy_rejected' : undefined);
  await d.call('execute', { sql: "UPDATE orders SET qty = 9 WHERE id = 'refused-b'" });
  assert.equal((await d.call('syncNow')).completion, 'idle');
  server.reject = undefined;
  const intent = (await d.call<{ mutations: Mutation[] }>('inspectMutations')).mutations;
  assert.deepEqual(intent.map((m) => m.status), ['server_rejected']);
  const digest = (await d.call<{ digest: string }>('snapshotDigest', { excludeBackoff: true })).digest;

  // The client stays connected; the removal arrives on the next pull page and the process dies applying it.
  server.assign(clientId, ['a']);
  await d.call('armCrash', { point: 'inside_scope_cleanup' });
  const pulls = server.count('/sync/pull');
  assert.deepEqual(await d.raw('syncNow'), { killed: 'SIGKILL' });
  assert.equal(server.count('/sync/pull'), pulls + 1, 'the kill came while applying a pull page');
  assert.equal(server.count('/sync/connect'), 1, 'no reconnect happened before the kill');

  d = await opened(cfg);
  assert.equal((await d.call<{ digest: string }>('snapshotDigest', { excludeBackoff: true })).digest, digest, 'the page committed nothing');
  assert.equal((await d.call('syncNow')).completion, 'idle');
  const scopes = (await d.call<Scopes>('inspectScopes')).scopes;
  assert.deepEqual(scopes.map((s) => [s.scopeId, s.checksum]), [['a', server.scopeChecksum('a').digest]]);
  assert.deepEqual((await d.call<Provenance>('inspectProvenance')).provenance.map((p) => [p.scopeId, p.recordId]), [['a', 'only-a']]);
  assert.deepEqual(await ids(d, 'orders'), ['only-a', 'refused-b']);
  assert.deepEqual((await d.call<{ rows: Row[] }>('query', { sql: "SELECT qty FROM orders WHERE id = 'refused-b'" })).rows, [{ qty: 9 }]);
  const final = (await d.call<{ mutations: Mutation[] }>('inspectMutations')).mutations;
  assert.deepEqual(final.map((m) => [m.id, m.status]), intent.map((m) => [m.id, m.status]), 'cleanup created no mutation and changed none');
  assert.equal((await d.call<{ rejections: unknown[] }>('inspectRejections')).rejections.length, 1);
  await d.close();
});
