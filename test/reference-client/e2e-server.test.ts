/**
 * The reference client against the real reference server (embedded
 * PostgreSQL, demo tables): manifest verification at connect, push with
 * server row checksums verified under the server's manifest, conflicts, and
 * replay after a lost response. Pull and rebuild are not served yet by the
 * server, so a run may end blocked after pushing; the assertions are on what
 * pushing must achieve.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { SignJWT } from 'jose';
import { SynchroClient } from '../../reference/client/client.ts';
import { httpTransport, NetworkError, type Transport } from '../../reference/client/sync/transport.ts';
import { instantClock } from './fixtures.ts';

const SECRET = 'reference-client-e2e-secret';
let server: ChildProcess;
let url = '';

before(async () => {
  server = spawn(process.execPath, ['reference/server/main.ts', '--demo', '--jwt-secret', SECRET], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  server.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: server.stdout as NodeJS.ReadableStream }).once('line', resolve);
    server.once('exit', (code) => reject(new Error(`reference server exited (${code}): ${stderr}`)));
  });
  url = (JSON.parse(line) as { url: string }).url;
});

after(async () => {
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGTERM');
  await exited;
});

async function tokenFor(user: string): Promise<string> {
  return new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(user).setIssuedAt().sign(new TextEncoder().encode(SECRET));
}

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
  b.execute("UPDATE notes SET body = 'stale' WHERE id = 'e2e-2'");
  await b.syncNow();
  const last = b.inspectMutations().at(-1);
  assert.equal(last?.status, 'server_rejected');
  assert.equal(b.inspectRejections().at(-1)?.code, 'version_conflict');
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
