import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect, freshServer, NOTES_SQL, useEnv } from './helpers.ts';

const TOP = 9007199254740991;

const env = useEnv();

const base = { platform: 'test', app_version: '1.0.0', protocol_version: 3 };

test('counters stop at the top of the portable range: no generation or scope set version past it is handed out or stored', async () => {
  const h = await freshServer(env(), NOTES_SQL, { start: { testControls: true } });
  try {
    const s = await connect(h, 'u1', 'c1');
    const known = { 'user:u1': { cursor: null } };
    // An unknown client presenting the top generation would be handed the next one.
    const unknown = await h.post('/sync/connect', { ...base, client_id: 'c-restored', client_generation: TOP, schema: s.schema, scope_set_version: 0, known_scopes: {} }, { user: 'u1' });
    assert.equal(unknown.status, 500, unknown.text);
    assert.equal(unknown.json.error.code, 'sync_integrity_failure');
    const stored = await h.sql.query("SELECT count(*)::int AS n FROM synchro.clients WHERE client_id = 'c-restored'");
    assert.equal(stored.rows[0].n, 0);

    // An expired client at the top generation cannot be renewed (the control puts it there).
    const set = await h.control('/__control/clients/counters', { user_id: 'u1', client_id: 'c1', set: { client_generation: TOP } });
    assert.deepEqual(set.json, { client_generation: TOP, scope_set_version: 1 });
    assert.equal((await h.control('/__control/clients/counters', { user_id: 'u1', client_id: 'c1', set: { client_generation: 0 } })).status, 400);
    assert.equal((await h.control('/__control/clients/counters', { user_id: 'u1', client_id: 'nobody' })).status, 404);
    await h.control('/__control/clients/expire', { user_id: 'u1', client_id: 'c1' });
    const renewed = await h.post('/sync/connect', { ...base, client_id: 'c1', client_generation: TOP, schema: s.schema, scope_set_version: 1, known_scopes: known }, { user: 'u1' });
    assert.equal(renewed.status, 500, renewed.text);
    const generation = await h.sql.query("SELECT client_generation::text AS g, expired FROM synchro.clients WHERE client_id = 'c1'");
    assert.deepEqual(generation.rows[0], { g: String(TOP), expired: true });

    // A changed scope set at the top version cannot take a version step.
    await h.sql.query("UPDATE synchro.clients SET expired = false WHERE client_id = 'c1'");
    await h.control('/__control/clients/counters', { user_id: 'u1', client_id: 'c1', set: { client_generation: 1, scope_set_version: TOP } });
    await h.sql.query("SELECT synchro.synchro_grant_user_scope('u1', 'project:1')");
    const stepped = await h.post('/sync/connect', { ...base, client_id: 'c1', client_generation: 1, schema: s.schema, scope_set_version: TOP, known_scopes: known }, { user: 'u1' });
    assert.equal(stepped.status, 500, stepped.text);
    const version = await h.sql.query("SELECT scope_set_version::text AS v FROM synchro.clients WHERE client_id = 'c1'");
    assert.equal(version.rows[0].v, String(TOP));
  } finally {
    await h.close();
  }
});
