import assert from 'node:assert/strict';
import { test } from 'node:test';
import { catchUp, connect, freshServer, OWNED_NOTES_SQL, useEnv } from './helpers.ts';
import { pull, rebuildAll } from './sync-flow.ts';

const env = useEnv();

test('operator compaction refuses a NULL, zero or negative batch size before touching a scope, and compacts in batches of scopes otherwise', async () => {
  const h = await freshServer(env(), OWNED_NOTES_SQL, { capture: true });
  try {
    await catchUp(h);
    const s = await connect(h);
    const scope = 'user:u1';
    const c0 = (await rebuildAll(h, s, scope)).finalCursor as string;
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k1')`);
    await catchUp(h);
    const first = await pull(h, s, { [scope]: c0 });
    // Presenting the newer cursor acknowledges it, so the effect of k1 may go.
    await pull(h, s, { [scope]: first.json.scope_cursors[scope] });
    const effects = async () => Number((await h.sql.query<{ n: string }>('SELECT count(*) AS n FROM synchro.scope_effects')).rows[0]?.n);
    const held = await effects();
    assert.ok(held > 0);
    for (const size of ['0', '-1', 'NULL']) {
      await assert.rejects(h.sql.query(`SELECT synchro.synchro_compact_scopes(${size})`), (e: { code?: string }) => e.code === '22023');
      assert.equal(await effects(), held, `batch size ${size} deleted nothing`);
    }
    const { rows } = await h.sql.query<{ r: { deleted: Record<string, number>; last_scope: string | null } }>('SELECT synchro.synchro_compact_scopes(1) AS r');
    assert.equal(Object.keys(rows[0]?.r.deleted ?? {}).length, 1);
    assert.ok(await effects() < held);
    const rest = await h.sql.query<{ r: { last_scope: string | null } }>('SELECT synchro.synchro_compact_scopes(1000, $1) AS r', [rows[0]?.r.last_scope]);
    assert.ok(rest.rows[0] !== undefined);
  } finally {
    await h.close();
  }
});
