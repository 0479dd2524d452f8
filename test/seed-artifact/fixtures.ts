/**
 * A server database with one portable shared scope, 'catalog', holding five
 * rows (owner 'cat'), plus one row of user u1, and a wider membership
 * function that a test can switch to after an export (a membership change
 * the export's receipts no longer describe).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { catchUp, type Env, type Harness, withCaptureServer } from '../reference-server/helpers.ts';

export const SEED_SETUP = `
CREATE TABLE public.items (id text PRIMARY KEY, owner text NOT NULL, title text NOT NULL);
SELECT synchro.synchro_prepare_projection_view('public.items');
CREATE FUNCTION public.item_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.items WHERE id = p_id
    UNION ALL SELECT 'catalog' FROM synchro_projection.items WHERE id = p_id AND owner = 'cat';
END;
CREATE FUNCTION public.item_scopes_wider(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.items WHERE id = p_id
    UNION ALL SELECT 'catalog' FROM synchro_projection.items WHERE id = p_id AND owner IN ('cat', 'cat2');
END;
SELECT synchro.synchro_register_table('public.items', membership_fn => 'public.item_scopes', composition => 'multi_scope');
SELECT synchro.synchro_register_shared_scope('catalog', true);
INSERT INTO public.items VALUES ('c1', 'cat', 'one'), ('c2', 'cat', 'two'), ('c3', 'cat', 'three'), ('c4', 'cat', 'four'), ('c5', 'cat', 'five'), ('u1', 'u1', 'mine');
`;

/** A capture server on SEED_SETUP (materialized, manifest published), a pg connection to its database and a scratch directory. */
export async function withExportDb(env: Env, fn: (h: Harness, db: pg.Client, dir: string) => Promise<void>): Promise<void> {
  await withCaptureServer(env, SEED_SETUP, async (h) => {
    await catchUp(h);
    assert.equal((await h.get('/sync/schema')).status, 200, 'the manifest is published');
    const db = new pg.Client({ connectionString: h.url });
    await db.connect();
    const dir = mkdtempSync(join(tmpdir(), 'seed-artifact-'));
    try {
      await fn(h, db, dir);
    } finally {
      await db.end();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
