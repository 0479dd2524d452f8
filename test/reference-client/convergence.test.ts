/**
 * Two reference clients converge through the reference server (embedded
 * PostgreSQL, demo tables, real WAL capture) under random local writes on a
 * few shared keys, conflicting edits, lost push responses and restarts on the
 * same data file. After every history, once both clients have synced until
 * their queues are settled and capture has caught up, both hold exactly the
 * server's live rows with the server's versions, and no local intent is left
 * unsent or unresolved.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import pg from 'pg';
import { SynchroClient } from '../../reference/client/client.ts';
import { httpTransport, NetworkError, type Transport } from '../../reference/client/sync/transport.ts';
import { type DemoServer, startDemoServer } from './demo-server.ts';
import { instantClock, tempDb } from './fixtures.ts';

const SECRET = 'reference-client-convergence-secret';
const KEYS = 3;
/** Rounds of "both clients sync" allowed to settle a history; each round needs capture to catch up first. */
const SETTLE_ROUNDS = 6;
let server: DemoServer;
let url = '';
let databaseUrl = '';

before(async () => {
  server = await startDemoServer(SECRET, ['--test-controls']);
  ({ url, databaseUrl } = server);
});

after(async () => {
  await server.stop();
});

const tokenFor = (user: string) => server.token(user);

/** Waits until every committed source transaction is visible to pull (the server's test control). */
async function captureCaughtUp(): Promise<void> {
  const res = await fetch(`${url}/__control/capture/await`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ timeout_ms: 20_000 }) });
  if (res.status !== 200) throw new Error(`capture catch-up answered ${res.status}: ${await res.text()}`);
}

type Op =
  | { kind: 'insert' | 'update'; client: 0 | 1; key: number; body: string }
  | { kind: 'delete'; client: 0 | 1; key: number }
  | { kind: 'sync' | 'sync-losing-push-response' | 'restart'; client: 0 | 1 };

const side = fc.constantFrom<0 | 1>(0, 1);
const key = fc.integer({ min: 0, max: KEYS - 1 });
const body = fc.string({ minLength: 1, maxLength: 6 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom<'insert' | 'update'>('insert', 'update'), client: side, key, body }),
  fc.record({ kind: fc.constant<'delete'>('delete'), client: side, key }),
  fc.record({ kind: fc.constantFrom<'sync' | 'sync-losing-push-response' | 'restart'>('sync', 'sync', 'sync-losing-push-response', 'restart'), client: side }),
);

/** One client of the history: its data file, a transport that can lose the next push response, and the open client. */
class Device {
  readonly path = tempDb();
  readonly clientId: string;
  loseNextPushResponse = false;
  /** Push requests sent so far, so the settle loop can tell whether a sync wrote anything to the server. */
  pushesSent = 0;
  client!: SynchroClient;
  readonly #transport: Transport;

  constructor(clientId: string, token: string) {
    this.clientId = clientId;
    const real = httpTransport(url, () => token);
    this.#transport = async (path, requestBody) => {
      if (path === '/sync/push') this.pushesSent += 1;
      const res = await real(path, requestBody);
      if (path === '/sync/push' && this.loseNextPushResponse) {
        this.loseNextPushResponse = false;
        throw new NetworkError('push response lost after the server answered');
      }
      return res;
    };
  }

  async open(): Promise<void> {
    this.client = await SynchroClient.open({ path: this.path, clientId: this.clientId, transport: this.#transport, clock: instantClock(), random: () => 0 });
  }

  /**
   * A sync; an error state (which no step of these histories should reach)
   * fails the run with its reason. `blocked` (a retryable refusal such as a
   * 503 on a loaded machine) is returned so the settle loop can go round again.
   */
  async sync(): Promise<'idle' | 'blocked'> {
    const { completion, status } = await this.client.syncNow();
    if (completion === 'error') throw new Error(`client ${this.clientId} ended a sync in error: ${JSON.stringify(status.failure)}`);
    return completion;
  }

  /**
   * Mutations still waiting for the server: pending or sealed. A write made
   * after an unsent delete of the same row ends `blocked_by_predecessor`, a
   * durable outcome that only an explicit policy call clears, so it counts as
   * settled (the row it touches stays deleted, locally as on the server).
   */
  unsettled(): string[] {
    return this.client
      .inspectMutations()
      .map((m) => String(m.status))
      .filter((s) => s === 'pending' || s === 'sealed');
  }

  /** Rows a `blocked_by_predecessor` write protects: the client keeps them as written locally instead of applying the server's row. */
  heldByBlockedIntent(): Set<string> {
    return new Set(
      this.client
        .inspectMutations()
        .filter((m) => m.status === 'blocked_by_predecessor')
        .map((m) => String(m.recordId)),
    );
  }
}

/** Applies one local write as application SQL would; a write the local table refuses (duplicate key) is simply not made. */
function write(device: Device, o: Op, id: string): void {
  try {
    if (o.kind === 'insert') device.client.execute('INSERT INTO notes(id, body) VALUES (?, ?)', [id, o.body]);
    if (o.kind === 'update') device.client.execute('UPDATE notes SET body = ? WHERE id = ?', [o.body, id]);
    if (o.kind === 'delete') device.client.execute('DELETE FROM notes WHERE id = ?', [id]);
  } catch (e) {
    if (!/UNIQUE constraint failed/.test((e as Error).message)) throw e;
  }
}

/**
 * A history that always runs first: one row edited many times on one side and
 * pulled by the other after each edit, so a client that keeps any version but
 * the latest one is caught in most runs rather than only by chance.
 */
const manyVersionsOfOneRow: Op[] = [
  { kind: 'insert', client: 0, key: 0, body: 'v0' },
  { kind: 'sync', client: 0 },
  ...Array.from({ length: 10 }, (_, i): Op[] => [
    { kind: 'update', client: 0, key: 0, body: `v${i + 1}` },
    { kind: 'sync', client: 0 },
    { kind: 'sync', client: 1 },
  ]).flat(),
];

let run = 0;

test('two clients converge on the server state under conflicting writes, lost push responses and restarts', async () => {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), async (ops) => {
        run += 1;
        const prefix = `cv${run}-`;
        const user = `convergence-${run}`;
        const token = await tokenFor(user);
        const devices = [new Device(`${prefix}a`, token), new Device(`${prefix}b`, token)] as const;
        for (const d of devices) await d.open();
        try {
          for (const d of devices) await d.sync();
          for (const o of ops) {
            const d = devices[o.client];
            if ('key' in o) write(d, o, `${prefix}${o.key}`);
            else if (o.kind === 'sync') await d.sync();
            else if (o.kind === 'sync-losing-push-response') {
              d.loseNextPushResponse = true;
              await d.sync();
              d.loseNextPushResponse = false;
            } else {
              d.client.close();
              await d.open();
            }
          }
          // Settled means: after capture caught up, both clients completed a
          // sync that pushed nothing (so no write is newer than what they
          // pulled) and left no intent unsent. A sync blocked by a retryable
          // refusal, or one that still pushed, needs another round.
          for (let round = 0; ; round++) {
            for (const d of devices) await d.sync();
            await captureCaughtUp();
            const pushesBefore = devices.map((d) => d.pushesSent);
            const completions: string[] = [];
            for (const d of devices) completions.push(await d.sync());
            const pushedAfterCatchUp = devices.some((d, i) => d.pushesSent !== pushesBefore[i]);
            if (!pushedAfterCatchUp && completions.every((c) => c === 'idle') && devices.every((d) => d.unsettled().length === 0)) break;
            if (round === SETTLE_ROUNDS) {
              assert.fail(`queues never settled: ${devices.map((d, i) => `${d.clientId} [${d.unsettled().join(', ')}] last sync ${completions[i]}`).join('; ')}${pushedAfterCatchUp ? '; a sync after the capture catch-up still pushed' : ''}`);
            }
          }
          const { rows: serverRows } = await db.query<{ id: string; body: string; v: string }>(
            `SELECT n.id, n.body, v.server_version AS v FROM demo.notes n
               JOIN synchro.row_versions v ON v.pk_text = n.id AND v.table_id = (SELECT table_id FROM synchro.relations WHERE physical_relation = 'notes' AND active)
              WHERE n.id LIKE $1 AND n.deleted_at IS NULL ORDER BY n.id COLLATE "C"`,
            [`${prefix}%`],
          );
          const expected = serverRows.map((r) => ({ id: r.id, body: r.body, version: r.v }));
          for (const d of devices) {
            // A row under blocked intent keeps the local state until a policy call clears it, so it is compared nowhere.
            const held = d.heldByBlockedIntent();
            // notes deletes softly: a deleted row stays behind with deleted_at set, on the server as locally.
            const rows = d.client.query('SELECT id, body FROM notes WHERE id LIKE ? AND deleted_at IS NULL ORDER BY id', [`${prefix}%`]) as { id: string; body: string }[];
            const versions = new Map(d.client.inspectRowVersions().map((v) => [v.recordId, v.serverVersion]));
            assert.deepEqual(
              rows.filter((r) => !held.has(r.id)).map((r) => ({ ...r, version: versions.get(r.id) })),
              expected.filter((r) => !held.has(r.id)),
              `client ${d.clientId} holds the server's live rows with their versions`,
            );
          }
        } finally {
          for (const d of devices) d.client.close();
        }
      }),
      { numRuns: 12, endOnFailure: true, examples: [[manyVersionsOfOneRow]] },
    );
  } finally {
    await db.end();
  }
});
