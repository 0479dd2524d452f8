import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import { digestRow, readTableShape, toHex } from '../../harness/codec/index.ts';
import { checkMessage, type RowDigestFn, type SchemaManifest } from '../../harness/wire/index.ts';
import { ManifestStore } from '../../reference/server/core/manifests.ts';
import { pushInCallerTransaction } from '../../reference/server/push/handler.ts';
import { connect, deleteRow, freshServer, type Harness, insertNote, NOTES_SQL, pushBody, type Session, snapshot, updateNote, useEnv } from './helpers.ts';

const env = useEnv();

async function withServer(fn: (h: Harness, s: Session) => Promise<void>, setup = NOTES_SQL): Promise<void> {
  const h = await freshServer(env(), setup);
  try {
    await fn(h, await connect(h));
  } finally {
    await h.close();
  }
}

/** Row digests recomputed independently of the server, from the published manifest. */
const rowDigest: RowDigestFn = ({ manifest, table, pk, row, serverVersion }) =>
  toHex(digestRow({ schemaHash: manifest.schema_hash, table: readTableShape(manifest.tables.find((t) => t.table_id === table)), row, pk: Object.values(pk)[0], serverVersion }).digest);

/** Every 200 push body must satisfy the wire schema and its cross-field rules, rows and checksums included. */
async function assertValidResponse(h: Harness, request: unknown, text: string) {
  const { rows } = await h.sql.query<{ body_text: string }>('SELECT body_text FROM synchro.manifests');
  const manifests = rows.map((r) => JSON.parse(r.body_text) as SchemaManifest);
  const result = checkMessage('push-response', JSON.parse(text), { request, manifests, rowDigest });
  assert.deepEqual(result.schemaErrors, []);
  assert.deepEqual(result.violations, []);
}

async function push(h: Harness, body: unknown) {
  const res = await h.post('/sync/push', body);
  if (res.status === 200) await assertValidResponse(h, body, res.text);
  return res;
}

async function epoch(h: Harness, s: Session): Promise<number> {
  const { rows } = await h.sql.query('SELECT accepted_write_epoch::int e FROM synchro.clients WHERE client_id = $1', [s.clientId]);
  return rows[0].e;
}

test('an insert is applied with its row, checksum and a fresh opaque version; replay returns identical bytes', async () => {
  await withServer(async (h, s) => {
    const body = pushBody(s, [insertNote(s, 'n1', { body: 'hello', n: 3 })]);
    const first = await push(h, body);
    assert.equal(first.status, 200);
    const [out] = first.json.accepted;
    assert.equal(out.status, 'applied');
    assert.match(out.server_version, /^[\x20\x21\x23-\x5B\x5D-\x7E]{1,64}$/);
    assert.equal(out.server_row[s.field('notes', 'body')], 'hello');
    assert.equal(await epoch(h, s), 2);
    // Same content, other member order and whitespace: exact replay, no new work.
    const reordered = `{ "mutations": ${JSON.stringify(body.mutations)}, "schema": ${JSON.stringify(body.schema)}, "batch_id": "${body.batch_id}",
      "client_generation": ${body.client_generation}, "client_id": "${body.client_id}" }`;
    const replay = await h.post('/sync/push', null, { raw: reordered });
    assert.equal(replay.status, 200);
    assert.equal(replay.text, first.text);
    assert.equal(await epoch(h, s), 2);
    const count = await h.sql.query('SELECT count(*)::int n FROM synchro.push_batches');
    assert.equal(count.rows[0].n, 1);
  });
});

test('reusing a batch_id or mutation_id for other content is an idempotency conflict that changes nothing', async () => {
  await withServer(async (h, s) => {
    const body = pushBody(s, [insertNote(s, 'n1', { body: 'a' })]);
    assert.equal((await push(h, body)).status, 200);
    const before = await snapshot(h);
    const changed = structuredClone(body);
    (changed.mutations[0] as { columns: Record<string, unknown> }).columns[s.field('notes', 'body')] = 'b';
    const res = await push(h, changed);
    assert.equal(res.status, 409);
    assert.equal(res.json.error.code, 'idempotency_conflict');
    const atomic = await push(h, { ...body, atomic: true });
    assert.equal(atomic.status, 409);
    const moved = await push(h, { ...changed, batch_id: randomUUID() });
    assert.equal(moved.status, 409);
    assert.equal(await snapshot(h), before);
  });
});

test('a completed mutation carried into a new batch contributes its stored outcome and is not executed again', async () => {
  await withServer(async (h, s) => {
    const m1 = insertNote(s, 'n1', { body: 'a' });
    const b1 = await push(h, pushBody(s, [m1]));
    const m2 = insertNote(s, 'n2', { body: 'b' });
    await h.sql.query("UPDATE public.notes SET body = 'changed directly' WHERE id = 'n1'");
    const b2 = await push(h, pushBody(s, [m1, m2]));
    assert.equal(b2.status, 200);
    assert.deepEqual(b2.json.accepted[0], b1.json.accepted[0]);
    assert.equal(b2.json.accepted[1].status, 'applied');
  });
});

test('the operation and row-state matrix', async () => {
  await withServer(async (h, s) => {
    const ins = await push(h, pushBody(s, [insertNote(s, 'live', { body: 'x' }), insertNote(s, 'soft', {})]));
    const [live, soft] = ins.json.accepted;
    const tags = await push(h, pushBody(s, [{ ...insertNote(s, 'x'), table: s.tableId('tags'), pk: { [s.field('tags', 'id')]: '7' }, columns: { [s.field('tags', 'label')]: 'seven' } }]));
    const tag = tags.json.accepted[0];
    const del = await push(h, pushBody(s, [deleteRow(s, 'notes', 'soft', soft.server_version), deleteRow(s, 'tags', 7, tag.server_version)]));
    const [softDel, hardDel] = del.json.accepted;
    assert.equal(softDel.status, 'applied');
    assert.notEqual(softDel.server_row[s.field('notes', 'deleted_at')], null, 'a soft delete shows the tombstone');
    assert.equal(hardDel.server_row, undefined, 'a hard delete has a version only');
    assert.ok(hardDel.server_version);

    const res = await push(
      h,
      pushBody(s, [
        insertNote(s, 'live', {}),
        updateNote(s, 'absent', 'v0', { body: 'y' }),
        deleteRow(s, 'notes', 'absent', 'v0'),
        updateNote(s, 'live', 'not-the-version', { body: 'y' }),
        deleteRow(s, 'notes', 'live', 'not-the-version'),
        insertNote(s, 'soft', {}),
        updateNote(s, 'soft', softDel.server_version, { body: 'z' }),
        deleteRow(s, 'tags', 7, hardDel.server_version),
        { ...insertNote(s, 'x'), table: s.tableId('tags'), pk: { [s.field('tags', 'id')]: '7' }, columns: { [s.field('tags', 'label')]: 'again' } },
      ]),
    );
    assert.equal(res.status, 200);
    const codes = res.json.rejected.map((o: { code: string }) => o.code);
    assert.deepEqual(codes, [
      'row_already_exists',
      'row_not_found',
      'row_not_found',
      'version_conflict',
      'version_conflict',
      'row_deleted',
      'row_deleted',
      'row_deleted',
      'row_deleted',
    ]);
    const [exists, notFound, , conflict, , , softDeleted, hardDeleted] = res.json.rejected;
    assert.equal(exists.server_version, live.server_version);
    assert.equal(notFound.server_version, undefined);
    assert.equal(notFound.server_row, undefined);
    assert.equal(conflict.server_row[s.field('notes', 'body')], 'x');
    assert.equal(softDeleted.server_version, softDel.server_version);
    assert.ok(softDeleted.server_row, 'a tombstone conflict carries the tombstone');
    assert.equal(hardDeleted.server_row, undefined);
    assert.equal(hardDeleted.server_version, hardDel.server_version);

    const upd = await push(h, pushBody(s, [updateNote(s, 'live', live.server_version, { body: 'new' })]));
    const applied = upd.json.accepted[0];
    assert.notEqual(applied.server_version, live.server_version);
    assert.equal(applied.server_row[s.field('notes', 'body')], 'new');
  });
});

test('a direct SQL write moves the version, so a push with the old base conflicts with the direct write', async () => {
  await withServer(async (h, s) => {
    const ins = await push(h, pushBody(s, [insertNote(s, 'n1', { body: 'a' })]));
    await h.sql.query("UPDATE public.notes SET body = 'direct' WHERE id = 'n1'");
    const { rows } = await h.sql.query("SELECT server_version FROM synchro.row_versions WHERE pk_text = 'n1'");
    const res = await push(h, pushBody(s, [updateNote(s, 'n1', ins.json.accepted[0].server_version, { body: 'b' })]));
    assert.equal(res.json.rejected[0].code, 'version_conflict');
    assert.equal(res.json.rejected[0].server_version, rows[0].server_version);
    await assert.rejects(h.sql.query("UPDATE public.notes SET id = 'n9' WHERE id = 'n1'"), { code: '23514' });
  });
});

test('validation failures are per-mutation outcomes and do not roll back accepted siblings', async () => {
  await withServer(async (h, s) => {
    const m = (cols: Record<string, unknown>) => insertNote(s, `v-${randomUUID()}`, cols);
    const key = insertNote(s, 'k1');
    (key.columns as Record<string, unknown>)[s.field('notes', 'id')] = 'k1';
    const res = await push(
      h,
      pushBody(s, [
        key,
        m({ updated_at: '2026-01-01T00:00:00.000000Z' }),
        m({ n: 'three' }),
        m({ n: -1 }),
        { ...m({}), columns: { no_such_field: 1 } },
        insertNote(s, 'ok', { body: 'fine' }),
      ]),
    );
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.json.rejected.map((o: { code: string }) => o.code),
      ['validation_failed', 'validation_failed', 'validation_failed', 'validation_failed', 'validation_failed'],
    );
    assert.equal(res.json.accepted.length, 1);
    const { rows } = await h.sql.query('SELECT id FROM public.notes');
    assert.deepEqual(rows, [{ id: 'ok' }]);
  });
});

test('a run of inserts: taken keys in the middle conflict as alone, every applied row is fenced by its own mutation', async () => {
  await withServer(async (h, s) => {
    await h.sql.query("INSERT INTO public.notes (id, body) VALUES ('taken', 'direct')");
    const direct = (await h.sql.query<{ v: string }>("SELECT server_version AS v FROM synchro.row_versions WHERE pk_text = 'taken'")).rows[0]?.v;
    const batch = [
      insertNote(s, 'r1', { body: 'one' }),
      insertNote(s, 'taken', { body: 'mine' }),
      insertNote(s, 'r2', { body: 'two', n: 2 }),
      insertNote(s, 'r1', { body: 'again' }),
      insertNote(s, 'r3', { n: -5 }),
      insertNote(s, 'r4', { body: 'four' }),
      // Query text cannot carry U+0000: this insert leaves the run and is refused as data, as alone.
      insertNote(s, 'r5', { body: 'nul\u0000inside' }),
      insertNote(s, 'r6', { body: 'six' }),
    ];
    const res = await push(h, pushBody(s, batch));
    assert.equal(res.status, 200);
    const byId = new Map([...res.json.accepted, ...res.json.rejected].map((o: { mutation_id: string }) => [o.mutation_id, o]));
    const outcome = (k: number) => byId.get((batch[k] as { mutation_id: string }).mutation_id) as Record<string, unknown>;
    assert.deepEqual(batch.map((_, k) => outcome(k).code ?? outcome(k).status), ['applied', 'row_already_exists', 'applied', 'row_already_exists', 'validation_failed', 'applied', 'validation_failed', 'applied']);
    // The conflicts describe the rows as they stand: the direct write, and the batch's own first insert.
    assert.equal(outcome(1).server_version, direct);
    assert.equal((outcome(1).server_row as Record<string, unknown>)[s.field('notes', 'body')], 'direct');
    assert.equal(outcome(3).server_version, outcome(0).server_version);
    const fences = await h.sql.query<{ pk_text: string; mutation_id: string | null; server_version: string }>(
      "SELECT pk_text, mutation_id::text, server_version FROM synchro.row_versions WHERE pk_text IN ('r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'taken') ORDER BY pk_text",
    );
    assert.deepEqual(
      fences.rows.map((r) => [r.pk_text, r.mutation_id, r.server_version]),
      [
        ['r1', batch[0]?.mutation_id, outcome(0).server_version],
        ['r2', batch[2]?.mutation_id, outcome(2).server_version],
        ['r4', batch[5]?.mutation_id, outcome(5).server_version],
        ['r6', batch[7]?.mutation_id, outcome(7).server_version],
        ['taken', null, direct],
      ],
    );
    const { rows } = await h.sql.query('SELECT id, body FROM public.notes ORDER BY id');
    assert.deepEqual(rows, [
      { id: 'r1', body: 'one' },
      { id: 'r2', body: 'two' },
      { id: 'r4', body: 'four' },
      { id: 'r6', body: 'six' },
      { id: 'taken', body: 'direct' },
    ]);
  });
});

test('malformed, oversized and out-of-range requests get 400 and change nothing', async () => {
  await withServer(async (h, s) => {
    await push(h, pushBody(s, [insertNote(s, 'n1', { body: 'a' })]));
    const before = await snapshot(h);
    const good = () => pushBody(s, [insertNote(s, 'n2', { body: 'b' })]);
    const raw = JSON.stringify(good());
    const cases: Array<[string, string]> = [
      ['malformed JSON', raw.slice(0, -1)],
      ['duplicate member', raw.replace('{', `{"client_id":"x",`)],
      ['unknown member', JSON.stringify({ ...good(), extra: 1 })],
      ['missing schema', JSON.stringify({ ...good(), schema: undefined })],
      ['generation 0', JSON.stringify({ ...good(), client_generation: 0 })],
      ['generation -1', JSON.stringify({ ...good(), client_generation: -1 })],
      ['generation 1.5', JSON.stringify({ ...good(), client_generation: 1.5 })],
      ['generation "2"', JSON.stringify({ ...good(), client_generation: '2' })],
      ['generation 2^53', raw.replace(`"client_generation":${s.generation}`, '"client_generation":9007199254740992')],
      ['generation 1.0', raw.replace(`"client_generation":${s.generation}`, `"client_generation":${s.generation}.0`)],
      ['no mutations', JSON.stringify({ ...good(), mutations: [] })],
      ['1001 mutations', JSON.stringify(pushBody(s, Array.from({ length: 1001 }, (_, k) => insertNote(s, `m${k}`))))],
      ['op create', JSON.stringify(pushBody(s, [{ ...insertNote(s, 'n3'), op: 'create' }]))],
      ['insert with base', JSON.stringify(pushBody(s, [{ ...insertNote(s, 'n3'), base_version: 'v' }]))],
      ['insert with null base', JSON.stringify(pushBody(s, [{ ...insertNote(s, 'n3'), base_version: null }]))],
      ['update with empty patch', JSON.stringify(pushBody(s, [updateNote(s, 'n1', 'v', {})]))],
      ['update with empty base', JSON.stringify(pushBody(s, [updateNote(s, 'n1', '', { body: 'x' })]))],
      ['delete with columns', JSON.stringify(pushBody(s, [{ ...deleteRow(s, 'notes', 'n1', 'v'), columns: {} }]))],
      ['base with a quote', JSON.stringify(pushBody(s, [updateNote(s, 'n1', 'a"b', { body: 'x' })]))],
      ['base of 65 octets', JSON.stringify(pushBody(s, [updateNote(s, 'n1', 'v'.repeat(65), { body: 'x' })]))],
      ['atomic false', JSON.stringify({ ...good(), atomic: false })],
      ['atomic "true"', JSON.stringify({ ...good(), atomic: 'true' })],
      ['uppercase UUID', JSON.stringify({ ...good(), batch_id: randomUUID().toUpperCase() })],
      ['nil UUID', JSON.stringify({ ...good(), batch_id: '00000000-0000-0000-0000-000000000000' })],
      ['repeated mutation_id', (() => { const m = insertNote(s, 'n5'); return JSON.stringify(pushBody(s, [m, { ...m, pk: { [s.field('notes', 'id')]: 'n6' } }])); })()],
      ['pk with two members', JSON.stringify(pushBody(s, [{ ...insertNote(s, 'n3'), pk: { [s.field('notes', 'id')]: 'a', other: 'b' } }]))],
      ['pk wrong field', JSON.stringify(pushBody(s, [{ ...insertNote(s, 'n3'), pk: { [s.field('notes', 'body')]: 'a' } }]))],
      ['pk wrong type', JSON.stringify(pushBody(s, [{ ...insertNote(s, 'n3'), pk: { [s.field('notes', 'id')]: 3 } }]))],
      ['257 columns', JSON.stringify(pushBody(s, [{ ...insertNote(s, 'n3'), columns: Object.fromEntries(Array.from({ length: 257 }, (_, k) => [`f${k}`, 1])) }]))],
      ['atomic repeated row', (() => JSON.stringify(pushBody(s, [insertNote(s, 'n7'), insertNote(s, 'n7')], { atomic: true })))()],
      ['bad client_version', JSON.stringify(pushBody(s, [{ ...insertNote(s, 'n3'), client_version: '2026-09-01T08:00:00Z' }]))],
      ['body over 1 MiB', JSON.stringify(pushBody(s, [insertNote(s, 'big', { body: 'x'.repeat(1_048_577) })]))],
      ['normalized mutation over 64 KiB', JSON.stringify(pushBody(s, [insertNote(s, 'big', { body: 'x'.repeat(65_537) })]))],
    ];
    for (const [name, body] of cases) {
      const res = await h.post('/sync/push', null, { raw: body });
      assert.equal(res.status, 400, `${name}: ${res.text}`);
      assert.equal(res.json.error.code, 'invalid_request', name);
      assert.equal(res.json.error.retryable, false, name);
    }
    const wrongType = await h.post('/sync/push', null, { raw, headers: { 'content-type': 'text/plain' } });
    assert.equal(wrongType.status, 400);
    assert.equal(await snapshot(h), before);
  });
});

test('a body of exactly 1 MiB whose canonical form fits is accepted', async () => {
  await withServer(async (h, s) => {
    const base = pushBody(s, [insertNote(s, 'big', { body: '' })]);
    const rawEmpty = JSON.stringify(base);
    // Pad with insignificant whitespace up to the limit (the canonical form stays small).
    const raw = `${rawEmpty}${' '.repeat(1_048_576 - Buffer.byteLength(rawEmpty))}`;
    assert.equal(Buffer.byteLength(raw), 1_048_576);
    const res = await h.post('/sync/push', null, { raw });
    assert.equal(res.status, 200, res.text);
  });
});

test('gates: auth, unknown client, retirement, generation and schema, in order and without effects', async () => {
  await withServer(async (h, s) => {
    const before = await snapshot(h);
    const bad = await fetch(`${h.server.url}/sync/push`, { method: 'POST', headers: { authorization: 'Bearer nope', 'content-type': 'application/json' }, body: '{' });
    assert.equal(bad.status, 401);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'auth_required');
    const other = await h.post('/sync/push', pushBody(s, [insertNote(s, 'n1')]), { user: 'someone-else' });
    assert.equal(other.status, 401);

    const stale = pushBody(s, [insertNote(s, 'n1')]);
    stale.client_generation = s.generation + 1;
    const expired = await push(h, stale);
    assert.equal(expired.status, 409);
    assert.equal(expired.json.error.code, 'client_generation_expired');
    assert.equal(expired.json.error.current_client_generation, s.generation);
    const mismatch = await push(h, { ...pushBody(s, [insertNote(s, 'n1')]), schema: { version: 99, hash: 'a'.repeat(64) } });
    assert.equal(mismatch.status, 422);
    assert.deepEqual(mismatch.json.error.current_schema, s.schema);
    assert.deepEqual(mismatch.json.error.received_schema, { version: 99, hash: 'a'.repeat(64) });
    assert.equal(await snapshot(h), before);
    // The same batch with the current generation now executes (request errors stored nothing).
    stale.client_generation = s.generation;
    assert.equal((await push(h, stale)).status, 200);

    // A completed batch replays even with a stale generation; retirement then refuses everything.
    const replayOld = await push(h, { ...stale });
    assert.equal(replayOld.status, 200);
    await h.sql.query('SELECT synchro.synchro_retire_client($1, $2)', ['u1', s.clientId]);
    const retired = await push(h, stale);
    assert.equal(retired.status, 409);
    assert.equal(retired.json.error.code, 'client_retired');
    const fence = await h.sql.query("SELECT count(*)::int n FROM synchro.row_versions WHERE pk_text = 'n1'");
    assert.equal(fence.rows[0].n, 1, 'retirement keeps fences');
  });
});

test('atomic groups apply all or nothing', async () => {
  await withServer(async (h, s) => {
    const ok = await push(h, pushBody(s, [insertNote(s, 'a1'), insertNote(s, 'a2')], { atomic: true }));
    assert.equal(ok.json.accepted.length, 2);
    assert.equal(await epoch(h, s), 2);
    const body = pushBody(s, [insertNote(s, 'a3'), updateNote(s, 'missing', 'v1', { body: 'x' }), insertNote(s, 'a4')], { atomic: true });
    const failed = await push(h, body);
    assert.deepEqual(failed.json.accepted, []);
    assert.deepEqual(
      failed.json.rejected.map((o: { code: string }) => o.code),
      ['atomic_batch_rejected', 'row_not_found', 'atomic_batch_rejected'],
    );
    assert.equal(failed.json.rejected[0].message, 'atomic batch rejected');
    assert.equal(await epoch(h, s), 2);
    const { rows } = await h.sql.query("SELECT count(*)::int n FROM public.notes WHERE id IN ('a3', 'a4')");
    assert.equal(rows[0].n, 0);
    const replay = await push(h, body);
    assert.equal(replay.text, failed.text);
    // A member rejected with its group cannot be reused outside an atomic request.
    const reuse = await push(h, pushBody(s, [body.mutations[0]]));
    assert.equal(reuse.status, 400);
  });
});

test('the push entry point refuses a caller transaction with a pending deferred trigger event (25000) without firing it', async () => {
  const setup = `${NOTES_SQL}
    CREATE TABLE public.parents (id text PRIMARY KEY);
    CREATE TABLE public.children (id text PRIMARY KEY, parent_id text REFERENCES public.parents DEFERRABLE INITIALLY DEFERRED);
    CREATE TABLE public.fired (n bigserial PRIMARY KEY);
    CREATE FUNCTION public.note_firing() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO public.fired DEFAULT VALUES; RETURN NULL; END $$;
    CREATE CONSTRAINT TRIGGER note_firing AFTER INSERT ON public.children DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.note_firing();
    INSERT INTO public.parents VALUES ('p');`;
  await withServer(async (h, s) => {
    const pool = new pg.Pool({ connectionString: h.url, max: 2 });
    const manifests = new ManifestStore(pool);
    const db = await pool.connect();
    try {
      // A pending deferred event: the call fails before its batch claim, and the event never ran.
      await db.query("BEGIN; INSERT INTO public.children VALUES ('c1', 'p')");
      const body = pushBody(s, [insertNote(s, 'e1')]);
      await assert.rejects(pushInCallerTransaction(db, manifests, 'u1', body), (e: { code?: string }) => e.code === '25000');
      await db.query('ROLLBACK');
      const { rows: fired } = await h.sql.query('SELECT is_called FROM public.fired_n_seq');
      assert.equal(fired[0].is_called, false);
      const { rows: claimed } = await h.sql.query('SELECT count(*)::int n FROM synchro.push_batches WHERE batch_id = $1', [body.batch_id]);
      assert.equal(claimed[0].n, 0);
      // Once the caller's events have fired, nothing is pending: the same call runs and the caller commits it.
      await db.query("BEGIN; INSERT INTO public.children VALUES ('c2', 'p'); SET CONSTRAINTS ALL IMMEDIATE");
      const done = await pushInCallerTransaction(db, manifests, 'u1', body);
      await db.query('COMMIT');
      assert.equal(JSON.parse(done.body).accepted.length, 1);
      const { rows: notes } = await h.sql.query("SELECT count(*)::int n FROM public.notes WHERE id = 'e1'");
      assert.equal(notes[0].n, 1);
    } finally {
      db.release();
      await pool.end();
    }
  }, setup);
});

test('a run of inserts uses statements prepared on its session; a session that lost them (DEALLOCATE ALL) decides the run the same', async () => {
  await withServer(async (h, s) => {
    const pool = new pg.Pool({ connectionString: h.url, max: 2 });
    const manifests = new ManifestStore(pool);
    const db = await pool.connect();
    const pushed = async (keys: string[]) => {
      await db.query('BEGIN');
      const batch = keys.map((k) => insertNote(s, k, { body: k }));
      const done = await pushInCallerTransaction(db, manifests, 'u1', pushBody(s, batch));
      await db.query('COMMIT');
      const body = JSON.parse(done.body) as { accepted: Array<{ mutation_id: string }>; rejected: Array<{ mutation_id: string; code: string }> };
      const byId = new Map<string, string>([...body.accepted.map((o): [string, string] => [o.mutation_id, 'applied']), ...body.rejected.map((o): [string, string] => [o.mutation_id, o.code])]);
      return batch.map((m) => byId.get(m.mutation_id));
    };
    const prepared = async () => (await db.query("SELECT count(*)::int n FROM pg_prepared_statements WHERE name LIKE 'synchro_push_%'")).rows[0].n as number;
    try {
      assert.deepEqual(await pushed(['p1', 'p2']), ['applied', 'applied']);
      // The write, the check and the read (row and fence) of the notes relation's unit, prepared once.
      assert.equal(await prepared(), 3);
      await db.query('DEALLOCATE ALL');
      // The run fails at its first EXECUTE (not by a unit's values): it is decided unit by unit, and prepared again.
      assert.deepEqual(await pushed(['p3', 'p1', 'p4']), ['applied', 'row_already_exists', 'applied']);
      assert.deepEqual(await pushed(['p5']), ['applied']);
      assert.equal(await prepared(), 3);
      const { rows } = await h.sql.query("SELECT id, body FROM public.notes WHERE id LIKE 'p%' ORDER BY id");
      assert.deepEqual(rows, ['p1', 'p2', 'p3', 'p4', 'p5'].map((id) => ({ id, body: id })));
    } finally {
      db.release();
      await pool.end();
    }
  });
});

test('deferrable constraints are checked at the end of each push unit', async () => {
  const setup = `CREATE TABLE public.parents (id text PRIMARY KEY);
    CREATE TABLE public.children (id text PRIMARY KEY, parent_id text REFERENCES public.parents DEFERRABLE INITIALLY DEFERRED);
    SELECT synchro.synchro_register_table('public.parents');
    SELECT synchro.synchro_register_table('public.children');`;
  await withServer(async (h, s) => {
    const bare = () => ({ mutation_id: randomUUID(), authored_schema: s.schema, op: 'insert', client_version: '2026-09-01T08:00:00.000000Z' });
    const child = (id: string, parent: string) => ({
      ...bare(),
      table: s.tableId('children'),
      pk: { [s.field('children', 'id')]: id },
      columns: { [s.field('children', 'parent_id')]: parent },
    });
    const parent = (id: string) => ({ ...bare(), table: s.tableId('parents'), pk: { [s.field('parents', 'id')]: id }, columns: {} });
    const plain = await push(h, pushBody(s, [child('c1', 'p1'), parent('p1')]));
    assert.deepEqual(plain.json.rejected.map((o: { code: string }) => o.code), ['validation_failed']);
    assert.equal(plain.json.accepted.length, 1);
    const group = await push(h, pushBody(s, [child('c2', 'p2'), parent('p2')], { atomic: true }));
    assert.equal(group.json.accepted.length, 2);
    const broken = await push(h, pushBody(s, [parent('p3'), child('c3', 'nope')], { atomic: true }));
    assert.deepEqual(broken.json.rejected.map((o: { code: string }) => o.code), ['atomic_batch_rejected', 'validation_failed']);
  }, setup);
});

test('concurrent update and delete on the same base: exactly one wins, the other gets the current conflict', async () => {
  await withServer(async (h, s) => {
    for (let round = 0; round < 4; round++) {
      const id = `r${round}`;
      const ins = await push(h, pushBody(s, [insertNote(s, id, { body: 'a' })]));
      const base = ins.json.accepted[0].server_version;
      const [u, d] = await Promise.all([
        push(h, pushBody(s, [updateNote(s, id, base, { body: 'b' })])),
        push(h, pushBody(s, [deleteRow(s, 'notes', id, base)])),
      ]);
      assert.equal(u.status, 200);
      assert.equal(d.status, 200);
      const winners = [u, d].filter((r) => r.json.accepted.length === 1);
      assert.equal(winners.length, 1, 'exactly one applied');
      const loser = [u, d].find((r) => r.json.rejected.length === 1);
      const code = loser?.json.rejected[0].code;
      if (winners[0] === u) assert.equal(code, 'version_conflict');
      else assert.equal(code, 'row_deleted');
      assert.equal(loser?.json.rejected[0].server_version, winners[0]?.json.accepted[0].server_version);
    }
  });
});

test('concurrent identical first requests execute once; every answer is the same 200 or a retryable 503', async () => {
  await withServer(async (h, s) => {
    const body = pushBody(s, [insertNote(s, 'same', { body: 'x' })]);
    const answers = await Promise.all(Array.from({ length: 5 }, () => h.post('/sync/push', body)));
    const oks = answers.filter((a) => a.status === 200);
    assert.ok(oks.length >= 1);
    for (const a of answers) assert.ok(a.status === 200 || a.status === 503, a.text);
    for (const a of oks) assert.equal(a.text, oks[0]?.text);
    const { rows } = await h.sql.query('SELECT count(*)::int n FROM synchro.push_mutations');
    assert.equal(rows[0].n, 1);
    assert.equal(await epoch(h, s), 2);
  });
});

test('replay after a lost response returns the original outcome even after the row changed', async () => {
  await withServer(async (h, s) => {
    const body = pushBody(s, [insertNote(s, 'lost', { body: 'x' })]);
    const first = await push(h, body); // the client never saw this answer
    await h.sql.query("UPDATE public.notes SET body = 'later' WHERE id = 'lost'");
    const again = await push(h, body);
    assert.equal(again.text, first.text);
    const rows = await h.sql.query("SELECT count(*)::int n FROM public.notes WHERE id = 'lost'");
    assert.equal(rows.rows[0].n, 1);
  });
});

test('intent authored under an older schema: representable fields apply, removed ones are schema_incompatible', async () => {
  await withServer(async (h, old) => {
    await h.sql.query("SELECT synchro.synchro_unregister_table('public.tags')");
    const moved = await h.post('/sync/connect', {
      client_id: old.clientId, client_generation: old.generation, platform: 'test', app_version: '1.0.0', protocol_version: 3,
      schema: old.schema, scope_set_version: 1, known_scopes: {},
    });
    assert.equal(moved.json.schema.action, 'unsupported');
    assert.equal(moved.json.schema.reason, 'incompatible_schema_transition');
    const current = { version: moved.json.schema.version, hash: moved.json.schema.hash };
    const s = { ...old, schema: current };
    const tagInsert = { ...insertNote(old, 'x'), table: old.tableId('tags'), pk: { [old.field('tags', 'id')]: '1' }, columns: { [old.field('tags', 'label')]: 'one' } };
    const noteInsert = insertNote(old, 'kept', { body: 'still writable' });
    const res = await push(h, pushBody(s, [tagInsert, noteInsert, { ...insertNote(old, 'y'), table: 'no_such_table' }]));
    assert.equal(res.status, 200);
    const [incompatible, notSynced] = res.json.rejected;
    assert.equal(incompatible.code, 'schema_incompatible');
    assert.equal(incompatible.retryable, false);
    assert.deepEqual(incompatible.authored_schema, old.schema);
    assert.deepEqual(incompatible.current_schema, current);
    assert.deepEqual(incompatible.incompatible_field_ids, [old.field('tags', 'label')]);
    assert.deepEqual(incompatible.outcome_schema, current);
    assert.equal(notSynced.code, 'table_not_synced');
    assert.equal(res.json.accepted[0].status, 'applied');
  });
});

test('rows present before registration get a version and can be updated by push', async () => {
  const setup = `CREATE TABLE public.early (id int PRIMARY KEY, label text);
    INSERT INTO public.early VALUES (1, 'one'), (2, 'two');
    SELECT synchro.synchro_register_table('public.early');`;
  await withServer(async (h, s) => {
    const { rows } = await h.sql.query("SELECT server_version FROM synchro.row_versions WHERE pk_text = '1'");
    const res = await push(h, pushBody(s, [{
      mutation_id: randomUUID(), table: s.tableId('early'), pk: { [s.field('early', 'id')]: 1 }, authored_schema: s.schema,
      op: 'update', client_version: '2026-09-01T08:00:00.000000Z', base_version: rows[0].server_version, columns: { [s.field('early', 'label')]: 'uno' },
    }]));
    assert.equal(res.json.accepted[0].server_row[s.field('early', 'label')], 'uno');
  }, setup);
});

/** Polls a condition with a deadline (no fixed sleeps). */
async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

test('first row locks: a non-key update lets a child row reference the parent, a hard delete makes it wait', async () => {
  const setup = `CREATE TABLE public.parents (id text PRIMARY KEY, label text);
    CREATE TABLE public.kids (id serial PRIMARY KEY, parent_id text REFERENCES public.parents);
    CREATE FUNCTION public.gate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END; END $$;
    CREATE TRIGGER gate BEFORE UPDATE OR DELETE ON public.parents FOR EACH ROW EXECUTE FUNCTION public.gate();
    SELECT synchro.synchro_register_table('public.parents');`;
  await withServer(async (h, s) => {
    const probe = new pg.Client({ connectionString: h.url });
    await probe.connect();
    try {
      const parent = (id: string) => ({ [s.field('parents', 'id')]: id });
      const ins = await push(h, pushBody(s, [
        { mutation_id: randomUUID(), table: s.tableId('parents'), pk: parent('p1'), authored_schema: s.schema, op: 'insert', client_version: '2026-09-01T08:00:00.000000Z', columns: {} },
        { mutation_id: randomUUID(), table: s.tableId('parents'), pk: parent('p2'), authored_schema: s.schema, op: 'insert', client_version: '2026-09-01T08:00:00.000000Z', columns: {} },
      ]));
      const [v1, v2] = ins.json.accepted.map((o: { server_version: string }) => o.server_version);
      const gated = async () =>
        (await h.sql.query("SELECT count(*)::int n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'")).rows[0].n === 1;

      await h.sql.query('SELECT pg_advisory_lock(4242)');
      const update = push(h, pushBody(s, [{ mutation_id: randomUUID(), table: s.tableId('parents'), pk: parent('p1'), authored_schema: s.schema, op: 'update', client_version: '2026-09-01T08:00:00.000000Z', base_version: v1, columns: { [s.field('parents', 'label')]: 'x' } }]));
      await until('the update to reach the gate', gated);
      await probe.query("SET lock_timeout = '5s'");
      await probe.query("INSERT INTO public.kids (parent_id) VALUES ('p1')"); // does not wait behind FOR NO KEY UPDATE
      await h.sql.query('SELECT pg_advisory_unlock(4242)');
      assert.equal((await update).json.accepted.length, 1);

      await h.sql.query('SELECT pg_advisory_lock(4242)');
      const del = push(h, pushBody(s, [{ mutation_id: randomUUID(), table: s.tableId('parents'), pk: parent('p2'), authored_schema: s.schema, op: 'delete', client_version: '2026-09-01T08:00:00.000000Z', base_version: v2 }]));
      await until('the delete to reach the gate', gated);
      const child = probe.query("INSERT INTO public.kids (parent_id) VALUES ('p2')").then(() => 'inserted', (e: { code?: string }) => e.code);
      await until('the child insert to wait behind FOR UPDATE', async () =>
        (await h.sql.query("SELECT count(*)::int n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple') AND query LIKE 'INSERT INTO public.kids%'")).rows[0].n === 1);
      await h.sql.query('SELECT pg_advisory_unlock(4242)');
      assert.equal((await del).json.accepted.length, 1);
      assert.equal(await child, '23503', 'the parent was deleted first, so the child insert fails its foreign key');
    } finally {
      await probe.end();
    }
  }, setup);
});

test('an operational failure in the last mutation rolls back the whole first execution with a retryable 503', async () => {
  const setup = `${NOTES_SQL}
    CREATE FUNCTION public.trip() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.body = 'trip' THEN RAISE EXCEPTION 'injected' USING ERRCODE = '40001'; END IF; RETURN NEW; END $$;
    CREATE TRIGGER trip BEFORE INSERT ON public.notes FOR EACH ROW EXECUTE FUNCTION public.trip();`;
  await withServer(async (h, s) => {
    const before = await snapshot(h);
    const body = pushBody(s, [insertNote(s, 'ok', { body: 'fine' }), insertNote(s, 'bad', { body: 'trip' })]);
    const res = await push(h, body);
    assert.equal(res.status, 503);
    assert.equal(res.json.error.code, 'temporary_unavailable');
    assert.equal(res.json.error.retryable, true);
    assert.equal(res.headers.get('retry-after'), '5');
    assert.equal(res.json.accepted, undefined);
    assert.equal(await snapshot(h), before, 'nothing of the first execution survives');
    await h.sql.query('DROP TRIGGER trip ON public.notes');
    const retry = await push(h, body);
    assert.equal(retry.status, 200);
    assert.equal(retry.json.accepted.length, 2);
  }, setup);
});

test('gate precedence: a stale generation wins over a stale schema; a disabled push policy rejects before values are checked', async () => {
  const setup = `${NOTES_SQL} CREATE TABLE public.ro (id text PRIMARY KEY, v integer);
    SELECT synchro.synchro_register_table('public.ro', push_policy => 'disabled');`;
  await withServer(async (h, s) => {
    const both = { ...pushBody(s, [insertNote(s, 'n1')]), client_generation: s.generation + 5, schema: { version: 42, hash: 'c'.repeat(64) } };
    assert.equal((await push(h, both)).json.error.code, 'client_generation_expired');
    const ro = { ...insertNote(s, 'r1'), table: s.tableId('ro'), pk: { [s.field('ro', 'id')]: 'r1' }, columns: { [s.field('ro', 'v')]: 'not a number' } };
    const res = await push(h, pushBody(s, [ro]));
    assert.equal(res.json.rejected[0].code, 'policy_rejected');
  }, setup);
});

test('a deferred trigger that changes the row at unit end shows in the outcome, owned by the last mutation', async () => {
  const setup = `${NOTES_SQL}
    CREATE FUNCTION public.stamp() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN UPDATE public.notes SET body = body || '!' WHERE id = NEW.id; RETURN NULL; END $$;
    CREATE CONSTRAINT TRIGGER stamp AFTER INSERT ON public.notes DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION public.stamp();`;
  await withServer(async (h, s) => {
    const m = insertNote(s, 'd1', { body: 'hi' });
    const res = await push(h, pushBody(s, [m]));
    const out = res.json.accepted[0];
    assert.equal(out.server_row[s.field('notes', 'body')], 'hi!');
    const { rows } = await h.sql.query("SELECT server_version, mutation_id::text m FROM synchro.row_versions WHERE pk_text = 'd1'");
    assert.equal(out.server_version, rows[0].server_version);
    assert.equal(rows[0].m, m.mutation_id);
  }, setup);
});

test('a failed atomic group reports its conflict from committed state, not from the rolled-back group writes', async () => {
  const setup = `CREATE TABLE public.parents (id text PRIMARY KEY);
    CREATE TABLE public.kids (id text PRIMARY KEY, parent_id text NOT NULL REFERENCES public.parents ON DELETE CASCADE, label text);
    SELECT synchro.synchro_register_table('public.parents');
    SELECT synchro.synchro_register_table('public.kids');`;
  await withServer(async (h, s) => {
    const ins = (table: string, id: string, columns: Record<string, unknown>) => ({
      mutation_id: randomUUID(), table: s.tableId(table), pk: { [s.field(table, 'id')]: id }, authored_schema: s.schema, op: 'insert',
      client_version: '2026-09-01T08:00:00.000000Z', columns: Object.fromEntries(Object.entries(columns).map(([k, v]) => [s.field(table, k), v])),
    });
    const setupPush = await push(h, pushBody(s, [ins('parents', 'p', {}), ins('kids', 'k', { parent_id: 'p', label: 'before' })]));
    const [parent, kid] = setupPush.json.accepted;
    const group = await push(h, pushBody(s, [
      { mutation_id: randomUUID(), table: s.tableId('parents'), pk: { [s.field('parents', 'id')]: 'p' }, authored_schema: s.schema, op: 'delete', client_version: '2026-09-01T08:00:00.000000Z', base_version: parent.server_version },
      { mutation_id: randomUUID(), table: s.tableId('kids'), pk: { [s.field('kids', 'id')]: 'k' }, authored_schema: s.schema, op: 'update', client_version: '2026-09-01T08:00:00.000000Z', base_version: 'stale', columns: { [s.field('kids', 'label')]: 'after' } },
    ], { atomic: true }));
    const [first, failed] = group.json.rejected;
    assert.equal(first.code, 'atomic_batch_rejected');
    // The code too comes from committed state: row_deleted would reveal the rolled-back cascade.
    assert.equal(failed.code, 'version_conflict');
    assert.equal(failed.server_version, kid.server_version, 'the committed kid, not the cascaded delete');
    assert.equal(failed.server_row[s.field('kids', 'label')], 'before');
    const { rows } = await h.sql.query('SELECT count(*)::int n FROM public.kids');
    assert.equal(rows[0].n, 1);
  }, setup);
});

test('every portable type goes in and comes back in canonical wire form', async () => {
  const setup = `CREATE TABLE public.typed (id bigint PRIMARY KEY, s text, i integer, i8 bigint, d numeric(12, 4), f double precision,
      b boolean, dt timestamptz, dd date, t time, j jsonb, y bytea);
    SELECT synchro.synchro_register_table('public.typed');`;
  await withServer(async (h, s) => {
    const values: Record<string, unknown> = {
      s: 'héllo 😀', i: -2147483648, i8: '9223372036854775807', d: '12.5', f: 0.1, b: true,
      dt: '2026-02-28T23:59:59.123456Z', dd: '2024-02-29', t: '07:08:09.000001', j: '{"a":[1,2.5,"x"],"b":null}', y: 'AQID_w',
    };
    const columns = Object.fromEntries(Object.entries(values).map(([k, v]) => [s.field('typed', k), v]));
    const m = { mutation_id: randomUUID(), table: s.tableId('typed'), pk: { [s.field('typed', 'id')]: '42' }, authored_schema: s.schema, op: 'insert', client_version: '2026-09-01T08:00:00.000000Z', columns };
    const res = await push(h, pushBody(s, [m]));
    assert.equal(res.status, 200, res.text);
    const row = res.json.accepted[0].server_row;
    for (const [k, v] of Object.entries(values)) assert.deepEqual(row[s.field('typed', k)], v, k);
    assert.equal(row[s.field('typed', 'id')], '42');
    const nulls = { ...m, mutation_id: randomUUID(), pk: { [s.field('typed', 'id')]: '43' }, columns: { [s.field('typed', 's')]: null } };
    const withNulls = await push(h, pushBody(s, [nulls]));
    assert.equal(withNulls.json.accepted[0].server_row[s.field('typed', 'j')], null);
  }, setup);
});
