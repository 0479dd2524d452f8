/**
 * Scope checksums computed ahead of the terminal pull (decision 426): once capture catches up
 * after materializing rows, the server computes the new content version's checksum of every scope
 * a client asked for lately, and a reader of a version another reader is computing waits for that
 * result instead of computing it again. Both are counted by the statement that computes a scope
 * digest from stored row digests, seen on every session of this process.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { scopeChecksums } from '../../reference/server/core/checksums.ts';
import { ManifestStore } from '../../reference/server/core/manifests.ts';
import { catchUp, connect, useEnv, withCaptureServer } from './helpers.ts';
import { pull, rebuildAll } from './sync-flow.ts';

const env = useEnv();

const SETUP = `
CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL DEFAULT 'u1', body text NOT NULL DEFAULT '');
SELECT synchro.synchro_prepare_projection_view('public.notes');
CREATE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id
    UNION ALL SELECT 'shared' FROM synchro_projection.notes WHERE id = p_id AND body LIKE 'shared%';
END;
SELECT synchro.synchro_register_table('public.notes', membership_fn => 'public.note_scopes', composition => 'multi_scope');
SELECT synchro.synchro_register_shared_scope('shared');
`;
const SCOPES = ['shared', 'user:u1'];

/**
 * What every session of this process did, in order: `started <scope>` when the first statement of a
 * scope digest computation is sent (the aggregate of the scope's entries, or the read of its
 * content links), `digested <scope>` when its last answers (that aggregate, or the re-read of the
 * linked rows), `versions` when a read of content versions answers.
 */
const seen: string[] = [];
const original = pg.Client.prototype.query;
// biome-ignore lint/suspicious/noExplicitAny: the spy forwards whatever node-postgres accepts
(pg.Client.prototype as any).query = function (this: pg.Client, ...args: any[]) {
  const out = (original as (...a: unknown[]) => unknown).apply(this, args);
  const config = args[0] as string | { text?: string; values?: unknown[] };
  const text = typeof config === 'string' ? config : config?.text;
  if (!(out instanceof Promise) || typeof text !== 'string') return out;
  const scope = String(((typeof config === 'string' ? args[1] : config.values) as unknown[] | undefined)?.[0]);
  const aggregate = text.includes('string_agg(int8send(octet_length(pk_bytes))');
  if (aggregate || text.includes('FROM synchro.scope_content_links')) seen.push(`started ${scope}`);
  if (aggregate || text.includes('AND pk_bytes = ANY')) {
    return out.then((r) => {
      seen.push(`digested ${scope}`);
      return r;
    });
  }
  if (text.includes('FROM synchro.scope_content_versions')) {
    return out.then((r) => {
      seen.push('versions');
      return r;
    });
  }
  return out;
};

/** Waits, at most `ms`, until `done` holds. */
async function until(done: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

test('after capture catches up, a scope asked for lately has its new checksum computed before the next terminal pull, which computes none and answers the exact checksum', async () => {
  await withCaptureServer(env(), SETUP, async (h) => {
    const s = await connect(h);
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('n1', 'mine'), ('n2', 'shared one')`);
    await catchUp(h);
    const cursors: Record<string, string> = {};
    for (const scope of SCOPES) cursors[scope] = (await rebuildAll(h, s, scope)).finalCursor;
    const first = await pull(h, s, cursors, { active: SCOPES });
    assert.equal(first.status, 200, first.text);
    Object.assign(cursors, first.json.scope_cursors);

    const before = seen.length;
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('n3', 'mine too')`);
    await catchUp(h);
    await until(() => seen.slice(before).includes('digested user:u1'), 10_000, 'the changed scope was computed ahead');
    const ahead = seen.filter((e) => e.startsWith('started')).length;

    const next = await pull(h, s, cursors, { active: SCOPES });
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(
      next.json.changes.map((c: { pk: Record<string, string> }) => Object.values(c.pk)),
      [['n3']],
    );
    assert.equal(seen.filter((e) => e.startsWith('started')).length, ahead, 'the terminal pull found both checksums computed');
    // The rebuild computes its digest from the rows themselves, apart from any cache.
    assert.equal(next.json.checksums['user:u1'].digest, (await rebuildAll(h, s, 'user:u1')).checksum);
    assert.equal(next.json.checksums.shared.digest, first.json.checksums.shared.digest);
  });
});

test('a snapshot reading a content version whose checksum another snapshot is computing waits for that result and computes none', async () => {
  await withCaptureServer(env(), SETUP, async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('n1', 'mine'), ('n2', 'shared one')`);
    await catchUp(h);
    const catalog = await new ManifestStore(h.server.pool).catalog();
    const checksumAt = (db: pg.ClientBase) => scopeChecksums(db, catalog.tables, catalog.current.hash, ['user:u1']);
    const [locker, a, b] = [await h.server.pool.connect(), await h.server.pool.connect(), await h.server.pool.connect()];
    try {
      // The first reader's digest statement waits behind this lock until both readers have chosen what to do.
      await locker.query('BEGIN; LOCK TABLE synchro.scope_rows IN ACCESS EXCLUSIVE MODE');
      for (const db of [a, b]) await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const before = seen.length;
      const first = checksumAt(a);
      await until(() => seen.slice(before).includes('started user:u1'), 10_000, 'the first reader sent its digest statement');
      const second = checksumAt(b);
      // Once the second reader has its version, it either sends a digest statement of its own or waits.
      await until(() => seen.slice(before).filter((e) => e === 'versions').length === 2, 10_000, 'the second reader read its version');
      await new Promise((r) => setImmediate(r));
      await locker.query('COMMIT');
      const [x, y] = await Promise.all([first, second]);
      assert.deepEqual(
        seen.slice(before).filter((e) => e.startsWith('started')),
        ['started user:u1'],
      );
      assert.deepEqual(x, y);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      for (const db of [a, b]) await db.query('ROLLBACK');
      for (const db of [locker, a, b]) db.release();
    }
  });
});
