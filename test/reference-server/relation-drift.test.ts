/**
 * Relation drift (core/relation-identity.ts): an active registration whose
 * stored OID no longer names the registered table with its schema, name,
 * replica identity DEFAULT and one immediate primary-key column is drift,
 * and the capture gate of pull and rebuild refuses with capture_blocked.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gateCapture } from '../../reference/server/core/gates.ts';
import { relationDrifted } from '../../reference/server/core/relation-identity.ts';
import { freshServer, OWNED_NOTES_SQL, useEnv } from './helpers.ts';

const env = useEnv();

test('renames, replica identity and key-shape changes are drift, undone drift is not, and drift closes the capture gate', async () => {
  const h = await freshServer(env(), OWNED_NOTES_SQL);
  try {
    const drifted = () => relationDrifted(h.sql);
    assert.equal(await drifted(), false, 'a fresh registration');
    await h.sql.query('ALTER TABLE public.notes RENAME TO renamed_notes');
    assert.equal(await drifted(), true, 'after a rename');
    await assert.rejects(gateCapture(h.sql, 'u1', 'c1'), (e: { code?: string; context?: { reason?: unknown } }) => e.code === 'temporary_unavailable' && e.context?.reason === 'capture_blocked');
    await h.sql.query('ALTER TABLE public.renamed_notes RENAME TO notes');
    assert.equal(await drifted(), false, 'after renaming it back');
    await h.sql.query('ALTER TABLE public.notes REPLICA IDENTITY FULL');
    assert.equal(await drifted(), true, 'with REPLICA IDENTITY FULL');
    await h.sql.query('ALTER TABLE public.notes REPLICA IDENTITY DEFAULT');
    assert.equal(await drifted(), false, 'with REPLICA IDENTITY DEFAULT again');
    await h.sql.query('ALTER TABLE public.notes DROP CONSTRAINT notes_pkey, ADD PRIMARY KEY (id) DEFERRABLE');
    assert.equal(await drifted(), true, 'with a deferrable key');
    await h.sql.query('ALTER TABLE public.notes DROP CONSTRAINT notes_pkey, ADD PRIMARY KEY (id, owner)');
    assert.equal(await drifted(), true, 'with a composite key');
    await h.sql.query('ALTER TABLE public.notes DROP CONSTRAINT notes_pkey, ADD PRIMARY KEY (id)');
    assert.equal(await drifted(), false, 'with one immediate key column again');
    await h.sql.query('DROP TABLE public.notes; CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL)');
    assert.equal(await drifted(), true, 'after a drop and re-create under the same name');
  } finally {
    await h.close();
  }
});
