/**
 * The reference client against the real reference server (embedded
 * PostgreSQL, demo tables): manifest verification at connect, push with
 * server row checksums verified under the server's manifest, conflicts,
 * replay after a lost response, and rows reaching a second client through
 * capture, pull and rebuild. Randomized histories of two clients are in
 * convergence.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { SynchroClient } from '../../reference/client/client.ts';
import { httpTransport, NetworkError, type Transport } from '../../reference/client/sync/transport.ts';
import { type DemoServer, startDemoServer } from './demo-server.ts';
import { instantClock } from './fixtures.ts';

const SECRET = 'reference-client-e2e-secret';
let server: DemoServer;
let url = '';
let databaseUrl = '';

before(async () => {
  server = await startDemoServer(SECRET);
  ({ url, databaseUrl } = server);
});

after(async () => {
  await server.stop();
});

const tokenFor = (user: string) => server.token(user);

async function client(id: string, user: string, transport?: Transport): Promise<SynchroClient> {
  const token = await tokenFor(user);
  return SynchroClient.open({ path: ':memory:', clientId: id, transport: transport ?? httpTransport(url, () => token), clock: instantClock(), random: () => 0 });
}

test('connect installs the server manifest and pushes are accepted with verified rows', async () => {
  const c = await client('e2e-a', 'user-a');
  await c.syncNow();
  assert.deepEqual(c.ctx.schema?.tables.map((t) => t.name).sort(), ['notes', 'tags']);
  c.execute("INSERT INTO notes(id, body, price) VALUES ('e2e-1', 'hello', '12.5')");
  c.execute("INSERT INTO tags(id, label) VALUES ('9007199254740993', 'big key')");
  await c.syncNow();
  assert.deepEqual(c.inspectMutations().map((m) => m.status), ['accepted', 'accepted']);
  const version = c.inspectRowVersions().find((v) => v.recordId === 'e2e-1')?.serverVersion;
  assert.ok(version !== undefined && version.length > 0);
  c.close();
});

test('a stale update from a second client is rejected with the current row, and its later intent is kept', async () => {
  const a = await client('e2e-b1', 'user-b');
  const b = await client('e2e-b2', 'user-b');
  await a.syncNow();
  await b.syncNow();
  a.execute("INSERT INTO notes(id, body) VALUES ('e2e-2', 'one')");
  await a.syncNow();
  // b learns the row only through its own push: it inserts the same key and gets the server's row back.
  b.execute("INSERT INTO notes(id, body) VALUES ('e2e-2', 'two')");
  await b.syncNow();
  const rejection = b.inspectRejections()[0];
  assert.equal(rejection?.code, 'row_already_exists');
  assert.equal((rejection?.serverRow as Record<string, unknown> | null) !== null, true);
  assert.deepEqual(b.query("SELECT body FROM notes WHERE id = 'e2e-2'"), [{ body: 'one' }]);
  a.execute("UPDATE notes SET body = 'one, edited' WHERE id = 'e2e-2'");
  await a.syncNow();
  // Pull serves only materialized state: let capture catch up so b's pull cannot bring back the older row.
  await projected('e2e-2');
  b.execute("UPDATE notes SET body = 'stale' WHERE id = 'e2e-2'");
  await b.syncNow();
  const last = b.inspectMutations().at(-1);
  assert.equal(last?.status, 'server_rejected');
  // Rejections recorded at the same virtual instant are listed by mutation ID, so look this one up by its ID.
  assert.equal(b.inspectRejections().find((r) => r.mutationId === last?.mutationId)?.code, 'version_conflict');
  assert.deepEqual(b.query("SELECT body FROM notes WHERE id = 'e2e-2'"), [{ body: 'one, edited' }]);
  a.close();
  b.close();
});

test('a lost push response is replayed by the server and applied once', async () => {
  const token = await tokenFor('user-c');
  const real = httpTransport(url, () => token);
  let dropNext = false;
  const transport: Transport = async (path, body) => {
    const res = await real(path, body);
    if (path === '/sync/push' && dropNext) {
      dropNext = false;
      throw new NetworkError('response lost');
    }
    return res;
  };
  const c = await client('e2e-c', 'user-c', transport);
  await c.syncNow();
  c.execute("INSERT INTO notes(id, body) VALUES ('e2e-3', 'once')");
  dropNext = true;
  await c.syncNow();
  assert.equal(c.inspectMutations()[0]?.status, 'sealed');
  await c.syncNow();
  assert.equal(c.inspectMutations()[0]?.status, 'accepted');
  assert.equal(c.inspectBatches().length, 1);
  c.close();
});

/** Waits (bounded, by querying) until the capture worker has materialized a write of this key. */
async function materialized(db: pg.Client, key: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while ((await db.query('SELECT 1 FROM synchro.scope_effects WHERE pk_text = $1', [key])).rowCount === 0) {
    if (Date.now() > deadline) throw new Error(`${key} was never materialized`);
  }
}

test('a pushed row and a direct SQL write reach a second client only through capture, pull and rebuild, and both converge', async () => {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const a = await client('e2e-d1', 'user-d');
  const b = await client('e2e-e1', 'user-e');
  try {
    await a.syncNow();
    await b.syncNow();
    a.execute("INSERT INTO notes(id, body) VALUES ('conv-1', 'from a')");
    await a.syncNow();
    await db.query("INSERT INTO demo.notes (id, body) VALUES ('conv-2', 'from sql')");
    await materialized(db, 'conv-1');
    await materialized(db, 'conv-2');
    await b.syncNow();
    await a.syncNow();
    const rows = "SELECT id, body FROM notes WHERE id LIKE 'conv-%' ORDER BY id";
    const expected = [
      { id: 'conv-1', body: 'from a' },
      { id: 'conv-2', body: 'from sql' },
    ];
    assert.deepEqual(b.query(rows), expected);
    assert.deepEqual(a.query(rows), expected);
    const versions = (c: SynchroClient) => c.inspectRowVersions().filter((v) => v.recordId?.startsWith('conv-')).map((v) => [v.recordId, v.serverVersion]).sort();
    assert.deepEqual(versions(b), versions(a));
    // An update by b flows back to a the same way.
    b.execute("UPDATE notes SET body = 'edited by b' WHERE id = 'conv-2'");
    await b.syncNow();
    const { rows: fence } = await db.query("SELECT server_version FROM synchro.row_versions WHERE pk_text = 'conv-2'");
    const deadline = Date.now() + 15_000;
    while ((await db.query("SELECT 1 FROM synchro.projections WHERE pk_text = 'conv-2' AND server_version = $1", [fence[0]?.server_version])).rowCount === 0) {
      if (Date.now() > deadline) throw new Error('the update was never materialized');
    }
    await a.syncNow();
    assert.deepEqual(a.query("SELECT body FROM notes WHERE id = 'conv-2'"), [{ body: 'edited by b' }]);
  } finally {
    a.close();
    b.close();
    await db.end();
  }
});

/** Waits (bounded, by querying) until the latest version of a key is the materialized one. */
async function projected(key: string): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const deadline = Date.now() + 15_000;
    const sql = `SELECT 1 FROM synchro.row_versions v JOIN synchro.projections p USING (table_id, pk_text)
                  WHERE v.pk_text = $1 AND p.server_version = v.server_version`;
    while ((await db.query(sql, [key])).rowCount === 0) {
      if (Date.now() > deadline) throw new Error(`${key} was never materialized`);
    }
  } finally {
    await db.end();
  }
}
