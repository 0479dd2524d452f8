/**
 * Which scopes a seed holds: exactly the shared scopes the operator declared
 * portable, never a user scope that has rows; with none declared the export
 * publishes a schema-only seed (no rows, no provenance, no receipt) that a
 * client verifies like any other.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { verifySeedFile } from '../../reference/client/local/seed.ts';
import { buildSeedArtifact } from '../../reference/seed-artifact/build.ts';
import { useEnv } from '../reference-server/helpers.ts';
import { withExportDb } from './fixtures.ts';

const env = useEnv();

function scopeIds(entries: unknown): string[] {
  return (entries as { id: string }[]).map((e) => e.id);
}

function count(path: string, sql: string): number {
  const file = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return (file.prepare(sql).get() as { n: number }).n;
  } finally {
    file.close();
  }
}

test('the seed holds the declared portable scope only: the user row stays out, and so does its user scope', async () => {
  await withExportDb(env(), async (_h, db, dir) => {
    const out = join(dir, 'seed-1.sqlite');
    const result = await buildSeedArtifact(db, { out, pageLimit: 10 });
    assert.deepEqual(scopeIds(result.exportManifest.portable_scopes), ['catalog']);
    assert.equal(count(out, "SELECT count(*) AS n FROM items WHERE id = 'u1'"), 0, 'the row of user u1 is not in the seed');
    assert.equal(count(out, "SELECT count(*) AS n FROM _synchro_scope_rows WHERE scope_id <> 'catalog'"), 0, 'no provenance names another scope');
  });
});

test('with no scope declared portable the export publishes a schema-only seed that verifies', async () => {
  await withExportDb(env(), async (_h, db, dir) => {
    await db.query("SELECT synchro.synchro_register_shared_scope('catalog', false)");
    const out = join(dir, 'seed-empty.sqlite');
    const result = await buildSeedArtifact(db, { out, pageLimit: 10 });
    assert.deepEqual(scopeIds(result.exportManifest.portable_scopes), []);
    for (const table of ['items', '_synchro_scope_rows', '_synchro_seed_receipts', '_synchro_row_versions']) {
      assert.equal(count(out, `SELECT count(*) AS n FROM ${table}`), 0, `${table} is empty`);
    }
    assert.deepEqual(verifySeedFile(out).receipts, [], 'the client verifies the file and finds no receipt');
  });
});

test('a seed file whose receipts were removed while its provenance stayed is still refused by the receipt check', async () => {
  await withExportDb(env(), async (_h, db, dir) => {
    const out = join(dir, 'seed-1.sqlite');
    await buildSeedArtifact(db, { out, pageLimit: 10 });
    const file = new Database(out);
    file.exec('DELETE FROM _synchro_seed_receipts');
    file.close();
    assert.throws(() => verifySeedFile(out), (e: Error & { check?: string; details?: { check?: string } }) => /no continuation receipt/.test(e.message));
  });
});
