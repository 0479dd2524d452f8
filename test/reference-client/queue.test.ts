import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SynchroClient } from '../../reference/client/client.ts';
import { AtomicGroupInvalid } from '../../reference/client/errors.ts';
import { getMeta } from '../../reference/client/local/metadata.ts';
import { checksumObject, digestRow, readTableShape } from '../../harness/codec/index.ts';
import type { PushResponse, TableSchema } from '../../harness/wire/generated.ts';
import { reconcilePush } from '../../reference/client/queue/reconcile.ts';
import { sealNextBatch } from '../../reference/client/queue/seal.ts';
import { connect } from '../../reference/client/sync/connect.ts';
import { FakeServer } from './fake-server.ts';
import { manifest, openClient, tempDb } from './fixtures.ts';

let server: FakeServer;
before(async () => {
  server = await new FakeServer(manifest()).start();
});
after(() => server.stop());

let n = 0;
async function connected(extra: Parameters<typeof openClient>[2] = {}): Promise<SynchroClient> {
  const c = openClient(server, `queue-${++n}`, extra);
  assert.equal((await c.syncNow()).completion, 'idle');
  return c;
}

function sealed(c: SynchroClient) {
  const batch = sealNextBatch(c.ctx);
  assert.ok(batch, 'a batch was sealed');
  return JSON.parse(batch.request_bytes.toString('utf8')) as { mutations: Record<string, unknown>[]; atomic?: boolean };
}

const byStatus = (c: SynchroClient, status: string) => c.inspectMutations().filter((m) => m.status === status);

test('insert followed by updates is sent as one insert with the final values', async () => {
  const c = await connected();
  c.execute("INSERT INTO orders(id, title, qty) VALUES ('n1', 'a', 1)");
  c.execute("UPDATE orders SET title = 'b' WHERE id = 'n1'");
  c.execute("UPDATE orders SET qty = 3 WHERE id = 'n1'");
  const req = sealed(c);
  assert.equal(req.mutations.length, 1);
  assert.equal(req.mutations[0]?.op, 'insert');
  assert.deepEqual(req.mutations[0]?.columns, { fld_orders_paid: null, fld_orders_qty: 3, fld_orders_title: 'b' });
  const superseded = byStatus(c, 'superseded_before_send');
  assert.equal(superseded.length, 3);
  assert.ok(superseded.every((m) => m.normalizedMutationId === req.mutations[0]?.mutation_id));
  assert.equal((await c.syncNow()).completion, 'idle');
  assert.equal(server.rows.get('tbl_orders')?.get('n1')?.row.fld_orders_qty, 3);
  c.close();
});

test('insert followed by delete before sending never reaches the server', async () => {
  const c = await connected();
  c.execute('INSERT INTO notes(id, body) VALUES (7, \'gone\')');
  c.execute("UPDATE notes SET body = 'still gone' WHERE id = 7");
  c.execute('DELETE FROM notes WHERE id = 7');
  const pushesBefore = server.count('/sync/push');
  assert.equal((await c.syncNow()).completion, 'idle');
  assert.equal(server.count('/sync/push'), pushesBefore);
  assert.deepEqual(
    c.inspectMutations().map((m) => m.status),
    ['cancelled_before_send', 'cancelled_before_send', 'cancelled_before_send'],
  );
  assert.equal(server.rows.get('tbl_notes')?.has('7'), false);
  c.close();
});

test('update chains keep the original base; update then delete becomes one delete', async () => {
  const c = await connected();
  c.execute("INSERT INTO orders(id, title, qty) VALUES ('u1', 'a', 1)");
  c.execute("INSERT INTO orders(id, title, qty) VALUES ('u2', 'a', 1)");
  await c.syncNow();
  const base1 = server.rows.get('tbl_orders')?.get('u1')?.version;
  const base2 = server.rows.get('tbl_orders')?.get('u2')?.version;
  c.execute("UPDATE orders SET title = 'b' WHERE id = 'u1'");
  c.execute("UPDATE orders SET qty = 2 WHERE id = 'u1'");
  c.execute("UPDATE orders SET title = 'c' WHERE id = 'u2'");
  c.execute("DELETE FROM orders WHERE id = 'u2'");
  const req = sealed(c);
  assert.deepEqual(
    req.mutations.map((m) => [m.op, m.base_version, m.columns]),
    [
      ['update', base1, { fld_orders_qty: 2, fld_orders_title: 'b' }],
      ['delete', base2, undefined],
    ],
  );
  c.close();
});

test('a write after an unsent delete is blocked and never sent', async () => {
  const c = await connected();
  c.execute("INSERT INTO orders(id, title) VALUES ('d1', 'a')");
  await c.syncNow();
  c.execute("DELETE FROM orders WHERE id = 'd1'");
  c.execute("UPDATE orders SET title = 'zombie' WHERE id = 'd1'");
  const [del, upd] = c.inspectMutations().slice(-2);
  assert.equal(upd?.status, 'blocked_by_predecessor');
  assert.equal(upd?.dependsOnMutationId, del?.mutationId);
  const req = sealed(c);
  assert.deepEqual(req.mutations.map((m) => m.op), ['delete']);
  c.close();
});

test('a write captured while its predecessor is in flight waits, then is sent with the returned version', async () => {
  const c = await connected();
  c.execute("INSERT INTO orders(id, title) VALUES ('f1', 'a')");
  let capturedId: string | undefined;
  server.script('/sync/push', (_req, normal) => {
    const reply = normal();
    // The application writes while the push is on the wire.
    c.execute("UPDATE orders SET title = 'b' WHERE id = 'f1'");
    const m = c.inspectMutations().at(-1);
    capturedId = m?.mutationId;
    assert.equal(m?.baseVersion, null);
    assert.equal(m?.status, 'pending');
    return reply;
  });
  assert.equal((await c.syncNow()).completion, 'idle');
  const last = c.inspectMutations().find((m) => m.mutationId === capturedId);
  assert.equal(last?.status, 'accepted');
  const insertVersion = JSON.parse(String(c.inspectMutations()[0] && c.ctx.db.prepare('SELECT accepted_outcome_json FROM _synchro_pending_changes WHERE local_order = 1').pluck().get())).server_version;
  assert.equal(last?.baseVersion, insertVersion);
  assert.equal(server.rows.get('tbl_orders')?.get('f1')?.row.fld_orders_title, 'b');
  c.close();
});

test('a conflict rejects the sealed write, blocks its dependent and keeps the local intent visible', async () => {
  const c = await connected();
  c.execute("INSERT INTO orders(id, title, qty) VALUES ('c1', 'a', 1)");
  await c.syncNow();
  const stored = server.rows.get('tbl_orders')?.get('c1');
  assert.ok(stored);
  const newVersion = server.putRow('tbl_orders', { ...stored.row, fld_orders_paid: true });
  c.execute("UPDATE orders SET title = 'A' WHERE id = 'c1'");
  sealed(c);
  c.execute("UPDATE orders SET qty = 9 WHERE id = 'c1'");
  assert.equal((await c.syncNow()).completion, 'idle');
  const [, a, b] = c.inspectMutations();
  assert.equal(a?.status, 'server_rejected');
  assert.equal(b?.status, 'blocked_by_predecessor');
  const rejection = c.inspectRejections().find((r) => r.mutationId === a?.mutationId);
  assert.equal(rejection?.code, 'version_conflict');
  assert.equal(rejection?.serverVersion, newVersion);
  assert.deepEqual(c.query("SELECT title, qty, paid FROM orders WHERE id = 'c1'"), [{ title: 'a', qty: 9, paid: 1 }]);
  assert.equal(c.inspectRowVersions().find((v) => v.recordId === 'c1')?.serverVersion, newVersion);
  assert.equal(server.rows.get('tbl_orders')?.get('c1')?.row.fld_orders_qty, 1, 'the blocked write was never sent');
  c.close();
});

test('an oversized mutation is held back, its dependents blocked, the rest accepted', async () => {
  const c = await connected();
  const big = 'x'.repeat(66_000);
  c.execute("INSERT INTO orders(id, title) VALUES ('small1', 's')");
  c.execute('INSERT INTO orders(id, title) VALUES (?, ?)', ['big', big]);
  c.execute("UPDATE orders SET qty = 1 WHERE id = 'big'");
  c.execute("INSERT INTO orders(id, title) VALUES ('small2', 's')");
  // Keep the chain apart: seal first so the update is a dependent, not folded.
  assert.equal((await c.syncNow()).completion, 'idle');
  const statuses = Object.fromEntries(c.inspectMutations().filter((m) => m.sourceKind !== 'captured' || m.status !== 'superseded_before_send').map((m) => [`${m.recordId}:${m.operation}`, m.status]));
  assert.equal(statuses['big:insert'], 'exceeds_push_limit');
  assert.equal(statuses['small1:insert'], 'accepted');
  assert.equal(statuses['small2:insert'], 'accepted');
  assert.equal(server.rows.get('tbl_orders')?.has('big'), false);
  c.close();
});

test('large inserts are split into batches that each stay within the request limit', async () => {
  const c = await connected();
  for (let i = 0; i < 20; i++) c.execute('INSERT INTO orders(id, title) VALUES (?, ?)', [`L${String(i).padStart(2, '0')}`, 'y'.repeat(60_000)]);
  const before = server.count('/sync/push');
  assert.equal((await c.syncNow()).completion, 'idle');
  const pushes = server.requests.filter((r) => r.path === '/sync/push').slice(before);
  assert.ok(pushes.length >= 2);
  for (const p of pushes) assert.ok(p.body.length <= 1_048_576);
  const order = pushes.flatMap((p) => (JSON.parse(p.body.toString()) as { mutations: { pk: { fld_orders_id: string } }[] }).mutations.map((m) => m.pk.fld_orders_id));
  assert.deepEqual(order, [...order].sort());
  assert.equal(order.length, 20);
  c.close();
});

test('atomic groups share one ID, leave no meta key, and are sent alone with atomic: true', async () => {
  const c = await connected({ pushBatchSize: 1 });
  c.execute("INSERT INTO orders(id) VALUES ('g-u1')");
  c.execute("INSERT INTO orders(id) VALUES ('g-u2')");
  c.atomicWrite((tx) => {
    tx.execute("INSERT INTO orders(id) VALUES ('g-1')");
    tx.execute("INSERT INTO orders(id) VALUES ('g-2')");
    tx.execute("INSERT INTO orders(id) VALUES ('g-3')");
  });
  c.execute("INSERT INTO orders(id) VALUES ('g-u3')");
  assert.equal(getMeta(c.ctx.db, 'atomic_group_id'), undefined);
  const groups = c.inspectMutations().map((m) => m.atomicGroupId);
  assert.equal(groups[0], null);
  assert.ok(groups[2] !== null && groups[2] === groups[3] && groups[3] === groups[4]);
  assert.match(String(groups[2]), /^[0-9a-f-]{36}$/);
  assert.equal(groups[5], null);
  const before = server.count('/sync/push');
  assert.equal((await c.syncNow()).completion, 'idle');
  const batches = server.requests
    .filter((r) => r.path === '/sync/push')
    .slice(before)
    .map((r) => JSON.parse(r.body.toString()) as { atomic?: boolean; mutations: { pk: { fld_orders_id: string } }[] })
    .map((b) => [b.atomic === true, b.mutations.map((m) => m.pk.fld_orders_id)]);
  assert.deepEqual(batches, [
    [false, ['g-u1']],
    [false, ['g-u2']],
    [true, ['g-1', 'g-2', 'g-3']],
    [false, ['g-u3']],
  ]);
  c.close();
});

test('atomic group commit rules fail with typed reasons and roll everything back', async () => {
  const c = await connected();
  c.execute("INSERT INTO orders(id) VALUES ('base')");
  await c.syncNow();
  const before = c.inspectMutations().length;
  const reason = (fn: () => void) => {
    try {
      c.atomicWrite(fn);
    } catch (e) {
      if (e instanceof AtomicGroupInvalid) return e.reason;
      throw e;
    }
    return 'committed';
  };
  assert.equal(
    reason(() => {
      c.execute("DELETE FROM orders WHERE id = 'base'");
      c.execute("UPDATE orders SET title = 'x' WHERE id = 'base'");
    }),
    'deleteFollowedByWrite',
  );
  assert.equal(
    reason(() => {
      for (let i = 0; i < 1001; i++) c.execute('INSERT INTO notes(id) VALUES (?)', [10_000 + i]);
    }),
    'tooManyMutations',
  );
  assert.equal(
    reason(() => c.execute('INSERT INTO orders(id, title) VALUES (?, ?)', ['huge', 'z'.repeat(70_000)])),
    'mutationTooLarge',
  );
  assert.equal(
    reason(() => {
      for (let i = 0; i < 20; i++) c.execute('INSERT INTO orders(id, title) VALUES (?, ?)', [`r${i}`, 'w'.repeat(60_000)]);
    }),
    'requestTooLarge',
  );
  assert.throws(() =>
    c.atomicWrite(() => {
      c.execute("INSERT INTO orders(id) VALUES ('thrown')");
      throw new Error('application failure');
    }),
  );
  assert.equal(c.inspectMutations().length, before);
  assert.equal(c.query("SELECT id FROM orders WHERE id IN ('thrown', 'huge', 'r0')").length, 0);
  assert.equal(c.query("SELECT deleted_at FROM orders WHERE id = 'base'").length, 1);
  assert.equal(getMeta(c.ctx.db, 'atomic_group_id'), undefined);
  assert.equal(
    reason(() => {
      c.execute('INSERT INTO notes(id) VALUES (500)');
      c.execute('DELETE FROM notes WHERE id = 500');
    }),
    'committed',
  );
  c.close();
});

test('a conflict inside an atomic group rejects the other members as atomic_batch_rejected', async () => {
  const c = await connected();
  c.execute("INSERT INTO orders(id, title) VALUES ('ag1', 'a')");
  c.execute("INSERT INTO orders(id, title) VALUES ('ag2', 'a')");
  await c.syncNow();
  const s2 = server.rows.get('tbl_orders')?.get('ag2');
  assert.ok(s2);
  server.putRow('tbl_orders', { ...s2.row, fld_orders_title: 'remote' });
  c.atomicWrite(() => {
    c.execute("UPDATE orders SET title = 'one' WHERE id = 'ag1'");
    c.execute("UPDATE orders SET title = 'two' WHERE id = 'ag2'");
  });
  assert.equal((await c.syncNow()).completion, 'idle');
  const codes = Object.fromEntries(c.inspectRejections().map((r) => [r.recordId, r.code]));
  assert.deepEqual(codes, { ag1: 'atomic_batch_rejected', ag2: 'version_conflict' });
  assert.deepEqual(c.query("SELECT id, title FROM orders WHERE id IN ('ag1', 'ag2') ORDER BY id"), [
    { id: 'ag1', title: 'one' },
    { id: 'ag2', title: 'remote' },
  ]);
  assert.equal(server.rows.get('tbl_orders')?.get('ag1')?.row.fld_orders_title, 'a');
  c.close();
});

test('a group member whose predecessor is rejected blocks every unsent member of the group', async () => {
  const c = await connected();
  c.execute("INSERT INTO orders(id, title) VALUES ('gp', 'a')");
  await c.syncNow();
  const s = server.rows.get('tbl_orders')?.get('gp');
  assert.ok(s);
  server.putRow('tbl_orders', { ...s.row, fld_orders_title: 'remote' });
  c.execute("UPDATE orders SET title = 'mine' WHERE id = 'gp'");
  sealed(c);
  c.atomicWrite(() => {
    c.execute("UPDATE orders SET qty = 5 WHERE id = 'gp'");
    c.execute("INSERT INTO orders(id) VALUES ('gp-other')");
  });
  assert.equal((await c.syncNow()).completion, 'idle');
  const grouped = c.inspectMutations().filter((m) => m.atomicGroupId !== null);
  assert.deepEqual(grouped.map((m) => m.status), ['blocked_by_predecessor', 'blocked_by_predecessor']);
  assert.equal(server.rows.get('tbl_orders')?.has('gp-other'), false);
  c.close();
});

test('a group member captured behind a blocked predecessor blocks the whole group at once, so no part of it is sent', async () => {
  const c = await connected();
  c.execute("INSERT INTO orders(id, title) VALUES ('gb', 'a')");
  c.execute("INSERT INTO orders(id, title) VALUES ('gb-2', 'a')");
  await c.syncNow();
  const s = server.rows.get('tbl_orders')?.get('gb');
  assert.ok(s);
  server.putRow('tbl_orders', { ...s.row, fld_orders_title: 'remote' });
  c.execute("UPDATE orders SET title = 'mine' WHERE id = 'gb'");
  sealed(c);
  c.execute("UPDATE orders SET qty = 1 WHERE id = 'gb'");
  await c.syncNow();
  assert.deepEqual(c.inspectMutations().filter((m) => m.recordId === 'gb').map((m) => m.status).slice(-1), ['blocked_by_predecessor']);
  c.atomicWrite(() => {
    c.execute("UPDATE orders SET qty = 2 WHERE id = 'gb'");
    c.execute("UPDATE orders SET title = 'two' WHERE id = 'gb-2'");
  });
  const grouped = c.inspectMutations().filter((m) => m.atomicGroupId !== null);
  assert.deepEqual(grouped.map((m) => m.status), ['blocked_by_predecessor', 'blocked_by_predecessor']);
  const before = server.count('/sync/push');
  await c.syncNow();
  const sent = server.requests
    .filter((r) => r.path === '/sync/push')
    .slice(before)
    .flatMap((r) => (JSON.parse(r.body.toString()) as { mutations: { pk: { fld_orders_id: string } }[] }).mutations.map((m) => m.pk.fld_orders_id));
  assert.equal(sent.includes('gb-2'), false, `a member of the blocked group was sent: ${JSON.stringify(sent)}`);
  assert.equal(server.rows.get('tbl_orders')?.get('gb-2')?.row.fld_orders_title, 'a');
  c.close();
});

test('a terminal rejection survives restart and is removed only by the clear policy', async () => {
  const path = tempDb();
  let c = openClient(server, 'queue-restart', { path });
  await c.syncNow();
  server.reject = (m) => ((m.pk as { fld_orders_id?: string }).fld_orders_id === 'nope' ? 'policy_rejected' : undefined);
  c.execute("INSERT INTO orders(id) VALUES ('nope')");
  await c.syncNow();
  server.reject = undefined;
  c.close();
  c = openClient(server, 'queue-restart', { path });
  assert.deepEqual(c.inspectRejections().map((r) => r.code), ['policy_rejected']);
  await c.syncNow();
  assert.equal(c.inspectRejections().length, 1, 'never retried or dropped automatically');
  assert.equal(c.inspectMutations().filter((m) => m.status === 'server_rejected').length, 1, 'the rejected record stays inspectable until the policy runs');
  assert.equal(c.clearRejections(), 1);
  assert.equal(c.inspectRejections().length, 0);
  assert.deepEqual(
    c.inspectMutations().filter((m) => m.status === 'server_rejected'),
    [],
    'the policy clears the rejected queue record with its rejection',
  );
  c.close();
});

test('an insert after a cancelled insert…delete chain is sent as a new insert', async () => {
  const c = await connected();
  c.execute("INSERT INTO notes(id, body) VALUES (8800, 'a')");
  c.execute('DELETE FROM notes WHERE id = 8800');
  c.execute("INSERT INTO notes(id, body) VALUES (8800, 'b')");
  c.execute("UPDATE notes SET body = 'c' WHERE id = 8800");
  assert.equal(c.inspectMutations()[2]?.status, 'blocked_by_predecessor');
  assert.equal((await c.syncNow()).completion, 'idle');
  assert.equal(server.rows.get('tbl_notes')?.get('8800')?.row.fld_notes_body, 'c');
  assert.deepEqual(
    c.inspectMutations().map((m) => m.status),
    ['cancelled_before_send', 'cancelled_before_send', 'accepted', 'accepted'],
  );
  c.close();
});

test('an outcome bound to an older schema whose table changed is not written in place; the later write waits for the rebuild and goes out from its version', async () => {
  const own = await new FakeServer(manifest()).start();
  try {
    const c = openClient(own, `queue-historical-${++n}`);
    assert.equal((await c.syncNow()).completion, 'idle');
    c.execute("INSERT INTO orders(id, title) VALUES ('h1', 'a')");
    assert.equal((await c.syncNow()).completion, 'idle');
    const before = c.query("SELECT * FROM orders WHERE id = 'h1'")[0] as Record<string, unknown> | undefined;
    c.execute("UPDATE orders SET title = 'b' WHERE id = 'h1'");
    const batch = sealNextBatch(c.ctx);
    assert.ok(batch, 'the first update was sealed');
    c.execute("UPDATE orders SET qty = 5 WHERE id = 'h1'");
    // The client moves to a schema in which the table gained a field; then the answer to the first update arrives, bound to the old one.
    own.setManifest(manifest(2, true));
    await connect(c.ctx);
    const old = manifest();
    const sent = (JSON.parse(batch.request_bytes.toString('utf8')) as { mutations: { mutation_id: string; pk: Record<string, unknown> }[] }).mutations[0];
    const row = { fld_orders_deleted_at: null, fld_orders_id: 'h1', fld_orders_paid: null, fld_orders_qty: null, fld_orders_title: 'b', fld_orders_updated_at: '2026-01-01T00:00:00.000000Z' };
    const digest = digestRow({ schemaHash: old.schema_hash, table: readTableShape(old.tables[1] as TableSchema), row, serverVersion: 'v-historical' }).digest;
    reconcilePush(c.ctx, batch, {
      batch_id: batch.batch_id,
      server_time: '2026-01-01T00:00:00.000000Z',
      accepted: [{ mutation_id: String(sent?.mutation_id), table: 'tbl_orders', pk: sent?.pk ?? {}, outcome_schema: { version: 1, hash: old.schema_hash }, status: 'applied', server_version: 'v-historical', server_row: row, row_checksum: checksumObject(digest) }],
      rejected: [],
    } as PushResponse);
    const after = c.query("SELECT * FROM orders WHERE id = 'h1'")[0] as Record<string, unknown> | undefined;
    assert.equal(after?.updated_at, before?.updated_at, 'the historical row was not written');
    assert.deepEqual([after?.title, after?.qty], ['b', 5], 'the application still sees what it wrote');
    assert.notEqual(c.inspectRowVersions().find((v) => v.recordId === 'h1')?.serverVersion, 'v-historical');
    assert.deepEqual(c.inspectMutations().filter((m) => m.mutationId === sent?.mutation_id).map((m) => m.status), ['accepted']);
    const pending = c.inspectMutations().filter((m) => m.status === 'pending');
    assert.deepEqual(pending.map((m) => m.baseVersion), [null], 'the later update has no base yet');
    assert.equal(sealNextBatch(c.ctx), undefined, 'nothing is sendable before the rebuild');
    assert.ok(c.inspectScopes().scopes.every((s) => s.rebuildRequired), 'the scope holding the row is rebuilt under the current schema');
    // What a rebuild leaves: the row's current version, the scope no longer waiting.
    c.ctx.db.prepare("UPDATE _synchro_row_versions SET server_version = 'v-rebuilt' WHERE record_id = 'h1'").run();
    c.ctx.db.prepare('UPDATE _synchro_scopes SET rebuild_required = 0').run();
    const next = sealed(c);
    assert.deepEqual(next.mutations.map((m) => [m.op, m.base_version]), [['update', 'v-rebuilt']]);
    c.close();
  } finally {
    await own.stop();
  }
});
