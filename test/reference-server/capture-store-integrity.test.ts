/**
 * The verifying read of a pull page (SYNC-PULL-004): a selected effect whose
 * captured projection is gone, or whose stored row digest does not match its
 * stored row, fails the whole page with 500 sync_integrity_failure and makes
 * readiness unready while the store holds that damage; once the damage is
 * written back, the same cursors get the same page and readiness returns.
 * The damage is made through the capture-store controls.
 *
 * A rebuild reads no stored row digest (decision 421): staging and every page
 * compute each row's digest from the staged row, so a damaged stored digest
 * cannot reach a rebuild page and there is nothing for a rebuild to verify.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { catchUp, connect, freshServer, type Harness, type Session, useEnv } from './helpers.ts';
import { pull, rebuildAll } from './sync-flow.ts';

const env = useEnv();

const SETUP = `
CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL DEFAULT 'u1', body text NOT NULL DEFAULT '');
SELECT synchro.synchro_prepare_projection_view('public.notes');
CREATE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id;
END;
SELECT synchro.synchro_register_table('public.notes', membership_fn => 'public.note_scopes');
`;

const SCOPE = 'user:u1';

async function withNotes(fn: (h: Harness, s: Session, cursors: Record<string, string>, tableId: string) => Promise<void>): Promise<void> {
  const h = await freshServer(env(), SETUP, { capture: true, start: { testControls: true } });
  try {
    const s = await connect(h);
    const cursors = { [SCOPE]: (await rebuildAll(h, s, SCOPE)).finalCursor };
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('n1', 'one'), ('n2', 'two'), ('n3', 'three')`);
    await h.sql.query(`UPDATE public.notes SET body = body || ' edited'`);
    await catchUp(h);
    const { rows } = await h.sql.query<{ table_id: string }>("SELECT table_id FROM synchro.relations WHERE physical_relation = 'notes'");
    await fn(h, s, cursors, rows[0]?.table_id as string);
  } finally {
    await h.close();
  }
}

async function ready(h: Harness): Promise<{ status: number; failing: string[] }> {
  const { rows } = await h.sql.query<{ key: string }>("SELECT key FROM jsonb_each(synchro.synchro_health_detail() -> 'checks') WHERE value ->> 'state' <> 'ok' ORDER BY 1");
  return { status: (await h.get('/ready')).status, failing: rows.map((r) => r.key) };
}

for (const fault of ['projection_missing', 'digest_overwritten'] as const) {
  test(`${fault}: the whole page fails, nothing is acknowledged, readiness is unready until the effect is written back`, async () => {
    await withNotes(async (h, s, cursors, tableId) => {
      const clean = await pull(h, s, cursors, { active: [SCOPE] });
      assert.equal(clean.status, 200, clean.text);
      assert.deepEqual(await ready(h), { status: 200, failing: [] });
      const checkpoints = async () => (await h.sql.query('SELECT scope_id, commit_lsn::text, event_ordinal, effect_ordinal FROM synchro.checkpoints ORDER BY 1')).rows;
      const before = await checkpoints();

      const injected = await h.control('/__control/capture/store-fault', { fault, table: tableId, scope: SCOPE, pk: 'n2' });
      assert.equal(injected.status, 200, injected.text);
      const failed = await pull(h, s, cursors, { active: [SCOPE] });
      assert.equal(failed.status, 500, failed.text);
      assert.equal(failed.json.error.code, 'sync_integrity_failure');
      assert.equal(failed.json.error.retryable, false);
      assert.equal(failed.json.changes, undefined);
      assert.deepEqual(await checkpoints(), before);
      assert.deepEqual(await ready(h), { status: 503, failing: ['capture_store'] });

      const restored = await h.control('/__control/capture/store-restore', {});
      assert.deepEqual([restored.status, restored.json], [200, { restored: 1 }]);
      // Readiness follows the store itself: written back, nothing is damaged any more.
      assert.deepEqual(await ready(h), { status: 200, failing: [] });
      const again = await pull(h, s, cursors, { active: [SCOPE] });
      assert.equal(again.status, 200, again.text);
      // The same candidates as before the damage (a cursor differs only by its issue time).
      assert.deepEqual([again.json.changes, again.json.checksums], [clean.json.changes, clean.json.checksums]);
    });
  });
}

test('a damaged effect that a later change of its row supersedes no longer keeps the server unready', async () => {
  await withNotes(async (h, s, cursors, tableId) => {
    assert.equal((await h.control('/__control/capture/store-fault', { fault: 'digest_overwritten', table: tableId, scope: SCOPE, pk: 'n1' })).status, 200);
    assert.equal((await pull(h, s, cursors, { active: [SCOPE] })).status, 500);
    assert.equal((await ready(h)).status, 503);
    await h.sql.query(`UPDATE public.notes SET body = 'one again' WHERE id = 'n1'`);
    await catchUp(h);
    assert.deepEqual(await ready(h), { status: 200, failing: [] });
    const served = await pull(h, s, cursors, { active: [SCOPE] });
    assert.equal(served.status, 200, served.text);
    assert.equal(served.json.changes.length, 3);
  });
});

test('a rebuild serves every row checksum computed from its staged row, whatever digests the store holds', async () => {
  await withNotes(async (h, s, _cursors, tableId) => {
    const clean = await rebuildAll(h, s, SCOPE, 2);
    // The latest effect's digest through the control, and the scope row's, which no control reaches, directly.
    assert.equal((await h.control('/__control/capture/store-fault', { fault: 'digest_overwritten', table: tableId, scope: SCOPE, pk: 'n2' })).status, 200);
    const damaged = await h.sql.query("UPDATE synchro.scope_rows SET row_digest = sha256(row_digest) WHERE scope_id = $1 AND pk_text = 'n2' AND row_digest IS NOT NULL", [SCOPE]);
    assert.equal(damaged.rowCount, 1);
    // rebuildAll checks every page against the codec: each row_checksum is the digest of that page's row and version.
    const again = await rebuildAll(h, s, SCOPE, 2);
    assert.deepEqual(again.pages.map((p) => p.status), [200, 200]);
    assert.deepEqual([again.records, again.checksum], [clean.records, clean.checksum]);
    assert.deepEqual(
      again.pages.flatMap((p) => p.json.records.map((r: { row_checksum: unknown }) => r.row_checksum)),
      clean.pages.flatMap((p) => p.json.records.map((r: { row_checksum: unknown }) => r.row_checksum)),
    );
  });
});

test('the store-fault control refuses what it cannot damage and checks its request', async () => {
  await withNotes(async (h, _s, _cursors, tableId) => {
    const missing = await h.control('/__control/capture/store-fault', { fault: 'projection_missing', table: tableId, scope: SCOPE, pk: 'nope' });
    assert.deepEqual([missing.status, missing.json.error.code], [409, 'refused']);
    const unknown = await h.control('/__control/capture/store-fault', { fault: 'row_scrambled', table: tableId, scope: SCOPE, pk: 'n1' });
    assert.deepEqual([unknown.status, unknown.json.error.code], [400, 'invalid_request']);
    assert.deepEqual((await h.control('/__control/capture/store-restore', {})).json, { restored: 0 });
  });
});
