import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SynchroClient } from '../../reference/client/client.ts';
import { FakeServer } from './fake-server.ts';
import { instantClock, manifest, openClient, paths } from './fixtures.ts';

let server: FakeServer;
before(async () => {
  server = await new FakeServer(manifest()).start();
});
after(() => server.stop());

let n = 0;
function fresh(extra: Parameters<typeof openClient>[2] = {}): SynchroClient {
  return openClient(server, `sync-${++n}`, extra);
}

/** Every durable sync table except the backoff record and the status history. */
function snapshot(c: SynchroClient, withBackoff = false): string {
  const tables = (c.ctx.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '\\_synchro\\_%' ESCAPE '\\' ORDER BY name`).pluck().all() as string[]).filter(
    (t) => t !== '_synchro_status_log' && t !== '_synchro_client_state' && (withBackoff || t !== '_synchro_backoff') && t !== 'sqlite_sequence',
  );
  return JSON.stringify(tables.map((t) => [t, c.ctx.db.prepare(`SELECT * FROM ${t}`).all()]), (_k, v) => (Buffer.isBuffer(v) ? v.toString('hex') : v));
}

test('offline writes are pushed before the first pull, and the same run rebuilds new scopes', async () => {
  const c = fresh({ bundledManifest: manifest() });
  c.execute("INSERT INTO orders(id) VALUES ('first')");
  const start = server.requests.length;
  assert.equal((await c.syncNow()).completion, 'idle');
  assert.deepEqual(paths(server).slice(start), ['connect', 'push', 'rebuild', 'pull']);
  assert.equal(c.query("SELECT id FROM orders WHERE id = 'first'").length, 1);
  c.close();
});

test('a pull with no known scope sends an empty scopes map and rebuilds the assigned scope in the same run', async () => {
  const c = fresh();
  const id = `sync-${n}`;
  server.defaultScopes = [];
  assert.equal((await c.syncNow()).completion, 'idle');
  server.defaultScopes = ['all'];
  server.putRow('tbl_notes', { fld_notes_id: 42, fld_notes_body: 'assigned later' });
  server.assign(id, ['all']);
  const start = server.requests.length;
  assert.equal((await c.syncNow()).completion, 'idle');
  const firstPull = JSON.parse(server.requests[start]?.body.toString() ?? '{}') as { scopes: object };
  assert.deepEqual(firstPull.scopes, {});
  assert.deepEqual(paths(server).slice(start), ['pull', 'rebuild', 'pull']);
  assert.deepEqual(c.query('SELECT body FROM notes WHERE id = 42'), [{ body: 'assigned later' }]);
  c.close();
});

test('429 on push: the same bytes are retried after at least Retry-After, through backoff', async () => {
  const clock = instantClock();
  const c = fresh({ clock });
  await c.syncNow();
  c.execute("INSERT INTO orders(id) VALUES ('r1')");
  server.script('/sync/push', { status: 429, body: { error: { code: 'retry_later', message: 'slow down', retryable: true } }, retryAfter: '7' });
  const start = server.requests.length;
  const blocked = await c.syncNow();
  assert.equal(blocked.completion, 'blocked');
  assert.equal(blocked.status.state, 'backoff');
  assert.equal(blocked.status.operation, 'pushing');
  const backoff = c.inspectBackoff();
  assert.equal(backoff?.retry_classification, 'http_429');
  assert.equal((await c.syncNow()).completion, 'idle');
  assert.ok((clock.slept[0] ?? 0) >= 7000, `waited ${clock.slept[0]}`);
  const pushes = server.requests.slice(start).filter((r) => r.path === '/sync/push');
  assert.equal(pushes.length, 2);
  assert.deepEqual(pushes[0]?.body, pushes[1]?.body);
  const log = c.life.log.join(' ');
  assert.match(log, /pushing backoff pushing/);
  assert.equal(c.inspectBackoff(), null);
  c.close();
});

test('a lost push response is answered from the server store and applied once', async () => {
  const c = fresh();
  await c.syncNow();
  c.execute("INSERT INTO orders(id, qty) VALUES ('lost', 1)");
  server.script('/sync/push', 'drop');
  assert.equal((await c.syncNow()).completion, 'blocked');
  assert.equal(c.inspectMutations()[0]?.status, 'sealed');
  assert.equal((await c.syncNow()).completion, 'idle');
  const pushes = server.requests.filter((r) => r.path === '/sync/push').slice(-2);
  assert.deepEqual(pushes[0]?.body, pushes[1]?.body);
  assert.deepEqual(c.inspectMutations().map((m) => m.status), ['accepted']);
  assert.equal(server.log.filter((e) => e.key === 'lost').length, 1);
  c.close();
});

test('a transport error changes nothing but the backoff record', async () => {
  const c = fresh();
  await c.syncNow();
  c.execute("INSERT INTO orders(id) VALUES ('t1')");
  await c.syncNow();
  server.putRow('tbl_orders', { fld_orders_id: 'remote', fld_orders_title: 'r', fld_orders_qty: null, fld_orders_paid: null, fld_orders_updated_at: null, fld_orders_deleted_at: null });
  const before = snapshot(c);
  server.script('/sync/pull', { status: 503, body: { error: { code: 'capture_pending', message: 'wait', retryable: true } }, retryAfter: '1' });
  assert.equal((await c.syncNow()).completion, 'blocked');
  assert.equal(snapshot(c), before);
  assert.notEqual(snapshot(c, true), snapshot(fresh(), true));
  assert.equal((await c.syncNow()).completion, 'idle');
  assert.equal(c.query("SELECT id FROM orders WHERE id = 'remote'").length, 1);
  c.close();
});

for (const [name, corrupt] of [
  ['malformed JSON', () => ({ status: 200, body: null, raw: Buffer.from('{"changes": [') })],
  ['schema-invalid page', () => ({ status: 200, body: { changes: [], has_more: false } })],
  ['wrong row checksum', 'row'],
  ['checksum keys not matching the active scopes', 'keys'],
] as const) {
  test(`a ${name} fails the page with a typed error and changes nothing`, async () => {
    const c = fresh();
    await c.syncNow();
    server.putRow('tbl_notes', { fld_notes_id: 900 + n, fld_notes_body: 'x' });
    const before = snapshot(c, true);
    const rowsBefore = c.query('SELECT * FROM notes');
    server.script('/sync/pull', (_req, normal) => {
      if (typeof corrupt === 'function') return corrupt();
      const reply = normal();
      const body = reply.body as { changes: { row_checksum: { digest: string } }[]; checksums: Record<string, unknown> };
      if (corrupt === 'row') {
        const first = body.changes[0];
        if (first) first.row_checksum.digest = '0'.repeat(64);
      } else body.checksums = { other: body.checksums.all };
      return reply;
    });
    const result = await c.syncNow();
    assert.equal(result.completion, 'error');
    const failure = result.status.failure as { code: string; operation: string; retryable: boolean };
    assert.equal(failure.operation, 'pulling');
    assert.equal(failure.retryable, false);
    assert.match(failure.code, /invalid_response|row_checksum_mismatch|invalid_pull_page/);
    const afterSnap = snapshot(c, true);
    assert.equal(afterSnap, before);
    assert.deepEqual(c.query('SELECT * FROM notes'), rowsBefore);
    // error is sticky: no network work until retryAfterError
    const count = server.requests.length;
    assert.equal((await c.syncNow()).completion, 'error');
    assert.equal(server.requests.length, count);
    const again = await c.retryAfterError();
    assert.equal(again.completion, 'idle');
    assert.match(c.life.log.join(' '), /error local_ready connecting/);
    c.close();
  });
}

test('a wrong terminal scope checksum installs nothing and forces a rebuild with a new rebuild ID', async () => {
  const c = fresh();
  await c.syncNow();
  server.putRow('tbl_notes', { fld_notes_id: 77, fld_notes_body: 'y' });
  const rebuildsBefore = server.count('/sync/rebuild');
  server.script('/sync/pull', (_req, normal) => {
    const reply = normal();
    const body = reply.body as { checksums: Record<string, { digest: string }> };
    (body.checksums.all as { digest: string }).digest = 'a'.repeat(64);
    return reply;
  });
  assert.equal((await c.syncNow()).completion, 'idle');
  assert.equal(server.count('/sync/rebuild'), rebuildsBefore + 1);
  const scope = c.inspectScopes().scopes[0];
  assert.equal(scope?.rebuildRequired, false);
  assert.equal(scope?.checksum, server.scopeChecksum('all').digest);
  c.close();
});

test('a multi-page rebuild installs cursor and checksum only at finality and prunes stale rows', async () => {
  const c = fresh({ rebuildLimit: 2 });
  for (let i = 0; i < 5; i++) server.putRow('tbl_notes', { fld_notes_id: 3000 + i + n * 10, fld_notes_body: `p${i}` });
  let sawPartial = false;
  server.script('/sync/rebuild', (_req, normal) => normal());
  server.script('/sync/rebuild', (_req, normal) => {
    const s = c.inspectScopes().scopes[0];
    sawPartial = s?.cursor === null && s?.checksum === null && c.inspectRebuilds().length === 1;
    return normal();
  });
  assert.equal((await c.syncNow()).completion, 'idle');
  assert.ok(sawPartial, 'no cursor or checksum while pages remain');
  const s = c.inspectScopes().scopes[0];
  assert.equal(s?.checksum, server.scopeChecksum('all').digest);
  assert.equal(c.inspectRebuilds().length, 0);
  c.close();
});

test('scope removal keeps rows justified elsewhere or protected by local intent, without creating mutations', async () => {
  server.scopesOf = (table, row) => (table === 'tbl_orders' ? String(row.fld_orders_title ?? '').split(',').filter(Boolean) : ['A']);
  server.defaultScopes = ['A', 'B'];
  const c = fresh();
  const id = `sync-${n}`;
  const blank = { fld_orders_qty: null, fld_orders_paid: null, fld_orders_updated_at: null, fld_orders_deleted_at: null };
  server.putRow('tbl_orders', { fld_orders_id: 'both', fld_orders_title: 'A,B', ...blank });
  server.putRow('tbl_orders', { fld_orders_id: 'onlyA', fld_orders_title: 'A', ...blank });
  server.putRow('tbl_orders', { fld_orders_id: 'editedA', fld_orders_title: 'A', ...blank });
  try {
    assert.equal((await c.syncNow()).completion, 'idle');
    assert.equal(c.inspectProvenance().filter((p) => p.recordId === 'both').length, 2);
    c.execute("UPDATE orders SET qty = 5 WHERE id = 'editedA'");
    // A terminal rejection without a server row keeps protecting the local row.
    server.reject = (m) => ((m.pk as { fld_orders_id?: string }).fld_orders_id === 'editedA' ? 'policy_rejected' : undefined);
    server.assign(id, ['B']);
    const mutations = c.inspectMutations().length;
    assert.equal((await c.syncNow()).completion, 'idle');
    assert.deepEqual(c.inspectProvenance().map((p) => [p.scopeId, p.recordId]), [['B', 'both']]);
    assert.equal(c.query("SELECT id FROM orders WHERE id = 'onlyA'").length, 0);
    assert.deepEqual(c.query("SELECT qty FROM orders WHERE id = 'editedA'"), [{ qty: 5 }]);
    assert.equal(c.inspectMutations().length, mutations, 'cleanup created no mutation');
    assert.deepEqual(c.inspectScopes().scopes.map((s) => s.scopeId), ['B']);
  } finally {
    server.scopesOf = () => ['all'];
    server.defaultScopes = ['all'];
    server.reject = undefined;
    c.close();
  }
});

test('client_generation_expired moves unchanged mutations to a successor batch; the old one is never resent', async () => {
  const c = fresh();
  await c.syncNow();
  c.execute("INSERT INTO orders(id) VALUES ('gen')");
  server.expireGeneration(`sync-${n}`);
  const start = server.requests.length;
  assert.equal((await c.syncNow()).completion, 'idle');
  const pushes = server.requests.slice(start).filter((r) => r.path === '/sync/push').map((r) => JSON.parse(r.body.toString()) as { batch_id: string; mutations: { mutation_id: string }[] });
  assert.equal(pushes.length, 2);
  assert.notEqual(pushes[0]?.batch_id, pushes[1]?.batch_id);
  assert.deepEqual(pushes[0]?.mutations.map((m) => m.mutation_id), pushes[1]?.mutations.map((m) => m.mutation_id));
  const batches = c.inspectBatches();
  assert.deepEqual(batches.map((b) => b.state), ['superseded', 'completed']);
  assert.equal(Buffer.from(batches[0]?.requestBytes ?? '', 'base64').toString(), server.requests.filter((r) => r.path === '/sync/push').at(-2)?.body.toString());
  assert.deepEqual(paths(server).slice(start), ['push', 'connect', 'push', 'pull']);
  c.close();
});

test('syncNow while stopped sends nothing; start reopens through local_ready', async () => {
  const c = fresh();
  await c.syncNow();
  await c.stop();
  c.execute("INSERT INTO orders(id) VALUES ('while-stopped')");
  const count = server.requests.length;
  const r = await c.syncNow();
  assert.equal(r.status.state, 'stopped');
  assert.equal(server.requests.length, count);
  c.start();
  assert.equal((await c.syncNow()).completion, 'idle');
  assert.match(c.life.log.join(' '), /stopped local_ready connecting/);
  assert.equal(c.inspectMutations()[0]?.status, 'accepted');
  c.close();
});

test('start on a running client drives its own runs and retries a 503 after Retry-After without another call', async () => {
  const c = fresh();
  await c.syncNow();
  c.execute("INSERT INTO orders(id) VALUES ('self-driven')");
  server.script('/sync/push', { status: 503, body: { error: { code: 'temporary_unavailable', message: 'later', retryable: true } }, retryAfter: '1' });
  const before = server.count('/sync/push');
  c.start();
  const accepted = () => c.inspectMutations().find((m) => m.recordId === 'self-driven')?.status === 'accepted';
  const deadline = Date.now() + 10_000;
  while (!accepted() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(accepted(), 'the insert was pushed and accepted without a second syncNow');
  assert.equal(server.count('/sync/push') - before, 2, 'one refused push and its retry');
  assert.match(c.life.log.join(' '), /pushing backoff pushing/);
  await c.stop();
  c.close();
});

test('two clients converge through the server under writes and conflicts', async () => {
  const a = fresh();
  const b = fresh();
  await a.syncNow();
  await b.syncNow();
  a.execute("INSERT INTO orders(id, title, qty) VALUES ('shared', 'from a', 1)");
  await a.syncNow();
  await b.syncNow();
  b.execute("UPDATE orders SET qty = 2 WHERE id = 'shared'");
  a.execute("UPDATE orders SET title = 'a again' WHERE id = 'shared'");
  await b.syncNow();
  await a.syncNow(); // conflicts, gets b's row
  await b.syncNow();
  a.execute("INSERT INTO notes(id, body) VALUES (5000, 'note')");
  b.execute("INSERT INTO notes(id, body) VALUES (5001, 'note b')");
  await a.syncNow();
  await b.syncNow();
  await a.syncNow();
  const view = (c: SynchroClient) => JSON.stringify([c.query('SELECT * FROM orders ORDER BY id'), c.query('SELECT * FROM notes ORDER BY id')]);
  assert.equal(view(a), view(b));
  assert.equal(a.inspectScopes().scopes[0]?.checksum, b.inspectScopes().scopes[0]?.checksum);
  assert.equal(a.inspectScopes().scopes[0]?.checksum, server.scopeChecksum('all').digest);
  a.close();
  b.close();
});

test('every state pair in the status logs is legal', async () => {
  const { isLegalTransition } = await import('../../reference/client/state.ts');
  const c = fresh();
  await c.syncNow();
  for (let i = 1; i < c.life.log.length; i++) assert.ok(isLegalTransition(c.life.log[i - 1], c.life.log[i]));
  const stored = c.ctx.db.prepare('SELECT from_state, to_state FROM _synchro_status_log').all() as { from_state: string; to_state: string }[];
  for (const s of stored) assert.ok(isLegalTransition(s.from_state, s.to_state), `${s.from_state} -> ${s.to_state}`);
  c.close();
});

test('stop during a run lets the step in flight finish, schedules nothing more, and keeps everything durable', async () => {
  const c = fresh();
  await c.syncNow();
  c.execute("INSERT INTO orders(id) VALUES ('stop-mid')");
  let stopped: Promise<unknown> | undefined;
  server.script('/sync/push', (_req, normal) => {
    stopped = c.stop();
    return normal();
  });
  const pulls = server.count('/sync/pull');
  await c.syncNow();
  await stopped;
  assert.equal(c.life.state, 'stopped');
  assert.equal(server.count('/sync/pull'), pulls, 'no pull was scheduled after stop');
  assert.equal(c.inspectMutations()[0]?.status, 'accepted', 'the push in flight was reconciled');
  c.close();
});

test('resetSchemaAndStart leaves error through local_ready, sends schema_reset and rebuilds the affected scopes, keeping the queue', async () => {
  const c = fresh();
  await c.syncNow();
  c.execute("INSERT INTO orders(id) VALUES ('kept-through-reset')");
  server.script('/sync/push', { status: 409, body: { error: { code: 'client_retired', message: 'retired', retryable: false } } });
  assert.equal((await c.syncNow()).completion, 'error');
  const rebuilds = server.count('/sync/rebuild');
  const start = server.requests.length;
  const r = await c.resetSchemaAndStart();
  assert.equal(r.completion, 'idle');
  const connectReq = JSON.parse(server.requests[start]?.body.toString() ?? '{}') as { schema_reset?: boolean };
  assert.equal(connectReq.schema_reset, true);
  assert.equal(server.count('/sync/rebuild'), rebuilds + 1);
  assert.match(c.life.log.join(' '), /error local_ready connecting schema_applying ready/);
  assert.equal(c.inspectMutations()[0]?.status, 'accepted');
  c.close();
});

test('two clients on file databases converge under conflicts, lost responses and restarts', async () => {
  const { tempDb } = await import('./fixtures.ts');
  const pa = tempDb();
  const pb = tempDb();
  const ida = `conv-a-${++n}`;
  const idb = `conv-b-${n}`;
  let a = openClient(server, ida, { path: pa });
  let b = openClient(server, idb, { path: pb });
  const restart = () => {
    a.close();
    b.close();
    a = openClient(server, ida, { path: pa });
    b = openClient(server, idb, { path: pb });
  };
  await a.syncNow();
  await b.syncNow();
  a.execute("INSERT INTO orders(id, title, qty) VALUES ('cv1', 'a', 1)");
  b.execute("INSERT INTO orders(id, title, qty) VALUES ('cv2', 'b', 2)");
  server.script('/sync/push', 'drop');
  await a.syncNow();
  restart();
  await a.syncNow();
  await b.syncNow();
  await a.syncNow();
  a.execute("UPDATE orders SET qty = 10 WHERE id = 'cv2'");
  b.execute("UPDATE orders SET qty = 20 WHERE id = 'cv2'");
  b.execute("DELETE FROM orders WHERE id = 'cv1'");
  await b.syncNow();
  restart();
  await a.syncNow(); // a's update conflicts with b's
  await b.syncNow();
  await a.syncNow();
  const view = (c: SynchroClient) => JSON.stringify(c.query("SELECT id, title, qty, paid, deleted_at IS NOT NULL AS gone FROM orders WHERE id IN ('cv1', 'cv2') ORDER BY id"));
  assert.equal(view(a), view(b));
  assert.deepEqual(JSON.parse(view(a)), [
    { id: 'cv1', title: 'a', qty: 1, paid: null, gone: 1 },
    { id: 'cv2', title: 'b', qty: 20, paid: null, gone: 0 },
  ]);
  assert.equal(a.inspectRejections()[0]?.code, 'version_conflict');
  assert.equal(a.inspectScopes().scopes[0]?.checksum, server.scopeChecksum('all').digest);
  assert.equal(b.inspectScopes().scopes[0]?.checksum, server.scopeChecksum('all').digest);
  a.close();
  b.close();
});

test('a rebuild that repeats a record, on one page or across pages, installs no cursor and no checksum', async () => {
  for (const acrossPages of [false, true]) {
    const c = fresh({ rebuildLimit: acrossPages ? 1 : 100 });
    server.putRow('tbl_notes', { fld_notes_id: 5000 + n, fld_notes_body: 'repeated' });
    let first: unknown;
    server.script('/sync/rebuild', (_req, normal) => {
      const reply = normal();
      const body = reply.body as { records: unknown[] };
      first = body.records[0];
      if (!acrossPages) body.records.push(structuredClone(body.records[0]));
      return reply;
    });
    if (acrossPages) {
      server.script('/sync/rebuild', (_req, normal) => {
        const reply = normal();
        (reply.body as { records: unknown[] }).records.unshift(structuredClone(first));
        return reply;
      });
    }
    assert.equal((await c.syncNow()).completion, 'error');
    const scope = c.inspectScopes().scopes[0];
    assert.equal(scope?.cursor, null, `no cursor installed (${acrossPages ? 'across pages' : 'one page'})`);
    assert.equal(scope?.checksum, null);
    assert.equal(scope?.rebuildRequired, true);
    c.close();
  }
});
