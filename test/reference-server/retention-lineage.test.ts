import assert from 'node:assert/strict';
import { test } from 'node:test';
import { catchUp, connect, freshServer, OWNED_NOTES_SQL, useEnv } from './helpers.ts';
import { pull, rebuildAll } from './sync-flow.ts';

const env = useEnv();

test('a retention lineage reset mints the next retention generation and sends the scope\'s cursors to rebuild', async () => {
  const h = await freshServer(env(), OWNED_NOTES_SQL, { capture: true });
  try {
    await catchUp(h);
    const s = await connect(h);
    const scope = 'user:u1';
    const cursor = (await rebuildAll(h, s, scope)).finalCursor;
    assert.equal(typeof cursor, 'string');
    const { rows } = await h.sql.query<{ g: string }>('SELECT synchro.synchro_reset_retention_lineage($1)::text AS g', [scope]);
    assert.equal(rows[0]?.g, '2');
    const again = await h.sql.query<{ g: string }>('SELECT synchro.synchro_reset_retention_lineage($1)::text AS g', [scope]);
    assert.equal(again.rows[0]?.g, '3');
    const answer = await pull(h, s, { [scope]: cursor });
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json.rebuild, [scope]);
    await assert.rejects(h.sql.query("SELECT synchro.synchro_reset_retention_lineage('')"), /give the scope/);
  } finally {
    await h.close();
  }
});
