import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import { canonicalJson, compareBytes, digestRow, fromHex, readTableShape, ScopeDigestBuilder, toHex } from '../../harness/codec/index.ts';
import { openReceipt } from '../../reference/server/core/seed-receipt.ts';
import { seal } from '../../reference/server/core/signed-token.ts';
import { SeedRequestError, SeedTransactionError } from '../../reference/server/seed/errors.ts';
import { exportSeed } from '../../reference/server/seed/export.ts';
import { EXPORT_TRANSACTION } from '../../reference/server/seed/export-session.ts';
import { type SeedManifest, seedManifest } from '../../reference/server/seed/manifest.ts';
import { seedPage } from '../../reference/server/seed/pages.ts';
import { freshServer, type Harness, useEnv } from './helpers.ts';

const env = useEnv();

// Rows of owner 'cat' also belong to the portable scope, rows of owner 'priv' to a shared scope that is not portable.
const SETUP = `
CREATE TABLE public.items (id text PRIMARY KEY, owner text NOT NULL, title text NOT NULL);
SELECT synchro.synchro_prepare_projection_view('public.items');
CREATE FUNCTION public.item_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.items WHERE id = p_id
    UNION ALL SELECT 'catalog' FROM synchro_projection.items WHERE id = p_id AND owner = 'cat'
    UNION ALL SELECT 'other_catalog' FROM synchro_projection.items WHERE id = p_id AND owner = 'cat2'
    UNION ALL SELECT 'private' FROM synchro_projection.items WHERE id = p_id AND owner = 'priv';
END;
SELECT synchro.synchro_register_table('public.items', membership_fn => 'public.item_scopes', composition => 'multi_scope');
SELECT synchro.synchro_register_shared_scope('catalog', true);
SELECT synchro.synchro_register_shared_scope('other_catalog', true);
SELECT synchro.synchro_register_shared_scope('private', false);
INSERT INTO public.items VALUES ('c1', 'cat', 'one'), ('c5', 'cat', 'five'), ('c3', 'cat', 'three'), ('c2', 'cat', 'two'), ('c4', 'cat', 'four'),
  ('d1', 'cat2', 'other'), ('p1', 'priv', 'private'), ('u1', 'u1', 'mine');
`;

async function withSeedServer(fn: (h: Harness, connect: () => Promise<pg.Client>) => Promise<void>): Promise<void> {
  const h = await freshServer(env(), SETUP, { capture: true });
  const clients: pg.Client[] = [];
  try {
    await (h.server.capture as NonNullable<Harness['server']['capture']>).catchUp(15_000);
    // Publishes the manifest of the registered table.
    assert.equal((await h.get('/sync/schema')).status, 200);
    await fn(h, async () => {
      const c = new pg.Client({ connectionString: h.url });
      await c.connect();
      clients.push(c);
      return c;
    });
  } finally {
    for (const c of clients) await c.end().catch(() => undefined);
    await h.close();
  }
}

/** The scope digest the harness codec computes over exported records under the published manifest. */
async function codecScopeDigest(h: Harness, scope: string, records: { table: string; row: unknown; server_version: string; row_checksum: { digest: string } }[]): Promise<string> {
  const manifest = (await h.get('/sync/schema')).json.manifest;
  const builder = new ScopeDigestBuilder(fromHex(manifest.schema_hash), scope);
  for (const r of records) {
    const table = manifest.tables.find((t: { table_id: string }) => t.table_id === r.table);
    const { identity, digest } = digestRow({ schemaHash: manifest.schema_hash, table: readTableShape(table), row: r.row, serverVersion: r.server_version });
    assert.equal(r.row_checksum.digest, toHex(digest), 'each record digest is the codec row digest');
    builder.add(identity, digest);
  }
  return toHex(builder.finish());
}

async function refusal(work: Promise<unknown>): Promise<SeedRequestError> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof SeedRequestError, `expected a refusal, got ${String(error)}`);
  assert.equal(error.body().error.code, 'invalid_request');
  return error;
}

test('the manifest lists only portable shared scopes, with their cardinality and codec scope digest', async () => {
  await withSeedServer(async (h, connect) => {
    const { manifest, pages } = await exportSeed(await connect(), { pageLimit: 2 });
    assert.deepEqual(
      manifest.portable_scopes.map((s) => s.id),
      ['catalog', 'other_catalog'],
    );
    const entry = manifest.portable_scopes[0] as SeedManifest['portable_scopes'][number];
    assert.equal(entry.cardinality, 5);
    const records = (pages.catalog ?? []).flatMap((p) => p.records);
    assert.equal(entry.checksum.digest, await codecScopeDigest(h, 'catalog', records as never));
    assert.deepEqual(manifest.snapshot_boundary.position_kind, 'transaction_end');
    assert.match(manifest.export_manifest_hash, /^[0-9a-f]{64}$/);
  });
});

test('pages are contiguous in row-identity order and the last one has no token', async () => {
  await withSeedServer(async (h, connect) => {
    const { pages } = await exportSeed(await connect(), { pageLimit: 2, scopes: ['catalog'] });
    const list = pages.catalog ?? [];
    assert.deepEqual(
      list.map((p) => [p.records.length, p.has_more, p.page_token === null]),
      [
        [2, true, false],
        [2, true, false],
        [1, false, true],
      ],
    );
    const records = list.flatMap((p) => p.records);
    assert.deepEqual(
      records.map((r) => r.pk),
      ['c1', 'c2', 'c3', 'c4', 'c5'].map((id) => ({ [Object.keys(records[0]?.pk ?? {})[0] as string]: id })),
    );
    for (const r of records) assert.deepEqual(Object.keys(r).sort(), ['pk', 'row', 'row_checksum', 'server_version', 'table']);
    const manifest = (await h.get('/sync/schema')).json.manifest;
    const identities = records.map(
      (r) => digestRow({ schemaHash: manifest.schema_hash, table: readTableShape(manifest.tables[0]), row: r.row, serverVersion: r.server_version }).identity,
    );
    for (let k = 1; k < identities.length; k++) assert.ok(compareBytes(identities[k - 1] as Uint8Array, identities[k] as Uint8Array) < 0);
  });
});

test('a tampered, cross-scope, wrong-ordinal, cross-connection or cross-transaction token is refused', async () => {
  await withSeedServer(async (_h, connect) => {
    const a = await connect();
    await a.query(EXPORT_TRANSACTION);
    const manifest = await seedManifest(a, 2);
    const [catalog, other] = manifest.portable_scopes as [SeedManifest['portable_scopes'][number], SeedManifest['portable_scopes'][number]];
    const first = await seedPage(a, 'catalog', catalog.page_token, null, 0, 2);
    const next = first.page_token as string;
    // The same token again gives the same page.
    assert.deepEqual(await seedPage(a, 'catalog', catalog.page_token, null, 0, 2), first);
    const flipped = `${next.slice(0, -2)}${next.at(-2) === 'A' ? 'B' : 'A'}${next.at(-1)}`;
    await refusal(seedPage(a, 'catalog', flipped, null, 2, 2));
    await refusal(seedPage(a, 'other_catalog', catalog.page_token, null, 0, 2));
    await refusal(seedPage(a, 'catalog', other.page_token, null, 0, 2));
    await refusal(seedPage(a, 'catalog', next, null, 4, 2));
    await refusal(seedPage(a, 'catalog', next, null, 2, 3));
    await refusal(seedPage(a, 'private', catalog.page_token, null, 0, 2));
    // A payload re-signed by nobody: the member changed, the MAC kept.
    const [prefix, payload, mac] = next.split('.') as [string, string, string];
    const changed = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')), next_row_ordinal: '4' })).toString('base64url');
    await refusal(seedPage(a, 'catalog', `${prefix}.${changed}.${mac}`, null, 4, 2));
    // The right payload signed with another secret under the same key ID.
    const value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    await refusal(seedPage(a, 'catalog', seal('sp1', 'synchro:v3:seed-page:v1', { secret: randomBytes(64) }, value), null, 2, 2));
    // The right payload with its members out of canonical order, under a MAC made with the real key.
    const { rows } = await a.query("SELECT secret FROM synchro.token_keys WHERE key_id = $1", [value.key_id]);
    const reordered = Buffer.from(JSON.stringify(Object.fromEntries(Object.entries(value).reverse())), 'utf8');
    const realMac = createHmac('sha256', rows[0].secret).update('synchro:v3:seed-page:v1').update(Buffer.from([0])).update(reordered).digest();
    await refusal(seedPage(a, 'catalog', `sp1.${reordered.toString('base64url')}.${realMac.toString('base64url')}`, null, 2, 2));
    // The same bytes in canonical order verify, so the refusal above is the order alone.
    const canonical = Buffer.from(payload, 'base64url');
    const canonicalMac = createHmac('sha256', rows[0].secret).update('synchro:v3:seed-page:v1').update(Buffer.from([0])).update(canonical).digest();
    assert.equal((await seedPage(a, 'catalog', `sp1.${payload}.${canonicalMac.toString('base64url')}`, null, 2, 2)).records.length, 2);

    // Another connection with its own export does not accept connection A's token.
    const b = await connect();
    await b.query(EXPORT_TRANSACTION);
    await seedManifest(b, 2);
    await refusal(seedPage(b, 'catalog', next, null, 2, 2));
    await b.query('ROLLBACK');

    // After A's transaction ends, the token is dead on A too, even in a new export.
    await a.query('ROLLBACK');
    await a.query(EXPORT_TRANSACTION);
    await refusal(seedPage(a, 'catalog', next, null, 2, 2));
    await seedManifest(a, 2);
    await refusal(seedPage(a, 'catalog', next, null, 2, 2));
    await a.query('ROLLBACK');
  });
});

test('each portable scope gets a continuation receipt binding the export, its generations, boundary, cardinality and digest, under its own key', async () => {
  await withSeedServer(async (_h, connect) => {
    const a = await connect();
    await a.query(EXPORT_TRANSACTION);
    const manifest = await seedManifest(a, 2);
    const [catalog, other] = manifest.portable_scopes as [SeedManifest['portable_scopes'][number], SeedManifest['portable_scopes'][number]];
    const opened = await openReceipt(a, catalog.continuation);
    assert.ok(opened !== undefined, 'the receipt verifies');
    assert.deepEqual(
      { ...opened, key_id: '', issued_at: '' },
      {
        kind: 'portable_seed_continuation',
        version: 1,
        key_id: '',
        export_id: manifest.export_id,
        export_manifest_hash: manifest.export_manifest_hash,
        schema_hash: manifest.schema_hash,
        scope_id: 'catalog',
        registry_generation: catalog.registry_generation,
        membership_generation: catalog.membership_generation,
        retention_generation: catalog.retention_generation,
        stream_generation: manifest.stream_generation,
        snapshot_boundary: manifest.snapshot_boundary,
        cardinality: '5',
        checksum: catalog.checksum,
        issued_at: '',
      },
    );
    assert.match(opened.issued_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    const keys = (await a.query("SELECT key_id, purpose FROM synchro.token_keys WHERE key_id = $1", [opened.key_id])).rows;
    assert.deepEqual(keys.map((k) => k.purpose), ['seed_continuation'], 'receipts have a key of their own');
    // The page calls accept the receipt this export issued for the scope, and no other.
    assert.equal((await seedPage(a, 'catalog', catalog.page_token, catalog.continuation, 0, 2)).records.length, 2);
    await refusal(seedPage(a, 'catalog', catalog.page_token, other.continuation, 0, 2));
    // An edited member (a larger cardinality) under the original MAC does not verify.
    const [prefix, payload, mac] = catalog.continuation.split('.') as [string, string, string];
    const edited = Buffer.from(canonicalJson({ ...JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')), cardinality: '6' })).toString('base64url');
    assert.equal(await openReceipt(a, `${prefix}.${edited}.${mac}`), undefined);
    // The same payload signed with the page-token key is not a receipt.
    const pageKey = (await a.query("SELECT secret FROM synchro.token_keys WHERE purpose = 'seed_page' AND state = 'active'")).rows[0].secret;
    const value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    assert.equal(await openReceipt(a, seal('sc1', 'synchro:v3:seed-continuation:v1', { secret: pageKey }, value)), undefined);
    assert.equal(await openReceipt(a, seal('sc1', 'synchro:v3:seed-page:v1', { secret: pageKey }, value)), undefined);
    await a.query('ROLLBACK');
  });
});

test('a transaction that is not serializable, read only and deferrable is refused', async () => {
  await withSeedServer(async (_h, connect) => {
    const db = await connect();
    for (const begin of ['BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', 'BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY', 'BEGIN ISOLATION LEVEL SERIALIZABLE DEFERRABLE']) {
      await db.query(begin);
      await assert.rejects(seedManifest(db, 10), SeedTransactionError, begin);
      await db.query('ROLLBACK');
    }
    await assert.rejects(seedManifest(db, 10), SeedTransactionError, 'outside any transaction');
  });
});

test('a row committed after the manifest is not visible in later pages', async () => {
  await withSeedServer(async (h, connect) => {
    const db = await connect();
    await db.query(EXPORT_TRANSACTION);
    const manifest = await seedManifest(db, 2);
    const entry = manifest.portable_scopes[0] as SeedManifest['portable_scopes'][number];
    await h.sql.query("INSERT INTO public.items VALUES ('c0', 'cat', 'late'), ('c9', 'cat', 'later')");
    await (h.server.capture as NonNullable<Harness['server']['capture']>).catchUp(15_000);
    const seen: string[] = [];
    let token: string | null = entry.page_token;
    for (let ordinal = 0; token !== null; ordinal += 2) {
      const page = await seedPage(db, 'catalog', token, null, ordinal, 2);
      seen.push(...page.records.map((r) => String(Object.values(r.pk)[0])));
      token = page.page_token;
    }
    assert.deepEqual(seen, ['c1', 'c2', 'c3', 'c4', 'c5']);
    assert.deepEqual(await seedManifest(db, 2), manifest);
    await db.query('ROLLBACK');
    // A new export sees them.
    const again = await exportSeed(db, { pageLimit: 2, scopes: ['catalog'] });
    assert.equal(again.manifest.portable_scopes[0]?.cardinality, 7);
  });
});

test('the same limit repeated gives the identical manifest; another limit is refused', async () => {
  await withSeedServer(async (_h, connect) => {
    const db = await connect();
    await db.query(EXPORT_TRANSACTION);
    const first = await seedManifest(db, 3);
    const second = await seedManifest(db, 3);
    assert.equal(JSON.stringify(second), JSON.stringify(first));
    await refusal(seedManifest(db, 4));
    await db.query('ROLLBACK');
    await db.query(EXPORT_TRANSACTION);
    await refusal(seedManifest(db, 0));
    await refusal(seedManifest(db, 1001));
    const other = await seedManifest(db, 3);
    assert.notEqual(other.export_id, first.export_id);
    await db.query('ROLLBACK');
  });
});

test('the command line export prints the manifest and pages, or the refusal body with status 3', async () => {
  await withSeedServer(async (h) => {
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string }>((resolve) => {
        execFile(process.execPath, ['reference/server/seed/main.ts', '--database-url', h.url, ...args], (error, stdout) => {
          resolve({ code: error === null ? 0 : Number(error.code), stdout });
        });
      });
    const ok = await run(['--page-limit', '2', '--scope', 'catalog']);
    assert.equal(ok.code, 0);
    const body = JSON.parse(ok.stdout);
    assert.equal(body.manifest.page_limit, 2);
    assert.deepEqual(Object.keys(body.pages), ['catalog']);
    assert.equal(body.pages.catalog.length, 3);
    const refused = await run(['--scope', 'private']);
    assert.equal(refused.code, 3);
    assert.equal(JSON.parse(refused.stdout).error.code, 'invalid_request');
  });
});

test('records follow the complete row identity, so table t9 comes before table t10', async () => {
  await withSeedServer(async (h, connect) => {
    const filler = Array.from({ length: 7 }, (_, k) => `CREATE TABLE public.filler${k} (id text PRIMARY KEY); SELECT synchro.synchro_register_table('public.filler${k}');`).join('\n');
    const placed = (name: string) => `
      CREATE TABLE public.${name} (id text PRIMARY KEY);
      CREATE FUNCTION public.${name}_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'other_catalog'::text; END;
      SELECT synchro.synchro_register_table('public.${name}', membership_fn => 'public.${name}_scopes');`;
    await h.sql.query(`${filler}${placed('ninth')}${placed('tenth')}`);
    const ids = await h.sql.query("SELECT physical_relation AS name, table_id FROM synchro.relations WHERE physical_relation IN ('ninth', 'tenth') ORDER BY 1");
    assert.deepEqual(
      ids.rows.map((r) => r.table_id),
      ['t9', 't10'],
    );
    await h.sql.query("INSERT INTO public.tenth VALUES ('a'); INSERT INTO public.ninth VALUES ('b')");
    await (h.server.capture as NonNullable<Harness['server']['capture']>).catchUp(15_000);
    assert.equal((await h.get('/sync/schema')).status, 200);
    const { pages } = await exportSeed(await connect(), { pageLimit: 10, scopes: ['other_catalog'] });
    assert.deepEqual(
      (pages.other_catalog ?? []).flatMap((p) => p.records.map((r) => r.table)),
      ['t1', 't9', 't10'],
    );
  });
});
