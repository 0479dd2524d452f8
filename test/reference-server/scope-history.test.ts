/**
 * Scope-set history: a pull answer carrying scope_updates can be lost after
 * the server stored the new set. The client then presents its older
 * scope_set_version again and must get the missed add or remove again, at
 * the same version; a client that is current sees no delta and no step.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connect, type Env, freshServer, type Harness, NOTES_SQL, type Session, startEnv } from './helpers.ts';
import { pull, pullBody } from './sync-flow.ts';

let env: Env;
before(async () => {
  env = await startEnv();
});
after(async () => {
  await env?.cluster.stop();
});

async function withClient(fn: (h: Harness, s: Session) => Promise<void>): Promise<void> {
  const h = await freshServer(env, NOTES_SQL, { capture: true });
  try {
    await fn(h, await connect(h, 'u1', 'c1'));
  } finally {
    await h.close();
  }
}

/** The recorded sets of c1, with the row versions (xmin) so an untouched table compares equal. */
async function history(h: Harness): Promise<Array<{ v: string; scopes: string[]; x: string }>> {
  const { rows } = await h.sql.query(
    "SELECT scope_set_version::text AS v, scope_ids AS scopes, xmin::text AS x FROM synchro.client_scope_sets WHERE client_id = 'c1' ORDER BY scope_set_version",
  );
  return rows;
}
const versions = async (h: Harness) => (await history(h)).map((r) => [Number(r.v), r.scopes]);
const storedVersion = async (h: Harness) => Number((await h.sql.query("SELECT scope_set_version FROM synchro.clients WHERE client_id = 'c1'")).rows[0].scope_set_version);

const updates = (reply: { json: { scope_updates: unknown; scope_set_version: number } }) => ({ version: reply.json.scope_set_version, ...(reply.json.scope_updates as object) });

test('connect records the set of the version it hands out', async () => {
  await withClient(async (h) => {
    assert.deepEqual(await versions(h), [[1, ['user:u1']]]);
  });
});

test('a lost grant answer: the retry from the old version gets the add again at the same version, without a new history row', async () => {
  await withClient(async (h, s) => {
    await h.sql.query("SELECT synchro.synchro_grant_user_scope('u1', 'project:1')");
    const lost = await pull(h, s, { 'user:u1': null }, { version: 1 });
    assert.equal(lost.status, 200, lost.text);
    assert.deepEqual(updates(lost), { version: 2, add: [{ id: 'project:1', cursor: null }], remove: [] });
    const recorded = await history(h);
    assert.deepEqual(recorded.map((r) => [Number(r.v), r.scopes]), [[1, ['user:u1']], [2, ['project:1', 'user:u1']]]);

    // The client never saw that answer and asks again from version 1.
    const retry = await pull(h, s, { 'user:u1': null }, { version: 1, active: ['project:1', 'user:u1'] });
    assert.equal(retry.status, 200, retry.text);
    assert.deepEqual(updates(retry), { version: 2, add: [{ id: 'project:1', cursor: null }], remove: [] });
    assert.ok(retry.json.rebuild.includes('project:1'));
    assert.deepEqual(Object.keys(retry.json.checksums), ['project:1', 'user:u1']);
    assert.equal(await storedVersion(h), 2);
    assert.deepEqual(await history(h), recorded);

    // Once the client presents version 2 it is current: no delta, no step, and version 1 is no longer kept.
    const current = await pull(h, s, { 'user:u1': null, 'project:1': null }, { version: 2 });
    assert.equal(current.status, 200, current.text);
    assert.deepEqual(updates(current), { version: 2, add: [], remove: [] });
    assert.deepEqual(await versions(h), [[2, ['project:1', 'user:u1']]]);
    assert.equal(await storedVersion(h), 2);
  });
});

test('a lost revoke answer: the retry from the old version gets the remove again at the same version', async () => {
  await withClient(async (h, s) => {
    await h.sql.query("SELECT synchro.synchro_grant_user_scope('u1', 'project:1')");
    assert.equal((await pull(h, s, { 'user:u1': null }, { version: 1 })).json.scope_set_version, 2);
    await h.sql.query("SELECT synchro.synchro_revoke_user_scope('u1', 'project:1')");
    const presented = { 'user:u1': null, 'project:1': null };
    const lost = await pull(h, s, presented, { version: 2 });
    assert.deepEqual(updates(lost), { version: 3, add: [], remove: ['project:1'] });
    const recorded = await history(h);

    const retry = await pull(h, s, presented, { version: 2, active: ['user:u1'] });
    assert.equal(retry.status, 200, retry.text);
    assert.deepEqual(updates(retry), { version: 3, add: [], remove: ['project:1'] });
    assert.deepEqual(Object.keys(retry.json.checksums), ['user:u1']);
    assert.equal(retry.json.scope_cursors['project:1'], undefined);
    assert.deepEqual(await history(h), recorded);
    // A client rebuilding project:1 does not present it; the recorded set still says it holds it.
    const rebuilding = await pull(h, s, { 'user:u1': null }, { version: 2 });
    assert.deepEqual(updates(rebuilding), { version: 3, add: [], remove: ['project:1'] });

    const current = await pull(h, s, { 'user:u1': null }, { version: 3 });
    assert.deepEqual(updates(current), { version: 3, add: [], remove: [] });
  });
});

test('a client two answers behind gets the combined delta, including what this pull reconciles', async () => {
  await withClient(async (h, s) => {
    await h.sql.query("SELECT synchro.synchro_grant_user_scope('u1', 'project:1'), synchro.synchro_grant_user_scope('u1', 'project:2')");
    assert.equal((await pull(h, s, { 'user:u1': null }, { version: 1 })).json.scope_set_version, 2);
    // Both answers lost; meanwhile project:1 goes and project:3 comes.
    await h.sql.query("SELECT synchro.synchro_revoke_user_scope('u1', 'project:1'), synchro.synchro_grant_user_scope('u1', 'project:3')");
    const behind = await pull(h, s, { 'user:u1': null }, { version: 1, active: ['project:2', 'project:3', 'user:u1'] });
    assert.equal(behind.status, 200, behind.text);
    assert.deepEqual(updates(behind), { version: 3, add: [{ id: 'project:2', cursor: null }, { id: 'project:3', cursor: null }], remove: [] });
    // Removed and added back while the client was behind: it held it at version 1 and holds it now, so no delta.
    await h.sql.query("SELECT synchro.synchro_revoke_user_scope('u1', 'project:2')");
    assert.equal((await pull(h, s, { 'user:u1': null }, { version: 3 })).json.scope_set_version, 4);
    await h.sql.query("SELECT synchro.synchro_grant_user_scope('u1', 'project:2')");
    const again = await pull(h, s, { 'user:u1': null, 'project:2': null, 'project:3': null }, { version: 3 });
    assert.deepEqual(updates(again), { version: 5, add: [], remove: [] });
    assert.ok(again.json.rebuild.includes('project:2'));
  });
});

test('a failing pull writes no history and no assignment; the next pull reports the add once with one step', async () => {
  await withClient(async (h, s) => {
    await h.sql.query("SELECT synchro.synchro_grant_user_scope('u1', 'project:1')");
    const recorded = await history(h);
    const failures = [
      { ...pullBody(s, { 'user:u1': null }, 0, 1) },
      { ...pullBody(s, { 'user:u1': null }, 1000, 1), client_generation: s.generation + 1 },
      { ...pullBody(s, { 'user:u1': null }, 1000, 1), schema: { version: s.schema.version, hash: '0'.repeat(64) } },
      { ...pullBody(s, { 'user:u1': 'not a cursor' }, 1000, 1) },
    ];
    for (const body of failures) {
      const res = await h.post('/sync/pull', body);
      assert.notEqual(res.status, 200, res.text);
      assert.deepEqual(await history(h), recorded);
      assert.equal(await storedVersion(h), 1);
    }
    const ok = await pull(h, s, { 'user:u1': null }, { version: 1 });
    assert.deepEqual(updates(ok), { version: 2, add: [{ id: 'project:1', cursor: null }], remove: [] });
    const next = await pull(h, s, { 'user:u1': null, 'project:1': null }, { version: 2 });
    assert.deepEqual(updates(next), { version: 2, add: [], remove: [] });
  });
});

test('a presented version with no record falls back to the presented scopes map', async () => {
  await withClient(async (h, s) => {
    await h.sql.query("SELECT synchro.synchro_grant_user_scope('u1', 'project:1')");
    assert.equal((await pull(h, s, { 'user:u1': null }, { version: 1 })).json.scope_set_version, 2);
    await h.sql.query("SELECT synchro.synchro_revoke_user_scope('u1', 'project:1'), synchro.synchro_grant_user_scope('u1', 'project:2')");
    assert.equal((await pull(h, s, { 'user:u1': null, 'project:1': null }, { version: 2 })).json.scope_set_version, 3);
    assert.equal((await pull(h, s, { 'user:u1': null, 'project:2': null }, { version: 3 })).json.scope_set_version, 3);
    assert.deepEqual(await versions(h), [[3, ['project:2', 'user:u1']]]);
    // Version 1 was pruned: the client's map is the only baseline left.
    const old = await pull(h, s, { 'user:u1': null, 'project:1': null }, { version: 1, active: ['project:2', 'user:u1'] });
    assert.equal(old.status, 200, old.text);
    assert.deepEqual(updates(old), { version: 3, add: [{ id: 'project:2', cursor: null }], remove: ['project:1'] });
  });
});

/** A continuing client's connect, presenting the version and scopes it holds. */
async function reconnect(h: Harness, s: Session, version: number, known: Record<string, string | null>) {
  const body = { client_id: s.clientId, client_generation: s.generation, platform: 'test', app_version: '1.0.0', protocol_version: 3, schema: s.schema, scope_set_version: version, known_scopes: Object.fromEntries(Object.entries(known).map(([k, v]) => [k, { cursor: v }])) };
  const res = await h.post('/sync/connect', body);
  assert.equal(res.status, 200, res.text);
  return res.json as { scope_set_version: number; scopes: { add: Array<{ id: string; cursor: null }>; remove: string[] } };
}

test('connect answers a client behind the stored version from the history too', async () => {
  await withClient(async (h, s) => {
    await h.sql.query("SELECT synchro.synchro_grant_user_scope('u1', 'project:1')");
    const lost = await reconnect(h, s, 1, { 'user:u1': null });
    assert.deepEqual({ version: lost.scope_set_version, ...lost.scopes }, { version: 2, add: [{ id: 'project:1', cursor: null }], remove: [] });
    const retry = await reconnect(h, s, 1, { 'user:u1': null });
    assert.deepEqual({ version: retry.scope_set_version, ...retry.scopes }, { version: 2, add: [{ id: 'project:1', cursor: null }], remove: [] });
    const current = await reconnect(h, s, 2, { 'user:u1': null, 'project:1': null });
    assert.deepEqual({ version: current.scope_set_version, ...current.scopes }, { version: 2, add: [], remove: [] });

    await h.sql.query("SELECT synchro.synchro_revoke_user_scope('u1', 'project:1')");
    assert.deepEqual((await reconnect(h, s, 2, { 'user:u1': null, 'project:1': null })).scopes, { add: [], remove: ['project:1'] });
    const again = await reconnect(h, s, 2, { 'user:u1': null, 'project:1': null });
    assert.deepEqual({ version: again.scope_set_version, ...again.scopes }, { version: 3, add: [], remove: ['project:1'] });
  });
});
