import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startServer } from '../../reference/server/app.ts';
import { CapturePoisoned } from '../../reference/server/core/capture-control.ts';
import { catchUp, connect, freshServer, type Harness, insertNote, pushBody, SECRET, useEnv } from './helpers.ts';
import { pull, rebuildBody } from './sync-flow.ts';

const env = useEnv();

// Rows belong to their owner's scope; bodies starting with 'shared' also to the shared scope.
const SETUP = `
CREATE TABLE public.notes (id text PRIMARY KEY, owner text NOT NULL DEFAULT 'u1', body text NOT NULL DEFAULT '',
  n integer, meta jsonb, updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz);
SELECT synchro.synchro_prepare_projection_view('public.notes');
CREATE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id
    UNION ALL SELECT 'shared' FROM synchro_projection.notes WHERE id = p_id AND body LIKE 'shared%';
END;
INSERT INTO public.notes (id, owner, body) VALUES ('before', 'u1', 'present at registration');
SELECT synchro.synchro_register_table('public.notes', membership_fn => 'public.note_scopes', composition => 'multi_scope',
  updated_at_col => 'updated_at', deleted_at_col => 'deleted_at');
`;

async function withCapture(fn: (h: Harness) => Promise<void>): Promise<void> {
  const h = await freshServer(env(), SETUP, { capture: true });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}


async function effects(h: Harness, where = 'true') {
  const { rows } = await h.sql.query(
    `SELECT scope_id, commit_lsn::text AS lsn, event_ordinal::int AS ev, effect_ordinal AS ef, pk_text AS pk, op, server_version AS v, row_wire AS row
       FROM synchro.scope_effects WHERE ${where} ORDER BY commit_lsn, event_ordinal, effect_ordinal, scope_id COLLATE "C"`,
  );
  return rows;
}

test('rows present at registration, direct inserts, updates and deletes become scope effects with their fence versions', async () => {
  await withCapture(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id, body, n, meta) VALUES ('a', 'first', 1, '{"k":[1,2]}')`);
    await h.sql.query(`UPDATE public.notes SET body = 'second' WHERE id = 'a'`);
    await h.sql.query(`DELETE FROM public.notes WHERE id = 'before'`);
    await catchUp(h);
    const all = await effects(h);
    assert.deepEqual(
      all.map((e) => [e.scope_id, e.pk, e.op]),
      [
        ['user:u1', 'before', 'upsert'],
        ['user:u1', 'a', 'upsert'],
        ['user:u1', 'a', 'upsert'],
        ['user:u1', 'before', 'delete'],
      ],
    );
    const [, , second, removed] = all;
    assert.equal(second.row.t1f3, 'second');
    assert.equal(removed.row, null);
    // The pulled version of each row is exactly the fence its write produced.
    const fences = await h.sql.query("SELECT pk_text, server_version FROM synchro.row_versions WHERE table_id = 't1' ORDER BY 1");
    assert.deepEqual(
      fences.rows.map((r) => [r.pk_text, r.server_version]),
      [
        ['a', second.v],
        ['before', removed.v],
      ],
    );
    assert.equal(second.row.t1f5, '{"k":[1,2]}');
    assert.equal(second.row.t1f4, 1);
    assert.match(second.row.t1f6, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    const scopeRows = await h.sql.query('SELECT scope_id, pk_text FROM synchro.scope_rows ORDER BY 1, 2');
    assert.deepEqual(scopeRows.rows, [{ scope_id: 'user:u1', pk_text: 'a' }]);
    const progress = await h.sql.query('SELECT materialized_commit_lsn::text AS m, acknowledged_end_lsn::text AS a FROM synchro.wal_progress');
    assert.equal(progress.rows[0].m, all[3]?.lsn);
  });
});

test('effects follow commit order, not start order, and carry decoded-order event ordinals inside a transaction', async () => {
  await withCapture(async (h) => {
    const other = new pg.Client({ connectionString: h.url });
    await other.connect();
    try {
      await h.sql.query('BEGIN');
      await h.sql.query(`INSERT INTO public.notes (id) VALUES ('started-first')`);
      await other.query(`INSERT INTO public.notes (id) VALUES ('committed-first')`);
      await h.sql.query('COMMIT');
      // One transaction with a logical message (not a row event) and two rows.
      await h.sql.query(`BEGIN; SELECT pg_logical_emit_message(true, 'harness_probe', 'x'); INSERT INTO public.notes (id) VALUES ('x'), ('y'); COMMIT`);
    } finally {
      await other.end();
    }
    await catchUp(h);
    const rows = (await effects(h)).filter((e) => e.pk !== 'before');
    assert.deepEqual(
      rows.map((e) => e.pk),
      ['committed-first', 'started-first', 'x', 'y'],
    );
    const [, , x, y] = rows;
    assert.equal(x.lsn, y.lsn);
    assert.deepEqual([x.ev, y.ev, x.ef, y.ef], [0, 1, 0, 0]);
  });
});

test('a row in two scopes gets one effect per scope; moving it out of a scope is a rowless delete there', async () => {
  await withCapture(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ('s', 'shared note')`);
    await h.sql.query(`UPDATE public.notes SET owner = 'u2' WHERE id = 's'`);
    // Out of user:u2 and back in one transaction: only the final state counts.
    await h.sql.query(`BEGIN; UPDATE public.notes SET owner = 'u3' WHERE id = 's'; UPDATE public.notes SET owner = 'u2', body = 'shared again' WHERE id = 's'; COMMIT`);
    await h.sql.query(`UPDATE public.notes SET deleted_at = now() WHERE id = 's'`);
    await catchUp(h);
    const rows = (await effects(h, "pk_text = 's'")).map((e) => [e.scope_id, e.op, e.row === null ? 'rowless' : 'row']);
    assert.deepEqual(rows, [
      ['shared', 'upsert', 'row'],
      ['user:u1', 'upsert', 'row'],
      ['shared', 'upsert', 'row'],
      ['user:u1', 'delete', 'rowless'],
      ['user:u2', 'upsert', 'row'],
      ['shared', 'upsert', 'row'],
      ['user:u2', 'upsert', 'row'],
      ['shared', 'delete', 'row'],
      ['user:u2', 'delete', 'row'],
    ]);
    const edges = await h.sql.query("SELECT scope_id FROM synchro.membership_edges WHERE pk_text = 's' ORDER BY 1");
    assert.deepEqual(edges.rows.map((r) => r.scope_id), ['shared', 'user:u2']);
    const live = await h.sql.query("SELECT count(*)::int AS n FROM synchro.scope_rows WHERE pk_text = 's'");
    assert.equal(live.rows[0].n, 0);
  });
});

test('a zero-event transaction gets a durable record and acknowledgement passes it', async () => {
  await withCapture(async (h) => {
    await catchUp(h);
    await h.sql.query(`BEGIN; SELECT pg_logical_emit_message(true, 'harness_probe', 'x'); COMMIT`);
    await catchUp(h);
    const { rows } = await h.sql.query('SELECT event_count, effect_count FROM synchro.wal_transactions ORDER BY commit_lsn DESC LIMIT 1');
    assert.deepEqual(rows[0], { event_count: 0, effect_count: 0 });
    const slot = await h.sql.query(
      'SELECT s.confirmed_flush_lsn = p.acknowledged_end_lsn AS same FROM pg_replication_slots s, synchro.wal_progress p WHERE s.slot_name = p.slot_name',
    );
    assert.equal(slot.rows[0].same, true);
  });
});

test('an accepted push reaches the effects only through the worker, with the version the push returned', async () => {
  await withCapture(async (h) => {
    const s = await connect(h);
    const res = await h.post('/sync/push', pushBody(s, [insertNote(s, 'pushed', { body: 'from a client' })]));
    assert.equal(res.status, 200, res.text);
    const version = res.json.accepted[0].server_version;
    await catchUp(h);
    const [e] = await effects(h, "pk_text = 'pushed'");
    assert.equal(e.v, version);
    assert.equal(e.scope_id, 'user:u1');
    assert.equal(e.row[s.field('notes', 'body')], 'from a client');
  });
});

test('a poison transaction is quarantined once without row data, blocks later ones, and a same-identity retry materializes both in order', async () => {
  await withCapture(async (h) => {
    await catchUp(h);
    const marker = 'zz-marker-7f3a-zz';
    // The marked row makes the integer cast fail when the function places it.
    await h.sql.query(`CREATE OR REPLACE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
      SELECT CASE WHEN p_id LIKE '%zz-marker%' THEN ('cannot place ' || p_id)::integer::text ELSE 'user:' || owner END
        FROM synchro_projection.notes WHERE id = p_id;
      END`);
    await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ($1, $1)`, [marker]);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('good')`);
    await assert.rejects(catchUp(h), CapturePoisoned);
    const before = await h.sql.query("SELECT processed_end_lsn::text AS p FROM synchro.wal_progress");
    const poison = await h.sql.query('SELECT * FROM synchro.wal_poison');
    assert.equal(poison.rows.length, 1);
    assert.equal(poison.rows[0].failure_class, 'scope_evaluation_failed');
    assert.equal(poison.rows[0].lifecycle, 'active');
    assert.ok(!JSON.stringify(poison.rows).includes(marker));
    assert.equal((await effects(h, "pk_text IN ('good', 'zz-marker-7f3a-zz')")).length, 0);
    // More commits change nothing while the poison is active.
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('later')`);
    await assert.rejects(catchUp(h), CapturePoisoned);
    assert.equal((await h.sql.query("SELECT processed_end_lsn::text AS p FROM synchro.wal_progress")).rows[0].p, before.rows[0].p);
    assert.equal((await h.sql.query('SELECT count(*)::int AS n FROM synchro.wal_poison')).rows[0].n, 1);
    // Pull and rebuild serve nothing while capture is blocked, and say only that.
    const s = await connect(h);
    const blocked = await pull(h, s, { 'user:u1': null });
    assert.equal(blocked.status, 503, blocked.text);
    assert.deepEqual(blocked.json, { error: { code: 'temporary_unavailable', message: 'capture is blocked', retryable: true, reason: 'capture_blocked' } });
    const rebuild = await h.post('/sync/rebuild', rebuildBody(s, 'user:u1', randomUUID(), null, 10));
    assert.equal(rebuild.status, 503, rebuild.text);
    assert.equal(rebuild.json.error.reason, 'capture_blocked');

    await h.sql.query(`CREATE OR REPLACE FUNCTION public.note_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
      SELECT 'user:' || owner FROM synchro_projection.notes WHERE id = p_id; END`);
    assert.equal((await h.sql.query('SELECT synchro.synchro_retry_wal_poison() AS r')).rows[0].r, true);
    await catchUp(h);
    const after = await h.sql.query('SELECT lifecycle, commit_lsn::text AS lsn FROM synchro.wal_poison');
    assert.equal(after.rows[0].lifecycle, 'repaired');
    const delivered = await effects(h, "pk_text IN ('good', 'later', 'zz-marker-7f3a-zz')");
    assert.deepEqual(delivered.map((e) => e.pk), [marker, 'good', 'later']);
    assert.equal(delivered[0].lsn, after.rows[0].lsn);
    assert.equal((await pull(h, s, { 'user:u1': null })).status, 200);
  });
});

test('restarting the server resumes from the acknowledgement without losing or duplicating anything', async () => {
  await withCapture(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('r1')`);
    await catchUp(h);
    await h.server.close();
    // Written while no worker runs.
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('r2')`);
    await h.sql.query(`UPDATE public.notes SET body = 'changed' WHERE id = 'r1'`);
    h.server = await startServer({ databaseUrl: h.url, jwtSecret: SECRET, log: () => undefined, capture: true });
    await catchUp(h);
    const rows = await effects(h, "pk_text IN ('r1', 'r2')");
    assert.deepEqual(rows.map((e) => [e.pk, e.row.t1f3]), [['r1', ''], ['r2', ''], ['r1', 'changed']]);
    const dup = await h.sql.query('SELECT count(*)::int AS n FROM (SELECT 1 FROM synchro.scope_effects GROUP BY scope_id, commit_lsn, event_ordinal, effect_ordinal HAVING count(*) > 1) d');
    assert.equal(dup.rows[0].n, 0);
    const tx = await h.sql.query('SELECT count(*)::int AS n, count(DISTINCT commit_lsn)::int AS d FROM synchro.wal_transactions');
    assert.equal(tx.rows[0].n, tx.rows[0].d);
  });
});

test('readiness is true only while every capture check holds, and each break names its check', async () => {
  await withCapture(async (h) => {
    await connect(h);
    await catchUp(h);
    const ready = async () => {
      const res = await fetch(`${h.server.url}/ready`);
      return { status: res.status, body: await res.text() };
    };
    const failing = async () => {
      const { rows } = await h.sql.query("SELECT key FROM jsonb_each(synchro.synchro_health_detail() -> 'checks') WHERE value ->> 'state' <> 'ok' ORDER BY 1");
      return rows.map((r) => r.key);
    };
    assert.deepEqual(await failing(), []);
    assert.deepEqual(await ready(), { status: 200, body: '{"ready":true}' });
    const breaks: Array<[string, string, string]> = [
      ['UPDATE synchro.capture_limits SET max_wal_lag_bytes = 0', 'UPDATE synchro.capture_limits SET max_wal_lag_bytes = 67108864', 'wal_byte_lag'],
      ["UPDATE synchro.wal_worker_state SET heartbeat_at = now() - interval '1 day'", 'UPDATE synchro.wal_worker_state SET heartbeat_at = now()', 'heartbeat'],
      ['ALTER PUBLICATION synchro_capture DROP TABLE public.notes', 'ALTER PUBLICATION synchro_capture ADD TABLE public.notes', 'publication'],
      ['ALTER TABLE public.notes DISABLE TRIGGER synchro_capture_fence', 'ALTER TABLE public.notes ENABLE TRIGGER synchro_capture_fence', 'capture_triggers'],
      [
        "INSERT INTO synchro.wal_poison (stream_generation, commit_lsn, failure_class, failure_detail, lifecycle) SELECT stream_generation, '0/1', 'decode_failed', 'injected', 'active' FROM synchro.wal_progress",
        "UPDATE synchro.wal_poison SET lifecycle = 'repaired', resolved_at = now()",
        // Behind an active poison the age of the oldest unmaterialized commit is unknown (decision 217).
        'poison,wal_time_lag',
      ],
    ];
    for (const [breakSql, repairSql, checks] of breaks) {
      await h.sql.query(breakSql);
      assert.deepEqual(await failing(), checks.split(','));
      assert.deepEqual(await ready(), { status: 503, body: '{"ready":false}' });
      await h.sql.query(repairSql);
      assert.deepEqual(await failing(), []);
    }
    await (h.server.capture as NonNullable<Harness['server']['capture']>).stop();
    assert.ok((await failing()).includes('worker'));
    assert.equal((await ready()).status, 503);
  });
});

test('the materialization progress check holds while the worker keeps acknowledging (no torn read of slot and progress)', async () => {
  await withCapture(async (h) => {
    await connect(h);
    await catchUp(h);
    // The idle worker acknowledges the WAL its own heartbeats write, so the slot
    // moves between any two reads; writes keep it materializing too. Bounded in
    // count and time.
    const deadline = Date.now() + 4000;
    const seen = new Set<string>();
    for (let i = 0; i < 400 && Date.now() < deadline; i++) {
      if (i % 20 === 0) await h.sql.query("UPDATE public.notes SET body = body || '.' WHERE id = (SELECT min(id) FROM public.notes)");
      const { rows } = await h.sql.query("SELECT synchro.synchro_health_detail() -> 'checks' -> 'materialization_progress' ->> 'reason' AS reason");
      seen.add(rows[0].reason);
    }
    assert.deepEqual([...seen], ['ok']);
  });
});

/** Starts main.ts as a child process with capture on; resolves once it listens. */
async function spawnServer(url: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('../../reference/server/main.ts', import.meta.url)), '--database-url', url, '--jwt-secret', SECRET, '--capture'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      if (out.includes('"event":"listening"')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return child;
}

test('killing the server process while its worker is inside a materialization loses and duplicates nothing', async () => {
  const h = await freshServer(env(), SETUP);
  const blocker = new pg.Client({ connectionString: h.url });
  await blocker.connect();
  let child: ChildProcess | undefined;
  try {
    await h.server.close();
    child = await spawnServer(h.url);
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k1')`);
    // Hold the effects table so the worker blocks inside its materialization transaction.
    await blocker.query('BEGIN; LOCK TABLE synchro.scope_effects IN ACCESS EXCLUSIVE MODE');
    await h.sql.query(`INSERT INTO public.notes (id) VALUES ('k2')`);
    const deadline = Date.now() + 15_000;
    for (;;) {
      const { rows } = await h.sql.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'synchro-capture' AND wait_event_type = 'Lock'");
      if (rows[0].n > 0) break;
      if (Date.now() > deadline) throw new Error('the worker never blocked');
    }
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    await blocker.query('COMMIT');
    h.server = await startServer({ databaseUrl: h.url, jwtSecret: SECRET, log: () => undefined, capture: true });
    await catchUp(h);
    const rows = await effects(h, "pk_text IN ('k1', 'k2')");
    assert.deepEqual(rows.map((e) => e.pk).sort(), ['k1', 'k2']);
    const tx = await h.sql.query('SELECT count(*)::int AS n, count(DISTINCT commit_lsn)::int AS d FROM synchro.wal_transactions');
    assert.equal(tx.rows[0].n, tx.rows[0].d);
    const versions = await h.sql.query("SELECT pk_text, server_version FROM synchro.row_versions WHERE pk_text IN ('k1', 'k2') ORDER BY 1");
    assert.deepEqual(versions.rows.map((r) => r.server_version), rows.sort((a, b) => (a.pk < b.pk ? -1 : 1)).map((e) => e.v));
  } finally {
    child?.kill('SIGKILL');
    await blocker.end().catch(() => undefined);
    await h.close();
  }
});

test('a JSON null in a json column reaches the wire as the text "null", apart from SQL NULL', async () => {
  await withCapture(async (h) => {
    await h.sql.query(`INSERT INTO public.notes (id, body, meta) VALUES ('jn', 'json null', 'null'::jsonb), ('sn', 'sql null', NULL), ('js', 'json text', '{"b": 1, "a": [1.0, true, null]}')`);
    await h.sql.query(`UPDATE public.notes SET body = 'json null, touched' WHERE id = 'jn'`);
    await catchUp(h);
    const rows = await effects(h, "pk_text IN ('jn', 'sn', 'js')");
    const last = (pk: string) => rows.filter((e) => e.pk === pk).at(-1)?.row;
    assert.equal(last('jn')?.t1f5, 'null');
    assert.equal(last('jn')?.t1f3, 'json null, touched');
    assert.equal(last('sn')?.t1f5, null);
    assert.equal(last('js')?.t1f5, '{"a":[1,true,null],"b":1}');
  });
});

test('rows written to the partitions of a registered partitioned relation are captured as the relation\'s', async () => {
  const h = await freshServer(
    env(),
    `
CREATE TABLE public.events (id text PRIMARY KEY, owner text NOT NULL, ref text) PARTITION BY RANGE (id);
CREATE TABLE public.events_lo PARTITION OF public.events FOR VALUES FROM (MINVALUE) TO ('e-5');
CREATE TABLE public.events_hi PARTITION OF public.events FOR VALUES FROM ('e-5') TO (MAXVALUE);
SELECT synchro.synchro_prepare_projection_view('public.events');
CREATE FUNCTION public.event_scopes(p_id text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || owner FROM synchro_projection.events WHERE id = p_id;
END;
SELECT synchro.synchro_register_table('public.events', membership_fn => 'public.event_scopes');
`,
    { capture: true },
  );
  try {
    await h.sql.query(`INSERT INTO public.events VALUES ('e-1', 'u1', 'r1'), ('e-7', 'u1', 'r7')`);
    await h.sql.query(`UPDATE public.events SET ref = 'r8' WHERE id = 'e-7'`);
    await h.sql.query(`DELETE FROM public.events WHERE id = 'e-1'`);
    await catchUp(h);
    const all = await effects(h);
    assert.deepEqual(
      all.map((e) => [e.scope_id, e.pk, e.op]),
      [
        ['user:u1', 'e-1', 'upsert'],
        ['user:u1', 'e-7', 'upsert'],
        ['user:u1', 'e-7', 'upsert'],
        ['user:u1', 'e-1', 'delete'],
      ],
    );
    const fences = await h.sql.query('SELECT pk_text, server_version FROM synchro.row_versions ORDER BY 1');
    assert.deepEqual(
      fences.rows.map((r) => [r.pk_text, r.server_version]),
      [
        ['e-1', all[3]?.v],
        ['e-7', all[2]?.v],
      ],
    );
  } finally {
    await h.close();
  }
});

test('under a trickle of single-row transactions the WAL that every peek decodes again stays near one 32 KiB step, far below the WAL written', async () => {
  await withCapture(async (h) => {
    const windowNow = async () =>
      Number(
        (await h.sql.query<{ w: string }>("SELECT max(pg_current_wal_insert_lsn() - restart_lsn)::int8 AS w FROM pg_replication_slots WHERE database = current_database() AND slot_type = 'logical'"))
          .rows[0]?.w,
      );
    const start = (await h.sql.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0]?.l;
    const windows: number[] = [];
    for (let i = 0; i < 60; i++) {
      await h.sql.query(`INSERT INTO public.notes (id, body) VALUES ($1, repeat('x', 500))`, [`trickle-${i}`]);
      await catchUp(h);
      windows.push(await windowNow());
    }
    const written = Number((await h.sql.query<{ b: string }>('SELECT (pg_current_wal_insert_lsn() - $1::pg_lsn)::int8 AS b', [start])).rows[0]?.b);
    assert.ok(written > 8 * 32 * 1024, `the trickle wrote ${written} octets of WAL, too little to show the window kept short`);
    // A step of 32 KiB plus what one poll writes itself (about 10 KiB here); a 256 KiB step reached 270 KiB.
    assert.ok(Math.max(...windows) < 96 * 1024, `the decode window reached ${Math.max(...windows)} octets`);
  });
});
