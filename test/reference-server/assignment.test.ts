import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { reconcile, storedAssignment } from '../../reference/server/core/assignment.ts';
import { connect, freshServer, NOTES_SQL, useEnv } from './helpers.ts';

const env = useEnv();

// Runs `fn` inside a transaction as synchro_owner (the role connect and pull use), rolled back afterwards unless `commit`.
async function asOwner<T>(url: string, fn: (db: pg.PoolClient) => Promise<T>, commit = false): Promise<T> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const db = await pool.connect();
  try {
    await db.query('BEGIN; SET LOCAL ROLE synchro_owner');
    const out = await fn(db);
    await db.query(commit ? 'COMMIT' : 'ROLLBACK');
    return out;
  } finally {
    db.release();
    await pool.end();
  }
}

test('the stored set ignores grants made since the last reconciliation; reconcile reports them with one step and writes nothing when unchanged', async () => {
  const h = await freshServer(env(), NOTES_SQL);
  try {
    await connect(h, 'u1', 'c1');
    await h.sql.query("SELECT synchro.synchro_grant_user_scope('u1', 'project:1')");
    const stored = await asOwner(h.url, (db) => storedAssignment(db, 'u1', 'c1', 1));
    assert.deepEqual(stored, { scopeSetVersion: 1, assigned: ['user:u1'], added: [], removed: [] });

    const changed = await asOwner(h.url, (db) => reconcile(db, 'u1', 'c1', 1), true);
    assert.deepEqual(changed, { scopeSetVersion: 2, assigned: ['project:1', 'user:u1'], added: ['project:1'], removed: [] });

    const witness = 'SELECT xmin::text AS x, scope_id FROM synchro.client_scopes WHERE client_id = $1 UNION ALL SELECT xmin::text, scope_set_version::text FROM synchro.clients WHERE client_id = $1 ORDER BY 2';
    const before = (await h.sql.query(witness, ['c1'])).rows;
    const same = await asOwner(h.url, (db) => reconcile(db, 'u1', 'c1', 2), true);
    assert.deepEqual(same, { scopeSetVersion: 2, assigned: ['project:1', 'user:u1'], added: [], removed: [] });
    assert.deepEqual((await h.sql.query(witness, ['c1'])).rows, before);
  } finally {
    await h.close();
  }
});
