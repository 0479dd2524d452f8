/**
 * A client opened on a verified portable seed: it starts with the seeded rows,
 * versions, provenance and receipts but no cursor and no identity; it writes
 * offline against the seeded versions; its first connect presents the
 * receipts, and it then either continues from the seed boundary (pulling only
 * what changed after the export) or, when the receipts are stale, rebuilds
 * the scope after pushing its pending intent. An unassigned seeded scope is
 * dropped except for rows with pending intent.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { SynchroClient } from '../../reference/client/client.ts';
import { ClientError } from '../../reference/client/errors.ts';
import { httpTransport, NetworkError, type Transport } from '../../reference/client/sync/transport.ts';
import { buildSeedArtifact } from '../../reference/seed-artifact/build.ts';
import { exportSeed } from '../../reference/server/seed/export.ts';
import { catchUp, type Harness, useEnv } from '../reference-server/helpers.ts';
import { withExportDb } from '../seed-artifact/fixtures.ts';

const env = useEnv();

interface Sent {
  path: string;
  body: Record<string, unknown>;
  response?: Record<string, unknown>;
}

/** The real HTTP transport, recording each request; `fail` makes chosen paths look like a lost network. */
async function recording(h: Harness, fail: (path: string) => boolean = () => false): Promise<{ transport: Transport; sent: Sent[] }> {
  const token = await h.token('u1');
  const http = httpTransport(h.server.url, () => token);
  const sent: Sent[] = [];
  const transport: Transport = async (path, body) => {
    const entry: Sent = { path, body: JSON.parse(Buffer.from(body).toString('utf8')) };
    sent.push(entry);
    if (fail(path)) throw new NetworkError(`${path}: offline for the test`);
    const res = await http(path, body);
    if (res.status === 200) entry.response = JSON.parse(Buffer.from(res.body).toString('utf8'));
    return res;
  };
  return { transport, sent };
}

const titles = (c: SynchroClient) => Object.fromEntries((c.query('SELECT id, title FROM items ORDER BY id') as { id: string; title: string }[]).map((r) => [r.id, r.title]));

test('a seeded client reads the seed offline, queues against seeded versions, and continues from the seed boundary', async () => {
  await withExportDb(env(), async (h, db, dir) => {
    const artifact = join(dir, 'seed.sqlite');
    const built = await buildSeedArtifact(db, { out: artifact, pageLimit: 2 });
    // Nothing changed since the build, so a second export states the versions the seed must carry.
    const again = await exportSeed(db);
    const exported = (again.pages.catalog ?? []).flatMap((p) => p.records).map((r) => [String(Object.values(r.pk)[0]), r.server_version]);
    // Committed after the export: only an incremental pull can bring these.
    await h.sql.query("UPDATE public.items SET title = 'ONE' WHERE id = 'c1'; INSERT INTO public.items VALUES ('c6', 'cat', 'six')");
    await catchUp(h);
    const { transport, sent } = await recording(h);
    const path = join(dir, 'client.db');
    const client = SynchroClient.open({ path, clientId: 'seeded-1', transport, pullLimit: 2, seedArtifact: artifact });
    try {
      assert.equal(client.status().state, 'local_ready');
      assert.deepEqual(titles(client), { c1: 'one', c2: 'two', c3: 'three', c4: 'four', c5: 'five' });
      const versions = client.inspectRowVersions();
      assert.deepEqual(versions.map((v) => [v.recordId, v.serverVersion]), exported, 'each row carries its exported server_version');
      assert.deepEqual(client.inspectProvenance().map((p) => [p.scopeId, p.recordId]), versions.map((v) => ['catalog', v.recordId]));
      const scopes = client.inspectScopes();
      assert.deepEqual(scopes.scopes, [], 'no cursor before the first connect');
      assert.equal(scopes.clientGeneration, null);
      assert.deepEqual(scopes.schema, built.schema);
      const receipts = client.inspectSeedReceipts();
      assert.deepEqual(receipts.map((r) => [r.scopeId, r.cardinality, r.checksum]), [['catalog', 5, built.scopes[0]?.checksum]]);
      assert.deepEqual(client.inspectMutations(), []);

      client.execute("UPDATE items SET title = 'two (edited offline)' WHERE id = 'c2'");
      const [queued] = client.inspectMutations();
      assert.equal(queued?.recordId, 'c2');
      assert.equal(queued?.baseVersion, versions.find((v) => v.recordId === 'c2')?.serverVersion, 'the seeded version is the CAS base');

      const { completion } = await client.syncNow();
      assert.equal(completion, 'idle', JSON.stringify(client.status()));
      const connect = sent.find((s) => s.path === '/sync/connect')?.body;
      assert.deepEqual(connect?.seed_receipts, { catalog: receipts[0]?.receipt });
      assert.equal(connect?.client_generation, undefined, 'a seeded client has no generation yet');
      assert.deepEqual(connect?.schema, built.schema);
      assert.deepEqual(
        sent.filter((s) => s.path === '/sync/rebuild' && s.body.scope === 'catalog'),
        [],
        'the seeded scope is not rebuilt',
      );
      // Pulls from the seed boundary bring what changed after the export, never the rows the seed already held unchanged.
      const pulled = sent
        .filter((s) => s.path === '/sync/pull')
        .flatMap((s) => (s.response?.changes ?? []) as { scope: string; pk: Record<string, unknown> }[])
        .filter((c) => c.scope === 'catalog')
        .map((c) => String(Object.values(c.pk)[0]));
      assert.ok(pulled.includes('c1') && pulled.includes('c6'), `post-boundary changes arrive by pull: ${pulled.join(' ')}`);
      for (const id of ['c3', 'c4', 'c5']) assert.ok(!pulled.includes(id), `${id} was seeded and unchanged, yet pulled again`);
      assert.deepEqual(titles(client), { c1: 'ONE', c2: 'two (edited offline)', c3: 'three', c4: 'four', c5: 'five', c6: 'six', u1: 'mine' });
      assert.deepEqual(client.inspectSeedReceipts(), [], 'receipts are gone once converted');
      const catalog = client.inspectScopes().scopes.find((s) => s.scopeId === 'catalog');
      assert.equal(catalog?.rebuildRequired, false);
      assert.equal(typeof catalog?.cursor, 'string');
      const server = await h.sql.query("SELECT title FROM public.items WHERE id = 'c2'");
      assert.equal(server.rows[0]?.title, 'two (edited offline)', 'the offline write reached the server');
    } finally {
      client.close();
    }
  });
});

test('a stale receipt rebuilds the seeded scope after the pending intent is pushed', async () => {
  await withExportDb(env(), async (h, db, dir) => {
    const artifact = join(dir, 'seed.sqlite');
    await buildSeedArtifact(db, { out: artifact, pageLimit: 2 });
    // A membership change after the export: the receipt's membership generation is no longer current.
    await h.sql.query("INSERT INTO public.items VALUES ('d1', 'cat2', 'moved in')");
    await h.sql.query(`SELECT synchro.synchro_reconfigure_membership('public.items', 'public.item_scopes_wider')`);
    await catchUp(h);
    const { transport, sent } = await recording(h);
    const client = SynchroClient.open({ path: join(dir, 'client.db'), clientId: 'seeded-2', transport, seedArtifact: artifact });
    try {
      client.execute("UPDATE items SET title = 'two (edited offline)' WHERE id = 'c2'");
      const { completion } = await client.syncNow();
      assert.equal(completion, 'idle', JSON.stringify(client.status()));
      const paths = sent.map((s) => (s.path === '/sync/rebuild' ? `rebuild:${String(s.body.scope)}` : s.path));
      const push = paths.indexOf('/sync/push');
      const rebuild = paths.indexOf('rebuild:catalog');
      assert.ok(rebuild >= 0, `the seeded scope rebuilds: ${paths.join(' ')}`);
      assert.ok(push >= 0 && push < rebuild, `pending intent is pushed before the rebuild: ${paths.join(' ')}`);
      assert.deepEqual(titles(client), { c1: 'one', c2: 'two (edited offline)', c3: 'three', c4: 'four', c5: 'five', d1: 'moved in', u1: 'mine' });
      assert.deepEqual(client.inspectSeedReceipts(), []);
      assert.equal(client.inspectScopes().scopes.find((s) => s.scopeId === 'catalog')?.rebuildRequired, false);
    } finally {
      client.close();
    }
  });
});

test('an unassigned seeded scope drops its unchanged rows and keeps the row with pending intent', async () => {
  await withExportDb(env(), async (h, db, dir) => {
    const artifact = join(dir, 'seed.sqlite');
    await buildSeedArtifact(db, { out: artifact, pageLimit: 2 });
    await h.sql.query(`SELECT synchro.synchro_unregister_shared_scope('catalog')`);
    // Push never arrives, so what the connect alone did stays visible.
    const { transport } = await recording(h, (path) => path === '/sync/push');
    const path = join(dir, 'client.db');
    copyFileSync(artifact, join(dir, 'copy.sqlite'));
    const client = SynchroClient.open({ path, clientId: 'seeded-3', transport, seedArtifact: join(dir, 'copy.sqlite') });
    try {
      client.execute("UPDATE items SET title = 'two (edited offline)' WHERE id = 'c2'");
      await client.syncNow();
      assert.deepEqual(client.inspectScopes().scopes.map((s) => s.scopeId), ['user:u1']);
      assert.deepEqual(titles(client), { c2: 'two (edited offline)' });
      assert.deepEqual(client.inspectProvenance(), []);
      assert.deepEqual(client.inspectMutations().map((m) => [m.recordId, m.status]), [['c2', 'sealed']]);
      assert.deepEqual(client.inspectSeedReceipts(), []);
    } finally {
      client.close();
    }
  });
});

test('a damaged seed is refused on open and leaves no client database', async () => {
  await withExportDb(env(), async (h, db, dir) => {
    const artifact = join(dir, 'seed.sqlite');
    await buildSeedArtifact(db, { out: artifact, pageLimit: 2 });
    const { transport } = await recording(h);
    const damaged = join(dir, 'damaged.sqlite');
    copyFileSync(artifact, damaged);
    // Drop one provenance row by hand: the copy no longer digests to its receipt.
    const Database = (await import('better-sqlite3')).default;
    const raw = new Database(damaged);
    raw.pragma('journal_mode = DELETE');
    raw.prepare("DELETE FROM _synchro_scope_rows WHERE record_id = 'c3'").run();
    raw.close();
    const path = join(dir, 'client.db');
    assert.throws(
      () => SynchroClient.open({ path, clientId: 'seeded-4', transport, seedArtifact: damaged }),
      (e: unknown) => e instanceof ClientError && e.code === 'seed_invalid',
    );
    assert.equal(existsSync(path), false);
    writeFileSync(join(dir, 'not-sqlite.sqlite'), 'not a database');
    assert.throws(() => SynchroClient.open({ path, clientId: 'seeded-4', transport, seedArtifact: join(dir, 'not-sqlite.sqlite') }), ClientError);
    assert.equal(existsSync(path), false);
  });
});
