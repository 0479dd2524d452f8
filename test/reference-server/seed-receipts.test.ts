/**
 * Connect converts the continuation receipts of an installed portable seed
 * into cursors at the seed boundary, all together or not at all; a receipt is
 * never a pull cursor.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import { canonicalJson } from '../../harness/codec/index.ts';
import { exportSeed } from '../../reference/server/seed/export.ts';
import type { SeedManifest } from '../../reference/server/seed/manifest.ts';
import { catchUp, type Harness, type Reply, type Session, useEnv, withCaptureServer } from './helpers.ts';
import { pull } from './sync-flow.ts';

const env = useEnv();

// Rows of owner 'cat' are in the portable scope 'catalog', rows of owner 'cat2' in the portable scope 'other_catalog'.
const SETUP = `
CREATE TABLE public.items (id text PRIMARY KEY, owner text NOT NULL, title text NOT NULL);
SELECT synchro.synchro_prepare_projection_view('public.items');
CREATE FUNCTION public.item_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.items WHERE id = p_id
    UNION ALL SELECT 'catalog' FROM synchro_projection.items WHERE id = p_id AND owner = 'cat'
    UNION ALL SELECT 'other_catalog' FROM synchro_projection.items WHERE id = p_id AND owner = 'cat2';
END;
CREATE FUNCTION public.item_scopes_wider(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.items WHERE id = p_id
    UNION ALL SELECT 'catalog' FROM synchro_projection.items WHERE id = p_id AND owner IN ('cat', 'cat2')
    UNION ALL SELECT 'other_catalog' FROM synchro_projection.items WHERE id = p_id AND owner = 'cat2';
END;
SELECT synchro.synchro_register_table('public.items', membership_fn => 'public.item_scopes', composition => 'multi_scope');
SELECT synchro.synchro_register_shared_scope('catalog', true);
SELECT synchro.synchro_register_shared_scope('other_catalog', true);
INSERT INTO public.items VALUES ('c1', 'cat', 'one'), ('c2', 'cat', 'two'), ('d1', 'cat2', 'other');
`;

interface Seeded {
  h: Harness;
  manifest: SeedManifest;
  receipts: Record<string, string>;
}

async function withSeed(fn: (s: Seeded) => Promise<void>): Promise<void> {
  await withCaptureServer(env(), SETUP, async (h) => {
    await catchUp(h);
    assert.equal((await h.get('/sync/schema')).status, 200, 'the manifest is published');
    const db = new pg.Client({ connectionString: h.url });
    await db.connect();
    try {
      const { manifest } = await exportSeed(db);
      const receipts = Object.fromEntries(manifest.portable_scopes.map((s) => [s.id, s.continuation]));
      await fn({ h, manifest, receipts });
    } finally {
      await db.end();
    }
  });
}

/** The first connect of a client installed from the seed: the seed's schema reference, no generation, the receipts. */
async function seededConnect(h: Harness, manifest: SeedManifest, receipts: Record<string, string>): Promise<{ reply: Reply; session: Session }> {
  const clientId = `seeded-${randomUUID()}`;
  const reply = await h.post('/sync/connect', {
    client_id: clientId,
    platform: 'test',
    app_version: '1.0.0',
    protocol_version: 3,
    schema: { version: manifest.schema_version, hash: manifest.schema_hash },
    scope_set_version: 0,
    known_scopes: {},
    seed_receipts: receipts,
  });
  assert.equal(reply.status, 200, reply.text);
  const schemaDoc = (await h.get('/sync/schema')).json.manifest;
  const session: Session = {
    clientId,
    generation: reply.json.client_generation,
    schema: { version: manifest.schema_version, hash: manifest.schema_hash },
    manifest: schemaDoc,
    tableId: (name) => schemaDoc.tables.find((t: { name: string }) => t.name === name).table_id,
    field: () => '',
  };
  return { reply, session };
}

const cursorsOf = (reply: Reply): Record<string, string | null> => Object.fromEntries(reply.json.scopes.add.map((a: { id: string; cursor: string | null }) => [a.id, a.cursor]));

test('valid receipts become cursors at the seed boundary, and the next pull returns exactly what changed after the export', async () => {
  await withSeed(async ({ h, manifest, receipts }) => {
    await h.sql.query(`UPDATE public.items SET title = 'changed' WHERE id = 'c2'`);
    await h.sql.query(`INSERT INTO public.items VALUES ('c3', 'cat', 'three')`);
    await catchUp(h);
    const { reply, session } = await seededConnect(h, manifest, receipts);
    const cursors = cursorsOf(reply);
    assert.deepEqual(Object.keys(cursors).sort(), ['catalog', 'other_catalog', 'user:u1']);
    assert.equal(cursors['user:u1'], null, 'a scope without a receipt rebuilds');
    assert.equal(typeof cursors.catalog, 'string');
    assert.equal(typeof cursors.other_catalog, 'string');
    assert.deepEqual(reply.json.scope_cursor_updates, {});

    const next = await pull(h, session, { catalog: cursors.catalog as string, other_catalog: cursors.other_catalog as string }, { version: reply.json.scope_set_version });
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(next.json.rebuild, ['user:u1'], 'only the scope without a seed still rebuilds');
    assert.deepEqual(
      next.json.changes.map((c: { op: string; scope: string; pk: Record<string, unknown> }) => `${c.scope}:${c.op}:${Object.values(c.pk)[0]}`).sort(),
      ['catalog:upsert:c2', 'catalog:upsert:c3'],
    );
  });
});

test('receipts that do not all hold convert to nothing: every seeded scope rebuilds, and connect still succeeds', async () => {
  await withSeed(async ({ h, manifest, receipts }) => {
    const allNull = (reply: Reply) => {
      const c = cursorsOf(reply);
      assert.deepEqual([c.catalog, c.other_catalog], [null, null], reply.text);
    };
    // One scope's receipt missing: the set must equal the portable scopes.
    allNull((await seededConnect(h, manifest, { catalog: receipts.catalog as string })).reply);
    // A receipt filed under another scope.
    allNull((await seededConnect(h, manifest, { catalog: receipts.other_catalog as string, other_catalog: receipts.other_catalog as string })).reply);
    // An edited cardinality under the original MAC.
    const [prefix, payload, mac] = (receipts.catalog as string).split('.') as [string, string, string];
    const edited = Buffer.from(canonicalJson({ ...JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')), cardinality: '9' })).toString('base64url');
    allNull((await seededConnect(h, manifest, { ...receipts, catalog: `${prefix}.${edited}.${mac}` })).reply);
    // A membership change since the export moves the catalog scope to a new generation.
    await h.sql.query(`SELECT synchro.synchro_reconfigure_membership('public.items', 'public.item_scopes_wider')`);
    allNull((await seededConnect(h, manifest, receipts)).reply);
  });
});

test('a receipt presented as a pull cursor is a forged cursor', async () => {
  await withSeed(async ({ h, manifest, receipts }) => {
    const { reply, session } = await seededConnect(h, manifest, receipts);
    const res = await pull(h, session, { catalog: receipts.catalog as string }, { version: reply.json.scope_set_version });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.json.error.code, 'invalid_request');
  });
});
