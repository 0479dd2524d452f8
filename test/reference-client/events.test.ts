/**
 * Reference client events: each of the nine kinds is published once the
 * durable change it reports has committed (checked from inside the listener,
 * against the database), in order with the status log, and never for a
 * change that was rolled back.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OpenOptions, SynchroClient } from '../../reference/client/client.ts';
import { type ClientEvent, ClientEvents, EVENT_LOG_LIMIT } from '../../reference/client/events.ts';
import { scratchDir } from '../support/scratch-dir.ts';
import { DriverProcess } from './driver-process.ts';
import { FakeServer } from './fake-server.ts';
import { manifest, openClient } from './fixtures.ts';

let server: FakeServer;
before(async () => {
  server = await new FakeServer(manifest()).start();
});
after(() => server.stop());

let n = 0;
const nextId = () => `events-${++n}`;

/**
 * Opens a client whose listener, at every event, records what the database
 * holds at that instant; a failed check is kept and asserted afterwards
 * (a throwing listener would be swallowed by design).
 */
function watched(extra: Partial<OpenOptions> = {}, clientId = nextId()) {
  const problems: string[] = [];
  const seen: ClientEvent[] = [];
  let client: SynchroClient | undefined;
  const check = (e: ClientEvent) => {
    seen.push(e);
    if (client === undefined) return; // raised while opening, before the handle exists
    const c = client;
    const fail = (what: string) => problems.push(`${e.kind} #${e.seq}: ${what}`);
    if (c.ctx.db.inTransaction) fail('published while a transaction is still open');
    try {
      inspect(c, e, fail);
    } catch (err) {
      fail(`the check itself failed: ${(err as Error).message}`);
    }
  };
  client = openClient(server, clientId, { onEvent: check, ...extra });
  return { client, seen, problems };
}

/** What the database must already hold when event `e` is heard. */
function inspect(c: SynchroClient, e: ClientEvent, fail: (what: string) => void): void {
  switch (e.kind) {
    case 'state_changed': {
      const last = c.ctx.db.prepare('SELECT from_state, to_state FROM _synchro_status_log ORDER BY rowid DESC LIMIT 1').get() as { from_state: string; to_state: string };
      if (c.life.state !== e.to || last.to_state !== e.to || last.from_state !== e.from) fail(`state is ${c.life.state}, last logged ${last.from_state} -> ${last.to_state}`);
      break;
    }
    case 'backoff': {
      const b = c.inspectBackoff();
      if (b === null || b.next_retry_at_ms !== e.retryAt || b.resume_state !== e.operation || b.attempt_count !== e.attempt) fail(`backoff record is ${JSON.stringify(b)}`);
      break;
    }
    case 'schema_applying':
      if (c.ctx.db.prepare('SELECT 1 FROM _synchro_migration_journal').get() === undefined) fail('no journal row');
      break;
    case 'schema_applied': {
      const s = c.inspectScopes() as { schema: { hash: string } };
      if (s.schema.hash !== e.hash || !['applied', 'completed'].includes((c.ctx.db.prepare('SELECT phase FROM _synchro_migration_journal').get() as { phase: string } | undefined)?.phase ?? '')) fail('schema not installed or journal not past its DDL');
      if (c.ctx.schema?.hash !== e.hash) fail('the client does not use the new schema yet');
      break;
    }
    case 'mutation_accepted':
    case 'mutation_rejected': {
      const m = c.inspectMutations().find((x) => x.mutationId === e.mutationID);
      const want = e.kind === 'mutation_accepted' ? 'accepted' : 'server_rejected';
      if (m?.status !== want) fail(`mutation status is ${m?.status}`);
      break;
    }
    case 'rebuild_requested':
    case 'rebuild_completed': {
      const row = c.ctx.db.prepare('SELECT rebuild_required, checksum FROM _synchro_scopes WHERE scope_id = ?').get(e.scopeID) as { rebuild_required: number; checksum: string | null } | undefined;
      const ok = e.kind === 'rebuild_requested' ? row?.rebuild_required === 1 : row?.rebuild_required === 0 && row.checksum !== null;
      if (!ok) fail(`scope row is ${JSON.stringify(row)}`);
      break;
    }
    case 'failure': {
      const f = c.life.failure();
      if (f?.code !== e.code || f.operation !== e.operation) fail(`stored failure is ${JSON.stringify(f)}`);
      break;
    }
  }
}

const kinds = (events: ClientEvent[]) => events.map((e) => e.kind);
const states = (events: ClientEvent[]) => events.flatMap((e) => (e.kind === 'state_changed' ? [e.to] : []));

test('a first sync announces each committed step, in order with the status log', async () => {
  const { client, seen, problems } = watched();
  assert.equal((await client.syncNow()).completion, 'idle');
  const log = client.eventLog();
  assert.deepEqual(problems, []);
  assert.deepEqual(log, seen, 'the log and the listener see the same events');
  assert.deepEqual(
    log.map((e) => e.seq),
    log.map((_, k) => k + 1),
    'sequence numbers count up from 1 without gaps',
  );
  assert.deepEqual(states(log), client.life.log.slice(1), 'state_changed follows the status log exactly');
  // The schema is journalled and installed while connecting; the scope it brings needs a rebuild.
  assert.deepEqual(kinds(log), [
    'state_changed',
    'state_changed',
    'schema_applying',
    'schema_applied',
    'rebuild_requested',
    'state_changed',
    'state_changed',
    'state_changed',
    'state_changed',
    'rebuild_completed',
    'state_changed',
    'state_changed',
    'state_changed',
  ]);
  assert.deepEqual(states(log), ['local_ready', 'connecting', 'schema_applying', 'ready', 'rebuilding', 'rebuilding', 'ready', 'pulling', 'ready']);
  const applied = log.find((e) => e.kind === 'schema_applied');
  assert.equal(applied?.kind === 'schema_applied' && applied.hash, manifest().schema_hash);
  assert.deepEqual(
    log.filter((e) => e.kind === 'rebuild_requested' || e.kind === 'rebuild_completed').map((e) => ('scopeID' in e ? e.scopeID : '')),
    ['all', 'all'],
  );
  // A second, quiet run raises only state changes.
  await client.syncNow();
  assert.deepEqual(new Set(kinds(client.eventLog().slice(log.length))), new Set(['state_changed']));
  client.close();
});

test('push outcomes are announced per mutation ID, with table, status and rejection code', async () => {
  const { client, problems } = watched();
  await client.syncNow();
  client.execute("INSERT INTO orders(id, title) VALUES ('ev-good', 'g')");
  client.execute("INSERT INTO orders(id, title) VALUES ('ev-bad', 'b')");
  const ids = new Map(client.inspectMutations().map((m) => [m.recordId, m.mutationId]));
  server.reject = (m) => ((m.pk as { fld_orders_id?: string }).fld_orders_id === 'ev-bad' ? 'policy_rejected' : undefined);
  try {
    const start = client.eventLog().length;
    await client.syncNow();
    const outcomes = client.eventLog().slice(start).filter((e) => e.kind === 'mutation_accepted' || e.kind === 'mutation_rejected');
    const batchId = client.inspectBatches().at(-1)?.batchId;
    assert.deepEqual(
      outcomes.map(({ seq: _s, at: _a, ...rest }) => rest),
      [
        { kind: 'mutation_accepted', mutationID: ids.get('ev-good'), tableID: 'tbl_orders', status: 'applied', batchID: batchId },
        { kind: 'mutation_rejected', mutationID: ids.get('ev-bad'), tableID: 'tbl_orders', status: 'rejected_terminal', rejectionCode: 'policy_rejected', batchID: batchId },
      ],
    );
  } finally {
    server.reject = undefined;
  }
  assert.deepEqual(problems, []);
  client.close();
});

test('entering backoff is announced with the recorded retry time, before the state change', async () => {
  const { client, problems } = watched();
  await client.syncNow();
  client.execute("INSERT INTO orders(id) VALUES ('ev-busy')");
  server.script('/sync/push', { status: 503, body: { error: { code: 'temporary_unavailable', message: 'busy', retryable: true } }, retryAfter: '5' });
  const start = client.eventLog().length;
  assert.equal((await client.syncNow()).completion, 'blocked');
  const tail = client.eventLog().slice(start);
  const at = tail.findIndex((e) => e.kind === 'backoff');
  const backoff = tail[at];
  assert.ok(backoff?.kind === 'backoff');
  assert.equal(backoff.operation, 'pushing');
  assert.equal(backoff.classification, 'http_503');
  assert.equal(backoff.retryAt, client.inspectBackoff()?.next_retry_at_ms);
  assert.ok(backoff.retryAt >= backoff.at + 5000, 'Retry-After is a lower bound');
  const next = tail[at + 1];
  assert.deepEqual(next?.kind === 'state_changed' ? [next.from, next.to] : next?.kind, ['pushing', 'backoff']);
  assert.deepEqual(problems, []);
  client.close();
});

test('a terminal failure is announced with its typed code, after the state change that stores it', async () => {
  const { client, problems } = watched();
  await client.syncNow();
  client.execute("INSERT INTO orders(id) VALUES ('ev-retired')");
  server.script('/sync/push', { status: 409, body: { error: { code: 'client_retired', message: 'retired', retryable: false } } });
  const start = client.eventLog().length;
  assert.equal((await client.syncNow()).completion, 'error');
  const tail = client.eventLog().slice(start);
  assert.deepEqual(
    tail.slice(-2).map(({ seq: _s, at: _a, ...rest }) => rest),
    [
      { kind: 'state_changed', from: 'pushing', to: 'error' },
      { kind: 'failure', operation: 'pushing', code: 'client_retired', retryable: false, recoveryAction: 'none', message: 'retired' },
    ],
  );
  assert.deepEqual(problems, []);
  client.close();
});

test('a rebuild whose final digest does not match announces no completion until a later attempt verifies', async () => {
  const id = nextId();
  const { client, problems } = watched({}, id);
  server.script('/sync/rebuild', (_req, normal) => {
    const reply = normal();
    const body = reply.body as { checksum?: { digest: string } };
    if (body.checksum !== undefined) body.checksum = { ...body.checksum, digest: '0'.repeat(64) };
    return reply;
  });
  assert.equal((await client.syncNow()).completion, 'idle');
  const log = client.eventLog();
  assert.deepEqual(
    log.filter((e) => e.kind.startsWith('rebuild_')).map((e) => e.kind),
    ['rebuild_requested', 'rebuild_completed'],
    'requested once, completed once: the mismatched attempt announced nothing',
  );
  const rebuilds = server.requests.filter((r) => r.path === '/sync/rebuild').map((r) => JSON.parse(r.body.toString()) as { client_id: string; rebuild_id: string });
  const ids = new Set(rebuilds.filter((r) => r.client_id === id).map((r) => r.rebuild_id));
  assert.equal(ids.size, 2, 'the completion belongs to a second attempt');
  assert.deepEqual(problems, []);
  client.close();
});

test('changes rolled back inside a transaction raise no event; the retried change raises it once', async () => {
  let armed = true;
  const crash = (point: string) => {
    if (armed && point === 'inside_pull_apply') throw new Error('injected failure inside the pull transaction');
  };
  const id = nextId();
  const { client, problems } = watched({ crash }, id);
  armed = false;
  await client.syncNow();
  armed = true;
  // A newly assigned scope arrives on the next pull page and would need a rebuild.
  server.assign(id, ['all', 'extra']);
  const start = client.eventLog().length;
  assert.equal((await client.syncNow()).completion, 'error');
  const failed = client.eventLog().slice(start);
  assert.deepEqual(
    failed.filter((e) => e.kind === 'rebuild_requested'),
    [],
    'the scope addition was rolled back, so nothing announces it',
  );
  assert.equal(
    client.inspectScopes().scopes.some((s) => s.scopeId === 'extra'),
    false,
  );
  armed = false;
  const retry = client.eventLog().length;
  server.assign(id, ['all', 'extra']);
  assert.equal((await client.retryAfterError()).completion, 'idle');
  const retried = client.eventLog().slice(retry);
  assert.deepEqual(
    retried.filter((e) => e.kind.startsWith('rebuild_')).map((e) => [e.kind, 'scopeID' in e ? e.scopeID : '']),
    [
      ['rebuild_requested', 'extra'],
      ['rebuild_completed', 'extra'],
    ],
  );
  assert.deepEqual(problems, []);
  client.close();
});

test('a listener that throws or rejects does not disturb sync, and unsubscribing stops delivery', async () => {
  const client = openClient(server, nextId());
  let calls = 0;
  client.on(() => {
    calls++;
    throw new Error('application bug');
  });
  client.on(async () => {
    throw new Error('async application bug');
  });
  const seen: string[] = [];
  const off = client.on((e) => {
    seen.push(e.kind);
  });
  assert.equal((await client.syncNow()).completion, 'idle');
  assert.equal(client.status().state, 'ready');
  // The first event (entering local_ready) was published while opening, before these subscriptions.
  assert.equal(calls, client.eventLog().length - 1, 'the throwing listener was called for every later event');
  assert.equal(seen.length, client.eventLog().length - 1);
  off();
  client.execute("INSERT INTO orders(id) VALUES ('ev-quiet')");
  await client.syncNow();
  assert.equal(seen.length < client.eventLog().length, true);
  assert.equal(client.inspectMutations()[0]?.status, 'accepted');
  client.close();
});

test('a durable unit holds its events until it returns and drops them when it throws', () => {
  let now = 100;
  const bus = new ClientEvents(() => now);
  const got: ClientEvent[] = [];
  bus.on((e) => {
    got.push(e);
  });
  assert.throws(() =>
    bus.unit(() => {
      bus.emit({ kind: 'rebuild_requested', scopeID: 'dropped' });
      throw new Error('rolled back');
    }),
  );
  assert.equal(got.length, 0);
  bus.unit(() => {
    bus.emit({ kind: 'rebuild_requested', scopeID: 'kept' });
    try {
      bus.unit(() => {
        bus.emit({ kind: 'rebuild_requested', scopeID: 'inner-dropped' });
        throw new Error('inner rolled back');
      });
    } catch {
      // the outer unit goes on without the inner one's work
    }
    assert.equal(got.length, 0, 'nothing is published before the outer unit returns');
    now = 200;
  });
  bus.emit({ kind: 'rebuild_completed', scopeID: 'kept' });
  assert.deepEqual(
    got.map((e) => [e.seq, e.at, 'scopeID' in e ? e.scopeID : '']),
    [
      [1, 200, 'kept'],
      [2, 200, 'kept'],
    ],
  );
  assert.deepEqual(bus.log(), got);
});

test('the event log keeps the newest entries and its sequence shows what was dropped', () => {
  const bus = new ClientEvents(() => 0);
  for (let k = 0; k < EVENT_LOG_LIMIT + 5; k++) bus.emit({ kind: 'rebuild_requested', scopeID: `s${k}` });
  const log = bus.log();
  assert.equal(log.length, EVENT_LOG_LIMIT);
  assert.equal(log[0]?.seq, 6);
  assert.equal(log.at(-1)?.seq, EVENT_LOG_LIMIT + 5);
});

test('the driver reports the event log next to the status log, including a migration resumed on opening', async (t) => {
  const cfg = { dataDir: scratchDir('synchro-events-'), serverUrl: server.url, token: 't', clientId: nextId(), appVersion: '1.0.0', bundledManifest: manifest() };
  const first = new DriverProcess({ SYNCHRO_CRASH_AT: 'migration_prepared' });
  assert.deepEqual(await first.raw('open', cfg), { killed: 'SIGKILL' });
  const d = new DriverProcess();
  // A failed assertion must not leave the driver running and hold the test runner open.
  t.after(() => {
    if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGKILL');
  });
  await d.call('open', cfg);
  await d.call('syncNow');
  // The result is checked against schemas/adapter by DriverProcess.
  const status = await d.call<{ statusLog: string[]; eventLog: ClientEvent[] }>('getStatus');
  const log = status.eventLog;
  assert.deepEqual(
    log.slice(0, 2).map(({ seq: _s, at: _a, ...rest }) => rest),
    [
      { kind: 'schema_applying', version: 1, hash: manifest().schema_hash, resumed: true },
      { kind: 'schema_applied', version: 1, hash: manifest().schema_hash },
    ],
  );
  assert.deepEqual(states(log), status.statusLog.slice(1));
  assert.ok(log.some((e) => e.kind === 'rebuild_completed'));
  await d.close();
});
