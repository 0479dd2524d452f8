/**
 * A controlled rebinding after drift (sql/079, capture/relation-rebinding.ts,
 * decision 330): the operator moved and renamed a registered relation, capture
 * saw drift and stopped, rows were written and deleted meanwhile; binding the
 * registration to the relation as it now stands resumes capture, re-baselines
 * the table (nothing written meanwhile is lost, nothing quarantines) and gives
 * the scopes whose contents changed a new membership generation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CapturePoisoned } from '../../reference/server/core/capture-control.ts';
import { catchUp, type Harness, OWNED_NOTES_SQL, useEnv, withCaptureServer } from './helpers.ts';

const env = useEnv();

const SETUP = `${OWNED_NOTES_SQL}
CREATE SCHEMA archive;
-- The fence trigger runs as synchro_owner: an operator moving a registered table gives it the schema first.
GRANT USAGE ON SCHEMA archive TO synchro_owner;
CREATE TABLE archive.other (id text PRIMARY KEY, owner text NOT NULL);
`;

const rebind = (h: Harness, registered: string, relation: string) =>
  h.sql.query<{ r: Record<string, unknown> }>('SELECT synchro.synchro_rebind_relation($1, $2) AS r', [registered, relation]);

async function scopeRows(h: Harness): Promise<string[]> {
  const { rows } = await h.sql.query<{ k: string }>("SELECT scope_id || '>' || pk_text AS k FROM synchro.scope_rows ORDER BY 1");
  return rows.map((r) => r.k);
}

async function generationOf(h: Harness, scope: string): Promise<number> {
  const { rows } = await h.sql.query<{ g: string }>('SELECT membership_generation::text AS g FROM synchro.scope_state WHERE scope_id = $1', [scope]);
  return Number(rows[0]?.g ?? 1);
}

test('a rebinding after a committed move and rename resumes capture with a re-baseline and rebuilds the scopes it changes; a wrong one changes nothing', async () => {
  await withCaptureServer(env(), SETUP, async (h) => {
    await h.sql.query("INSERT INTO public.notes (id, owner) VALUES ('n1', 'u1'), ('n2', 'u1'), ('n3', 'u2')");
    await catchUp(h);
    assert.deepEqual(await scopeRows(h), ['user:u1>n1', 'user:u1>n2', 'user:u2>n3']);
    const before = { u1: await generationOf(h, 'user:u1'), u2: await generationOf(h, 'user:u2'), u3: await generationOf(h, 'user:u3') };

    // The drift is committed with writes behind it: a row added, one deleted, one moved to another scope.
    await h.sql.query(`BEGIN;
      ALTER TABLE public.notes SET SCHEMA archive;
      ALTER TABLE archive.notes RENAME TO old_notes;
      INSERT INTO archive.old_notes (id, owner) VALUES ('n4', 'u3');
      DELETE FROM archive.old_notes WHERE id = 'n2';
      UPDATE archive.old_notes SET owner = 'u3' WHERE id = 'n3';
      COMMIT`);
    await assert.rejects(catchUp(h), CapturePoisoned, 'capture blocks on the drift');
    assert.deepEqual(await scopeRows(h), ['user:u1>n1', 'user:u1>n2', 'user:u2>n3'], 'nothing is materialized while drifted');

    // Another relation is never taken for the registered one; nothing changes.
    await assert.rejects(rebind(h, 'public.notes', 'archive.other'), /not the registered one/);
    assert.equal((await h.sql.query('SELECT count(*)::int AS n FROM synchro.relation_rebindings')).rows[0].n, 0);

    const { rows } = await rebind(h, 'public.notes', 'archive.old_notes');
    assert.equal(rows[0]?.r.relation, 'archive.old_notes');
    await catchUp(h);
    const poisons = await h.sql.query("SELECT failure_class FROM synchro.wal_poison WHERE lifecycle = 'active'");
    assert.deepEqual(poisons.rows, [], 'the events written during the drift are covered, not quarantined');
    assert.deepEqual(await scopeRows(h), ['user:u1>n1', 'user:u3>n3', 'user:u3>n4'], 'the re-baseline carries the insert, the delete and the move');
    // Every scope whose contents the re-baseline changed rebuilds; u1 also held rows when it was rebound.
    assert.ok((await generationOf(h, 'user:u1')) > before.u1, 'user:u1 lost a row');
    assert.ok((await generationOf(h, 'user:u2')) > before.u2, 'user:u2 lost a row');
    assert.ok((await generationOf(h, 'user:u3')) > before.u3, 'user:u3 gained rows');
    const projection = await h.sql.query("SELECT to_regclass('synchro_projection.old_notes') IS NOT NULL AS renamed, to_regclass('synchro_projection.notes') IS NULL AS gone");
    assert.deepEqual(projection.rows[0], { renamed: true, gone: true });

    // Capture follows the relation under its new identity.
    await h.sql.query("INSERT INTO archive.old_notes (id, owner) VALUES ('n5', 'u1')");
    await catchUp(h);
    assert.ok((await scopeRows(h)).includes('user:u1>n5'));
  });
});

test('an event of the rebound relation after the rebinding, under yet another name, is drift again', async () => {
  await withCaptureServer(env(), SETUP, async (h) => {
    await catchUp(h);
    await h.sql.query('ALTER TABLE public.notes RENAME TO notes_v2');
    await rebind(h, 'public.notes', 'public.notes_v2');
    await catchUp(h);
    await h.sql.query("BEGIN; ALTER TABLE public.notes_v2 RENAME TO notes_v3; INSERT INTO public.notes_v3 (id) VALUES ('n9'); COMMIT");
    await assert.rejects(catchUp(h), CapturePoisoned);
    assert.equal((await h.sql.query("SELECT count(*)::int AS n FROM synchro.scope_rows WHERE pk_text = 'n9'")).rows[0].n, 0);
  });
});
