/**
 * End to end: a pull answer that carries a scope change is lost after the
 * server stored the new set. The reference client retries from the version
 * it still holds; the server's scope-set history sends the change again, so
 * the client rebuilds a granted scope (and gets its rows) or drops a revoked
 * one, and never lands in an error state.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { SynchroClient } from '../../reference/client/client.ts';
import { httpTransport, NetworkError, type Transport } from '../../reference/client/sync/transport.ts';
import { type DemoServer, startDemoServer } from './demo-server.ts';
import { instantClock, tempDb } from './fixtures.ts';

const SECRET = 'reference-client-lost-pull-secret';
const SCOPE = 'catalog_public';
let server: DemoServer;
let db: pg.Client;

before(async () => {
  server = await startDemoServer(SECRET, ['--test-controls']);
  db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
  // The demo scope becomes an explicit grant, so one user can gain and lose it with its rows.
  await db.query('SELECT synchro.synchro_unregister_shared_scope($1)', [SCOPE]);
  await db.query("INSERT INTO demo.notes (id, body) VALUES ('lp-1', 'one'), ('lp-2', 'two')");
  await captureCaughtUp();
});

after(async () => {
  await db?.end();
  await server?.stop();
});

/** Waits until every committed source transaction is visible to pull (the server's test control). */
async function captureCaughtUp(): Promise<void> {
  const res = await fetch(`${server.url}/__control/capture/await`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ timeout_ms: 20_000 }) });
  if (res.status !== 200) throw new Error(`capture catch-up answered ${res.status}: ${await res.text()}`);
}

/** A client whose transport can throw away the next pull answer after the server has committed it. */
async function device(user: string) {
  const token = await server.token(user);
  const real = httpTransport(server.url, () => token);
  const state = { losePull: false, lost: 0 };
  const transport: Transport = async (path, body) => {
    const res = await real(path, body);
    if (path === '/sync/pull' && state.losePull) {
      state.losePull = false;
      state.lost += 1;
      throw new NetworkError('pull response lost after the server answered');
    }
    return res;
  };
  const client = await SynchroClient.open({ path: tempDb(), clientId: `${user}-device`, transport, clock: instantClock(), random: () => 0 });
  return { client, state };
}

const notes = (client: SynchroClient) => (client.query("SELECT id FROM notes WHERE id LIKE 'lp-%' ORDER BY id") as { id: string }[]).map((r) => r.id);
const heldScopes = (client: SynchroClient) => client.inspectScopes().scopes.map((s) => String(s.scopeId));

async function syncToIdle(client: SynchroClient): Promise<void> {
  const { completion, status } = await client.syncNow();
  assert.equal(completion, 'idle', `sync ended ${completion}: ${JSON.stringify(status.failure)}`);
}

test('a granted scope whose pull answer was lost is still added and rebuilt on the next sync', async () => {
  const user = 'lost-pull-grant';
  const { client, state } = await device(user);
  try {
    await syncToIdle(client);
    assert.deepEqual(notes(client), []);
    assert.ok(!heldScopes(client).includes(SCOPE));

    await db.query('SELECT synchro.synchro_grant_user_scope($1, $2)', [user, SCOPE]);
    state.losePull = true;
    await client.syncNow();
    assert.equal(state.lost, 1, 'the pull answer carrying the add was dropped');
    await syncToIdle(client);
    assert.deepEqual(notes(client), ['lp-1', 'lp-2']);
    assert.ok(heldScopes(client).includes(SCOPE));
  } finally {
    client.close();
  }
});

test('a revoked scope whose pull answer was lost is still removed, with its rows, on the next sync', async () => {
  const user = 'lost-pull-revoke';
  await db.query('SELECT synchro.synchro_grant_user_scope($1, $2)', [user, SCOPE]);
  const { client, state } = await device(user);
  try {
    await syncToIdle(client);
    assert.deepEqual(notes(client), ['lp-1', 'lp-2']);

    await db.query('SELECT synchro.synchro_revoke_user_scope($1, $2)', [user, SCOPE]);
    state.losePull = true;
    await client.syncNow();
    assert.equal(state.lost, 1, 'the pull answer carrying the remove was dropped');
    await syncToIdle(client);
    assert.deepEqual(notes(client), []);
    assert.ok(!heldScopes(client).includes(SCOPE));
  } finally {
    client.close();
  }
});
