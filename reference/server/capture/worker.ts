/**
 * The WAL capture worker. It owns one permanent logical slot (pgoutput with
 * messages) on the publication of exactly the registered relations, peeks
 * complete source transactions, materializes each in one database
 * transaction, and only then advances the slot and records the
 * acknowledgement. A transaction it cannot materialize is quarantined once,
 * durably and without row data, and blocks everything after it.
 *
 * It runs inside the server process. Work is triggered, never timed:
 * the fence trigger's NOTIFY, a retry request, or a caller's `catchUp`.
 *
 * Its callers see it as a CaptureHandle (core/capture-control.ts). Beside
 * catching up, `pause` lets the transaction being materialized finish and
 * then does nothing more until `resume` (the stream reset stops it that way
 * too); `kill` cuts its database sessions without a clean shutdown, so an
 * open materialization rolls back; `resume` after a kill reconnects and
 * recovers from the durable progress alone. The test-only failure injection
 * (poison, crash points) is test-controls.ts.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type CaptureHandle, CapturePoisoned, CaptureStopped, type CrashPoint, ResetActivationRefused, type ResetPhase, type ResetProgress, type StreamResetResult } from '../core/capture-control.ts';
import { fault } from '../core/faults.ts';
import { formatLsn, parseLsn } from '../core/lsn.ts';
import { relationDrifted, relationDriftedSql } from '../core/relation-identity.ts';
import { loadTables, quoteIdent, registrySources } from '../core/tables.ts';
import { assertFencesUnused, type RegistrationKind } from './fence-correlation.ts';
import { loadImpactRules } from './impact.ts';
import { materializeTransaction } from './materialize.ts';
import { ensureForwarders, forwarderOf, type OwnerCall } from './owner-calls.ts';
import { readPollStart } from './poll-start.ts';
import type { ImpactRule, RegisteredTable } from './registered-table.ts';
import { RegistryTimeline } from './registry-generations.ts';
import { forceRebuildOfRebaselinedScopes, readRowEvents } from './relation-rebinding.ts';
import { appendReplayedEffects, appendReplayedEvents } from './replay-faults.ts';
import { ActivationRefused, discardInterruptedResets, killOperatorSessions, StreamResetFailed, StreamResetOperator } from './stream-reset.ts';
import { CaptureTestControls } from './test-controls.ts';
import { CaptureFailure, groupTransactions, learnRelations, type RelationInfo, type TableLookup } from './transaction.ts';
import { flushWal } from './wal-flush.ts';

export const PUBLICATION = 'synchro_capture';
/** The worker's state while something only an operator can clear (drift, a quarantine without retry) blocks it. */
const BLOCKED = "UPDATE synchro.wal_worker_state SET state = 'blocked', heartbeat_at = now()";
/** The worker's state once a poll has acknowledged everything committed up to the flush position it read. */
const CAUGHT_UP = "UPDATE synchro.wal_worker_state SET state = 'running', heartbeat_at = now(), caught_up_at = now()";
const CHANNEL = 'synchro_capture';
/** Rows per peek unless synchro.capture_limits.decode_row_limit says otherwise; decoding always stops at a transaction boundary. */
const PEEK_ROWS = 5000;
/** Decoded messages in one poll after which the restart point is moved on (nudgeRestartPoint). */
const RESTART_NUDGE_MESSAGES = 1000;
/**
 * WAL between the slot's restart point and the insert position past which a
 * poll also moves the restart point on: every peek and slot advance decodes
 * that whole window again, so under a steady trickle of small transactions
 * (fewer than RESTART_NUDGE_MESSAGES per poll) it would otherwise grow until
 * PostgreSQL's own running-transactions record, about every 15 seconds. Each
 * poll decodes the window three times (its peek and two slot advances), so a
 * short step is cheaper than the one small record it costs (decision 427).
 */
const RESTART_NUDGE_BYTES = 32 * 1024;
/** Decoded messages materialized before the worker first analyzes its tables (refreshStatistics). */
const ANALYZE_MIN_MESSAGES = 2000;
/** Heartbeat period; readiness allows a heartbeat age of synchro.capture_limits.max_heartbeat_age_seconds. */
const HEARTBEAT_MS = 5000;

/**
 * A materialized transaction (or a peek's run of them) waiting for its acknowledgement; not
 * materialize.ts's `Materialized`, which counts what one transaction wrote.
 */
interface Unacknowledged {
  /** The processed boundary the transaction's commit recorded: its end, or the poll's flush position. */
  through: string;
  /** Whether any of them wrote rows (the crash points of tests fire only then). */
  hasRows: boolean;
  /** Whether `through` is the flush position the poll read: the worker is then caught up. */
  caughtUp?: boolean;
}

/**
 * The recorded slot cannot be adopted: missing, of another plugin, or
 * positioned outside the recorded stream. The worker then stays blocked
 * without touching the slot or the progress record, until an operator acts.
 */
class SlotRefused extends Error {}

export interface CaptureStatus {
  generation: string;
  slot: string;
  processedEndLsn: string;
  acknowledgedEndLsn: string;
  materializedCommitLsn: string | null;
  poisoned: boolean;
}

export class CaptureWorker implements CaptureHandle {
  private readonly databaseUrl: string;
  /**
   * The worker's own login (SYNC-OPS-002, decision 350), when the deployment
   * configured one: its SQL sessions then run `SET ROLE synchro_worker` before
   * anything else, and the slot is used on a session of the login itself,
   * whose REPLICATION attribute authorizes it. Without one, every capture
   * session is the server's own, as before.
   */
  private readonly workerUrl: string | undefined;
  private readonly log: (line: string) => void;
  private readonly caughtUp: (() => void) | undefined;
  private db: pg.Client | undefined;
  /** Where slot functions run, a session of their own: the worker login's without SET ROLE, or the server login's when there is no worker login (decision 413). */
  private slotDb: pg.Client | undefined;
  private listener: pg.Client | undefined;
  private slot = '';
  private generation = '';
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly relations = new Map<number, RelationInfo>();
  private waiters: Array<() => void> = [];
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  /** Stopped by a test control (pause or kill): no peek, no acknowledgement until resume. */
  private paused = false;
  /** Killed: the sessions are gone, and resume has to connect and reconcile from scratch. */
  private killed = false;
  /** A session of the worker failed (the database shut down under it): resume connects again, as after a kill. */
  private sessionLost = false;
  /** The recorded slot was refused at start: nothing is read or acknowledged until a restart adopts a valid one. */
  private slotRefused = false;
  /**
   * The registry generation each row event is read under: the one whose
   * activation message precedes it in the stream, read from that generation's
   * stored snapshot (registry-generations.ts), never the registry as it is now.
   */
  private readonly registryTimeline = new RegistryTimeline((snapshot) => this.tableLookup(snapshot));
  /** Decoded messages materialized since the worker last analyzed its tables, and before that. */
  private writtenSinceAnalyze = 0;
  private writtenBeforeAnalyze = 0;
  /** The decode window at the last running-transactions record logged for it, or the smallest seen since (nudgeOnDecodeWindow). */
  private windowFloor = 0;
  /** Test-only: poison and crash points armed by the test controls. */
  private readonly testControls = new CaptureTestControls();
  /** The operator's stream reset this server drives (its session stays open between held phases). */
  private resetOperator: StreamResetOperator | undefined;

  /**
   * `serverPool` is the server's own pool (its login, not the worker's): set-up
   * work and terminating the worker's sessions borrow a session from it.
   */
  constructor(options: {
    databaseUrl: string;
    serverPool: pg.Pool;
    workerUrl?: string;
    log: (line: string) => void;
    /** Called right after committing a transaction's rows when nothing decoded is left unread behind it. */
    caughtUp?: () => void;
  }) {
    this.databaseUrl = options.databaseUrl;
    this.serverPool = options.serverPool;
    this.workerUrl = options.workerUrl;
    this.log = options.log;
    this.caughtUp = options.caughtUp;
  }

  /** A capture SQL session: as the worker login with `SET ROLE synchro_worker` first, or the server's own. */
  private async sqlSession(applicationName?: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.workerUrl ?? this.databaseUrl, ...(applicationName === undefined ? {} : { application_name: applicationName }) });
    // A session ended from outside (a dropped database, a restart) fails the query in hand; unlistened, it would end the process.
    client.on('error', () => undefined);
    await client.connect();
    if (this.workerUrl !== undefined) await client.query('SET ROLE synchro_worker');
    return client;
  }

  /**
   * Set-up that needs the installer's authority, not the worker's: the
   * publication (its tables must be owned by whoever alters it) and dropping
   * the slots of interrupted resets. Done on the server's own session when the
   * worker runs as its login, else on the worker's session as before.
   */
  private async withSetupSession(work: (db: pg.ClientBase) => Promise<void>): Promise<void> {
    if (this.workerUrl === undefined) return work(this.db as pg.Client);
    await this.withServerSession(work);
  }

  /** The server's pool, from which the worker borrows the server's own session (withServerSession). */
  private readonly serverPool: pg.Pool;

  /**
   * The server's own session (not the worker login's), for set-up work and
   * for terminating the worker's sessions, borrowed from the server's pool so
   * that no use costs a backend start of its own; a use that fails destroys
   * its session, so a transaction it left open never reaches another user.
   */
  private async withServerSession<T>(work: (db: pg.ClientBase) => Promise<T>): Promise<T> {
    const session = await this.serverPool.connect();
    try {
      const result = await work(session);
      session.release();
      return result;
    } catch (e) {
      session.release(e instanceof Error ? e : new Error(String(e)));
      throw e;
    }
  }

  async start(): Promise<void> {
    this.relations.clear();
    const db = new pg.Client({ connectionString: this.workerUrl ?? this.databaseUrl, application_name: 'synchro-capture' });
    await db.connect();
    db.on('error', () => {
      this.sessionLost = true;
    });
    this.db = db;
    // The worker login holds nothing of its own (NOINHERIT): its role comes first, in the same round trip.
    await db.query(`${this.workerUrl === undefined ? '' : 'SET ROLE synchro_worker; '}SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'iso_8601'; SET extra_float_digits = 3`);
    // The slot has a session of its own (the login itself, under the worker login; decision 413). Decoding
    // WAL (a peek, a slot advance) leaves the decoding backend's catalog caches to be rebuilt by its next
    // catalog read, which on the worker's own session cost a few milliseconds of every poll.
    const slotDb = new pg.Client({ connectionString: this.workerUrl ?? this.databaseUrl, application_name: 'synchro-capture-slot' });
    this.slotDb = slotDb;
    await slotDb.connect();
    slotDb.on('error', () => {
      this.sessionLost = true;
    });
    const { rows } = await db.query<{ oid: string }>('SELECT oid::text FROM pg_database WHERE datname = current_database()');
    this.slot = `synchro_capture_${rows[0]?.oid}`;
    await this.withSetupSession(async (setup) => {
      await this.ensurePublication(setup);
      await discardInterruptedResets(setup);
    });
    try {
      await this.ensureSlot();
    } catch (e) {
      if (!(e instanceof SlotRefused)) throw e;
      // Blocked, not crashed: readiness stays failed, and neither the slot nor the progress record is touched.
      this.log(`capture refused its slot: ${e.message}`);
      this.slotRefused = true;
      this.paused = true;
      await db.query("INSERT INTO synchro.wal_worker_state VALUES (true, 'blocked', now()) ON CONFLICT (singleton) DO UPDATE SET state = 'blocked', heartbeat_at = now()");
      return;
    }
    await this.registryTimeline.start(db, this.generation);
    await db.query("INSERT INTO synchro.wal_worker_state VALUES (true, 'running', now()) ON CONFLICT (singleton) DO UPDATE SET state = 'running', heartbeat_at = now()");
    const listener = await this.sqlSession('synchro-capture-listen');
    listener.on('notification', () => this.kick());
    await listener.query(`LISTEN ${CHANNEL}`);
    this.listener = listener;
    // The heartbeat proves liveness to readiness; it also polls, as a safety net behind NOTIFY.
    this.heartbeat = setInterval(() => this.kick(), HEARTBEAT_MS);
    this.heartbeat.unref();
    this.kick();
  }

  /** The publication lists exactly the active registered relations. */
  private async ensurePublication(db: pg.ClientBase): Promise<void> {
    if ((await db.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [PUBLICATION])).rowCount === 0) await db.query(`CREATE PUBLICATION ${PUBLICATION} WITH (publish_via_partition_root = true)`);
    const wanted = new Set(
      // By stored OID, and only while it still names the registered table: a same-named table created
      // after a drop (or a renamed one) is never published in the registration's place.
      (
        await db.query<{ q: string }>(
          `SELECT format('%I.%I', n.nspname, c.relname) AS q FROM synchro.relations r
             JOIN pg_class c ON c.oid = r.physical_relation_oid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE r.active AND n.nspname = r.physical_schema AND c.relname = r.physical_relation`,
        )
      ).rows.map((r) => r.q),
    );
    const present = new Set(
      (await db.query<{ q: string }>("SELECT format('%I.%I', schemaname, tablename) AS q FROM pg_publication_tables WHERE pubname = $1", [PUBLICATION])).rows.map((r) => r.q),
    );
    const add = [...wanted].filter((q) => !present.has(q));
    const drop = [...present].filter((q) => !wanted.has(q));
    if (add.length > 0) await db.query(`ALTER PUBLICATION ${PUBLICATION} ADD TABLE ${add.join(', ')}`);
    if (drop.length > 0) await db.query(`ALTER PUBLICATION ${PUBLICATION} DROP TABLE ${drop.join(', ')}`);
  }

  /**
   * First start: a new slot and a new stream generation starting at the slot's
   * position, then a baseline of every registered table's committed rows.
   * Later starts: reconcile the slot with the recorded acknowledgement.
   */
  private async ensureSlot(): Promise<void> {
    const db = this.db as pg.Client;
    const progress = (await db.query<{ stream_generation: string; slot_name: string; acknowledged_end_lsn: string; processed_end_lsn: string; generation_start_lsn: string }>(
      'SELECT stream_generation, slot_name, acknowledged_end_lsn::text, processed_end_lsn::text, generation_start_lsn::text FROM synchro.wal_progress',
    )).rows[0];
    // The progress row names the active slot: the first one, or the candidate a stream reset activated.
    if (progress !== undefined) this.slot = progress.slot_name;
    const slot = (await db.query<{ confirmed: string | null; plugin: string }>(
      'SELECT confirmed_flush_lsn::text AS confirmed, plugin FROM pg_replication_slots WHERE slot_name = $1',
      [this.slot],
    )).rows[0];
    if (progress === undefined) {
      if (slot !== undefined) throw new Error('a capture slot exists without a recorded stream generation; refusing to adopt it');
      const created = await (this.slotDb as pg.Client).query<{ lsn: string }>("SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput')", [this.slot]);
      const start = created.rows[0]?.lsn as string;
      this.generation = randomUUID();
      await db.query(
        'INSERT INTO synchro.wal_progress (stream_generation, slot_name, generation_start_lsn, processed_end_lsn, acknowledged_end_lsn) VALUES ($1, $2, $3, $3, $3)',
        [this.generation, this.slot, start],
      );
      // Rows present before the slot existed enter the stream as baseline messages; the baseline reads
      // every registered relation, which is the installer's authority, not the worker's.
      await this.withSetupSession(async (setup) => {
        await setup.query('BEGIN');
        await setup.query('SELECT synchro.capture_baseline(table_id) FROM synchro.relations WHERE active ORDER BY table_id COLLATE "C"');
        await setup.query('COMMIT');
      });
      return;
    }
    this.generation = progress.stream_generation;
    if (slot === undefined || slot.plugin !== 'pgoutput' || slot.confirmed === null) throw new SlotRefused('the recorded capture slot is missing');
    const confirmed = parseLsn(slot.confirmed);
    const ack = parseLsn(progress.acknowledged_end_lsn);
    const processed = parseLsn(progress.processed_end_lsn);
    // Before the generation start it would decode what the stream never held; past the processed boundary WAL
    // was released that nothing materialized (a slot advanced by someone else, or re-created under the name).
    if ((confirmed < parseLsn(progress.generation_start_lsn) || confirmed > processed) && !fault('cap005-adopt-slot-outside-stream')) throw new SlotRefused('the capture slot is outside the recorded stream'); // fault: server:cap005-adopt-slot-outside-stream
    // A slot advance is not crash-durable: catch the slot up to the acknowledgement, or adopt a slot already ahead.
    if (confirmed < ack) await (this.slotDb as pg.Client).query('SELECT pg_replication_slot_advance($1, $2::pg_lsn)', [this.slot, progress.acknowledged_end_lsn]);
    else if (confirmed > ack) await db.query('UPDATE synchro.wal_progress SET acknowledged_end_lsn = $1', [slot.confirmed]);
  }

  /** Asks for a poll; polls never overlap, and a request during one runs another after it. */
  kick(): void {
    if (this.stopped || this.paused) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.pollOnce();
        } catch (e) {
          this.log(`capture poll failed: ${(e as { code?: string }).code ?? (e as Error).name}`);
        }
        const ws = this.waiters;
        this.waiters = [];
        for (const w of ws) w();
      } while (this.again && !this.stopped && !this.paused);
      this.running = undefined;
    })();
  }

  private async activePoison(): Promise<{ id: string; retry: boolean; commitLsn: string } | undefined> {
    const db = this.db as pg.Client;
    const { rows } = await db.query<{ id: string; retry: boolean; commit_lsn: string }>(
      "SELECT id::text, retry_requested_at IS NOT NULL AS retry, commit_lsn::text FROM synchro.wal_poison WHERE lifecycle = 'active'",
    );
    const r = rows[0];
    return r === undefined ? undefined : { id: r.id, retry: r.retry, commitLsn: r.commit_lsn };
  }

  /** The registered tables: live, or as a registry generation's stored snapshot left them. */
  private async tableLookup(snapshot?: unknown): Promise<{ lookup: TableLookup; tables: Map<string, RegisteredTable> }> {
    const db = this.db as pg.Client;
    // Capture dependencies are decoded and projected like synced tables; they have no scopes of their own.
    const defs = await loadTables(db as unknown as pg.PoolClient, ['synced', 'capture_dependency'], snapshot);
    const [relations] = registrySources(snapshot === undefined ? undefined : '$1');
    const impacts = await loadImpactRules(db);
    const { rows } = await db.query<{ table_id: string; kind: RegistrationKind; oid: number; physical_schema: string; physical_relation: string; membership_function: string | null; owner: string | null; max_scope_fanout: number }>(
      `SELECT r.table_id, r.kind, r.physical_relation_oid::int8::int AS oid, r.physical_schema, r.physical_relation, r.membership_function, r.max_scope_fanout,
              -- The registered function is the one taking the key's type (an overload may share its name),
              -- resolved as registration resolved it (synchro.function_by_name, which the worker may not
              -- execute: its lookup is written out here on the catalog alone).
              (SELECT pg_get_userbyid(p.proowner) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE array_length(parse_ident(r.membership_function), 1) = 2
                  AND n.nspname = (parse_ident(r.membership_function))[1] AND p.proname = (parse_ident(r.membership_function))[2]
                  AND p.proargtypes::text = (SELECT a.atttypid::text FROM pg_attribute a WHERE a.attrelid = r.physical_relation_oid AND a.attname = r.pk_column)) AS owner
         FROM ${relations} WHERE r.active`,
      snapshot === undefined ? [] : [JSON.stringify(snapshot)],
    );
    const tables = new Map<string, RegisteredTable>();
    const byOid = new Map<number, RegisteredTable>();
    const kinds = new Map<string, RegistrationKind>();
    for (const r of rows) {
      const def = defs.get(r.table_id);
      if (def === undefined) continue;
      kinds.set(r.table_id, r.kind);
      const membershipFunction = fault('cap009-membership-function-by-bare-name') ? (r.membership_function?.split('.').pop() ?? null) : r.membership_function; // fault: server:cap009-membership-function-by-bare-name
      const t: RegisteredTable = { def, oid: Number(r.oid), schema: r.physical_schema, name: r.physical_relation, membershipFunction, membershipOwner: r.owner, maxScopeFanout: r.max_scope_fanout, impacts: impacts.get(r.table_id) ?? [] };
      tables.set(r.table_id, t);
      byOid.set(t.oid, t);
    }
    if (this.workerUrl !== undefined) await this.forwardOwnerCalls(tables.values(), impacts);
    const lookup: TableLookup = {
      byOid(oid) {
        const t = byOid.get(oid);
        if (t === undefined) return undefined;
        return {
          tableId: t.def.tableId,
          pkColumn: t.def.pkColumn,
          schema: t.schema,
          name: t.name,
          columns: new Set(t.def.fields.map((f) => f.column)),
          jsonColumns: new Set(t.def.fields.filter((f) => f.type === 'json').map((f) => f.column)),
        };
      },
      registration(tableId) {
        const t = tables.get(tableId);
        const kind = kinds.get(tableId);
        return t === undefined || kind === undefined ? undefined : { tableId, relationId: t.def.relationId, kind, pkColumn: t.def.pkColumn };
      },
    };
    return { lookup, tables };
  }

  /**
   * The worker login cannot take on a function owner's role: each membership
   * and impact function it calls goes through a forwarder running as that
   * owner (owner-calls.ts), made on the server's own session.
   */
  private async forwardOwnerCalls(tables: Iterable<RegisteredTable>, impacts: Map<string, ImpactRule[]>): Promise<void> {
    const membership: Array<[RegisteredTable, OwnerCall]> = [];
    for (const t of tables) {
      if (t.membershipFunction === null || !t.membershipOwner) continue;
      membership.push([t, { kind: 'membership', fn: t.membershipFunction, keyType: t.def.byId.get(t.def.pkFieldId)?.sqlType ?? 'text', owner: t.membershipOwner }]);
    }
    const impact: Array<[ImpactRule, OwnerCall]> = [...impacts.values()].flat().map((rule) => [rule, { kind: 'impact', fn: rule.impactFunction, owner: rule.impactOwner }]);
    await this.withSetupSession((admin) => ensureForwarders(admin, [...membership, ...impact].map(([, call]) => call)));
    for (const [t, call] of membership) t.membershipCall = forwarderOf(call);
    for (const [rule, call] of impact) rule.impactCall = forwarderOf(call);
  }

  /** One pass: decode what is committed, materialize and acknowledge transaction by transaction. */
  private async pollOnce(): Promise<void> {
    const db = this.db as pg.Client;
    // One round trip (poll-start.ts): quarantine, cleared boundary, digest hash, row limit, decode window.
    const start = await readPollStart(db, this.slot);
    const poison = start.poison;
    if (poison !== undefined && !poison.retry) {
      await db.query(BLOCKED);
      return;
    }
    // A cleared acknowledgement boundary no longer proves where the slot is: wait for an operator, never write over it.
    if (start.ackCleared) {
      await db.query(BLOCKED);
      return;
    }
    let decoded = 0;
    // Read once per poll: a manifest published meanwhile only means digests stored under the old hash.
    const digestHash = start.digestHash;
    const rowLimit = start.rowLimit ?? PEEK_ROWS;
    let limit = rowLimit;
    // The first peek reads up to the flush position read with the poll's start; each later one reads afresh.
    let flush = start.flush;
    // Whether the poll's last transaction was materialized through the flush position (materializeOne).
    let ackedThroughFlush = false;
    // Transactions of this peek materialized but not yet acknowledged: one slot advance covers them all.
    let pending: Unacknowledged | undefined;
    const settle = async () => {
      if (pending === undefined) return;
      const batch = pending;
      pending = undefined;
      await this.acknowledge(batch);
    };
    for (let peeks = 0; ; peeks++) {
      if (peeks > 0) flush = await flushWal(db);
      let raw: Buffer[];
      try {
        raw = (await (this.slotDb as pg.Client).query<{ data: Buffer }>(
          `SELECT data FROM pg_logical_slot_peek_binary_changes($1, $2::pg_lsn, $3, 'proto_version', '1', 'publication_names', '${PUBLICATION}', 'messages', 'true')`,
          [this.slot, flush, limit],
        )).rows.map((r) => r.data);
      } catch (e) {
        this.log(`capture decode failed: ${(e as { code?: string }).code ?? 'error'}`);
        return;
      }
      decoded += raw.length;
      // A registered relation that drifted (renamed, moved, re-created, key or replica identity changed)
      // blocks everything: nothing is materialized or acknowledged against a registration that no longer
      // names its table. Checked after the peek, so a drift committed before anything the peek returned is
      // seen: with a transaction to materialize, in the round trip that opens its materialization.
      if (fault('cap009-auto-rebind-on-drift')) await this.withSetupSession((s) => s.query('UPDATE synchro.relations r SET physical_schema = c.relnamespace::regnamespace::text, physical_relation = c.relname FROM pg_class c WHERE c.oid = r.physical_relation_oid AND r.active').then(() => undefined)); // fault: server:cap009-auto-rebind-on-drift
      const checkDrift = !fault('cap009-capture-ignores-relation-drift'); // fault: server:cap009-capture-ignores-relation-drift
      const txs = groupTransactions(raw);
      if (checkDrift && txs.length === 0 && (await relationDrifted(db))) {
        await db.query(BLOCKED);
        return;
      }
      if (fault('cap003-materialize-in-start-order')) for (const tx of txs.sort((a, b) => a.xid - b.xid)) learnRelations(tx, this.relations); // fault: server:cap003-materialize-in-start-order
      if (txs.length === 0) {
        // A peek cut short by its limit that held only messages outside transactions says nothing about
        // what follows them: acknowledging up to the flush position would skip those transactions unread.
        if (raw.length >= limit) {
          limit += raw.length;
          continue;
        }
        break;
      }
      for (const [i, tx] of txs.entries()) {
        // A peek shorter than its limit read everything committed: its last transaction catches capture up.
        const last = raw.length < limit && i === txs.length - 1;
        const done = await this.materializeOne(tx, { digestHash, poisoned: poison !== undefined, last, flush, checkDrift: checkDrift && i === 0, settle });
        if (done === undefined) return;
        ackedThroughFlush = done.through === flush;
        pending = { through: done.through, hasRows: done.hasRows || pending?.hasRows === true, caughtUp: ackedThroughFlush };
        await this.refreshStatistics(tx.messages.length);
        // A pause lets the transaction in hand finish and be acknowledged, then nothing more is read or acknowledged.
        if (this.paused) {
          await settle();
          return;
        }
      }
      await settle();
      if (raw.length < limit) break;
      limit = rowLimit;
    }
    // Everything committed up to the flush position is read: acknowledge it and record the worker caught up,
    // unless the last transaction did both.
    if (!ackedThroughFlush) await this.idleAck(flush, CAUGHT_UP);
    if (decoded >= RESTART_NUDGE_MESSAGES) await this.nudgeRestartPoint();
    else await this.nudgeOnDecodeWindow(start.decodeWindow);
  }

  /**
   * The tables the worker writes grow from nothing, much faster than
   * autovacuum analyzes them (it looks once a minute), and with statistics
   * taken when they were small the planner reads a whole scope's effects for
   * each key. So the worker analyzes them itself each time what it wrote since
   * the last time is as much as what it had written before: once per
   * doubling, cheap next to the writes. Without the right to analyze, the
   * planner keeps autovacuum's pace, as before.
   */
  private async refreshStatistics(messages: number): Promise<void> {
    this.writtenSinceAnalyze += messages;
    if (this.writtenSinceAnalyze < Math.max(ANALYZE_MIN_MESSAGES, this.writtenBeforeAnalyze)) return;
    this.writtenBeforeAnalyze += this.writtenSinceAnalyze;
    this.writtenSinceAnalyze = 0;
    try {
      // Vacuuming scope contents also marks their pages all-visible, so a scope digest reads its index alone.
      await (this.db as pg.Client).query('VACUUM (ANALYZE) synchro.scope_rows');
      await (this.db as pg.Client).query('ANALYZE synchro.scope_effects, synchro.membership_edges, synchro.projections');
    } catch {
      // Not permitted: the statistics stay autovacuum's.
    }
    // The projections membership functions read by key: without statistics the planner reads a whole
    // projection for each transaction's keys, a cost that grows with the rows captured (decision 432).
    const projections = [...(this.registryTimeline.started?.tables.values() ?? [])].map((t) => `synchro_projection.${quoteIdent(t.name)}`);
    if (projections.length === 0) return;
    try {
      await (this.db as pg.Client).query(`ANALYZE ${projections.join(', ')}`);
    } catch {
      // Not permitted, or a projection went with its relation: the statistics stay autovacuum's.
    }
  }

  /**
   * Every peek decodes again from the slot's restart point, which moves only
   * past a running-transactions record; PostgreSQL logs one every 15 seconds
   * or so. After a large backlog, logging one now (and acknowledging past it
   * in one more poll) keeps the next peeks from decoding the whole backlog
   * again. It needs the right to call pg_log_standby_snapshot; without it the
   * restart point moves at the server's own pace, as before.
   */
  private async nudgeRestartPoint(): Promise<void> {
    if (await this.logRunningTransactions()) this.again = true;
  }

  private async logRunningTransactions(): Promise<boolean> {
    try {
      await (this.slotDb as pg.Client).query('SELECT pg_log_standby_snapshot()');
      return true;
    } catch {
      // Not permitted: nothing changes but the decoding cost of the next peeks.
      return false;
    }
  }

  /**
   * Under a trickle of small transactions: once the decode window has grown
   * by RESTART_NUDGE_BYTES since it was last this small (or since the last
   * record logged here), log a running-transactions record, and let the next
   * poll, whenever work brings it, move past it. No extra poll is asked for,
   * and while the restart point cannot move (an old transaction anywhere in
   * the cluster holds it) this writes one small record per window step only.
   */
  private async nudgeOnDecodeWindow(window: number): Promise<void> {
    this.windowFloor = Math.min(this.windowFloor, window);
    if (window < this.windowFloor + RESTART_NUDGE_BYTES) return;
    this.windowFloor = window;
    await this.logRunningTransactions();
  }

  /**
   * A poll that found nothing more may acknowledge up to the flush position read before it. `after`
   * (a statement without parameters) runs last, in the acknowledgement's round trip when there is one.
   */
  private async idleAck(flush: string, after: string): Promise<void> {
    const db = this.db as pg.Client;
    if (this.paused) {
      await db.query(after);
      return;
    }
    // Progress only grows (a record changed since it was read is never moved back), and never past an active quarantine.
    const moved = await db.query(
      "UPDATE synchro.wal_progress SET processed_end_lsn = $1 WHERE processed_end_lsn < $1 AND NOT EXISTS (SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active')",
      [flush],
    );
    if (moved.rowCount === 0) {
      await db.query(after);
      return;
    }
    const slotTo = fault('cap005-idle-slot-to-current-flush') ? await flushWal(db) : flush; // fault: server:cap005-idle-slot-to-current-flush
    // First the slot (on its own session), then the acknowledgement record.
    // Never over a cleared boundary (see pollOnce): only an operator puts that back.
    await (this.slotDb as pg.Client).query('SELECT pg_replication_slot_advance($1, $2::pg_lsn)', [this.slot, slotTo]);
    const lsn = db.escapeLiteral(flush);
    await db.query(`UPDATE synchro.wal_progress SET acknowledged_end_lsn = ${lsn}::pg_lsn WHERE acknowledged_end_lsn < ${lsn}::pg_lsn; ${after}`);
  }

  /**
   * Materializes one transaction and answers the boundary it is to be acknowledged through (by
   * acknowledge, with the rest of its peek; `settle` acknowledges the ones before it now), or
   * undefined when the transaction was quarantined or (`checkDrift`, asked for the first transaction
   * after a peek) a registered relation drifted. The poll's last transaction, from a peek that read
   * everything committed up to `flush`, is acknowledged through `flush` rather than its own end:
   * nothing between the two is a transaction to materialize, its materialization records `flush` as
   * processed in the same commit, and the idle acknowledgement after it (another slot advance, which
   * decodes the whole window again) is not needed; the worker is recorded caught up in the
   * acknowledgement's round trip.
   */
  private async materializeOne(
    tx: ReturnType<typeof groupTransactions>[number],
    poll: { digestHash: string | null; poisoned: boolean; last: boolean; flush: string; checkDrift: boolean; settle: () => Promise<void> },
  ): Promise<Unacknowledged | undefined> {
    const db = this.db as pg.Client;
    const commit = formatLsn(tx.commitLsn);
    const end = formatLsn(tx.endLsn);
    // A replayed transaction writes no progress, so only a fresh one can carry the processed boundary to the flush position.
    let through = end;
    let hasRows = false;
    // The relation a database error is recorded against: the transaction's first registered one.
    let firstTable: string | null = null;
    if (fault('acknowledge-before-materializing')) await db.query('UPDATE synchro.wal_progress SET processed_end_lsn = greatest(processed_end_lsn, $1::pg_lsn), acknowledged_end_lsn = greatest(acknowledged_end_lsn, $1::pg_lsn)', [end]); // fault: server:acknowledge-before-materializing
    // The transaction's start, the drift check when asked and its replay lookup share a round trip (the literals are a UUID and a formatted LSN).
    const driftCheck = poll.checkDrift ? `SELECT ${relationDriftedSql()} AS drifted; ` : '';
    const replayLookup = `SELECT content_hash AS h FROM synchro.wal_transactions WHERE stream_generation = ${db.escapeLiteral(this.generation)} AND commit_lsn = ${db.escapeLiteral(commit)}`;
    const started = (await db.query(`${fault('materialize-outside-transaction') ? 'SELECT 1' : 'BEGIN'}; ${driftCheck}${replayLookup}`)) as unknown as Array<pg.QueryResult>; // fault: server:materialize-outside-transaction
    if (poll.checkDrift && started[1]?.rows[0]?.drifted === true) {
      await db.query(`ROLLBACK; ${BLOCKED}`);
      return undefined;
    }
    try {
      const known = started.at(-1)?.rows[0] as { h: Buffer } | undefined;
      // The generations its activation messages name, checked before any event is read under them.
      const registry = await this.registryTimeline.forTransaction(db, tx);
      if (known !== undefined) {
        // Durable already (a stop fell between materialization and acknowledgement): replay by identity.
        if (!known.h.equals(tx.contentHash)) throw new CaptureFailure('validation_failed', 'a replayed transaction differs from its durable record');
        if (fault('replay-appends-effects')) await appendReplayedEffects(db, this.generation, commit); // fault: server:replay-appends-effects
        if (fault('cap004-replay-appends-events')) await appendReplayedEvents(db, this.generation, commit); // fault: server:cap004-replay-appends-events
        learnRelations(tx, this.relations);
      } else {
        // An event a committed rebinding re-baselined is covered, not drift (relation-rebinding.ts).
        const events = await readRowEvents(db, tx, this.relations, registry);
        await assertFencesUnused(db, events);
        hasRows = events.length > 0;
        firstTable = events.find((event) => event.tableId !== null)?.tableId ?? null;
        // Test-only path (armPoison): this transaction fails and is quarantined like any other failure.
        this.testControls.failIfPoisoned(events);
        if (poll.last) through = poll.flush;
        await materializeTransaction(db, this.generation, tx, events, registry.tables, poll.digestHash, through);
        await forceRebuildOfRebaselinedScopes(db, this.generation, commit, registry);
        await this.registryTimeline.record(db, this.generation, registry);
        // Only a poll that began with a quarantined transaction (being retried) can repair one.
        if (poll.poisoned) await db.query("UPDATE synchro.wal_poison SET lifecycle = 'repaired', resolved_at = clock_timestamp() WHERE lifecycle = 'active' AND commit_lsn = $1", [commit]);
      }
      if (fault('cap005-slot-advance-before-commit')) await (this.slotDb as pg.Client).query('SELECT pg_replication_slot_advance($1, $2::pg_lsn)', [this.slot, end]); // fault: server:cap005-slot-advance-before-commit
      // Test-only hold (armHold): everything is written, nothing committed yet.
      await this.testControls.holdIfArmed(hasRows);
      await db.query('COMMIT');
      this.registryTimeline.advance(registry);
    } catch (e) {
      await db.query('ROLLBACK').catch(() => undefined);
      // Killed while held: the open transaction dies with the session; nothing to quarantine.
      if (e instanceof CaptureStopped) throw e;
      // The transactions before this one are the contiguous prefix: acknowledged before the failure is recorded.
      await poll.settle();
      await this.quarantine(tx.commitLsn, e, firstTable);
      if (fault('cap005-ack-failed-transaction')) await Promise.all([(this.slotDb as pg.Client).query(`SELECT pg_replication_slot_advance('${this.slot}', '${end}')`), db.query(`UPDATE synchro.wal_progress SET processed_end_lsn = greatest(processed_end_lsn, '${end}'), acknowledged_end_lsn = greatest(acknowledged_end_lsn, '${end}')`)]); // fault: server:cap005-ack-failed-transaction
      if (fault('acknowledge-past-quarantine')) await db.query('UPDATE synchro.wal_progress SET processed_end_lsn = greatest(processed_end_lsn, $1::pg_lsn), acknowledged_end_lsn = greatest(acknowledged_end_lsn, $1::pg_lsn)', [end]); // fault: server:acknowledge-past-quarantine
      return undefined;
    }
    // Outside the transaction's try: whatever the hook does, this transaction is committed and stays so.
    if (hasRows && poll.last) this.caughtUp?.();
    // Boundary (committed above); the slot and the acknowledgement record follow in acknowledge.
    if (hasRows) await this.crashIf('after-materialization-commit');
    return { through, hasRows };
  }

  /**
   * Acknowledges materialized transactions through the last one's boundary: first the slot, then the
   * acknowledgement record (with the caught-up state when the boundary is the poll's flush position).
   * A peek's transactions share one acknowledgement: a slot advance decodes everything from the slot's
   * restart point, which stays put while a backlog is worked off, so one advance per transaction made
   * capture's cost grow with the backlog (decision 432).
   */
  private async acknowledge(batch: Unacknowledged): Promise<void> {
    const db = this.db as pg.Client;
    await (this.slotDb as pg.Client).query('SELECT pg_replication_slot_advance($1, $2::pg_lsn)', [this.slot, batch.through]);
    if (batch.hasRows) await this.crashIf('after-slot-advance');
    const lsn = db.escapeLiteral(batch.through);
    await db.query(`UPDATE synchro.wal_progress SET acknowledged_end_lsn = greatest(acknowledged_end_lsn, ${lsn}::pg_lsn) WHERE acknowledged_end_lsn IS NOT NULL${batch.caughtUp ? `; ${CAUGHT_UP}` : ''}`);
    if (batch.hasRows) await this.crashIf('after-acknowledgement');
  }

  /**
   * Test-only crash: when the armed point is reached, the worker's sessions
   * are cut as by kill() and the poll ends here, so nothing after this point
   * is done; a restart recovers from what is durable.
   */
  private async crashIf(point: CrashPoint): Promise<void> {
    if (!this.testControls.crashDue(point)) return;
    await this.cutSessions();
    throw new CaptureStopped(`the capture worker was killed ${point} by a test control`);
  }

  /** One durable, redacted record per poisoned transaction; a failed retry counts an attempt. */
  private async quarantine(commitLsn: bigint, e: unknown, tableId: string | null): Promise<void> {
    const db = this.db as pg.Client;
    const failure = e instanceof CaptureFailure ? e : new CaptureFailure('materialization_failed', `database error ${(e as { code?: string }).code ?? 'unknown'}`, tableId);
    const detail = Buffer.from(failure.message, 'utf8').subarray(0, 512).toString('utf8');
    this.log(`capture quarantined a transaction: ${failure.failureClass}`);
    if (fault('quarantine-without-record')) return; // fault: server:quarantine-without-record
    const commit = formatLsn(commitLsn);
    const updated = await db.query(
      "UPDATE synchro.wal_poison SET attempt_count = attempt_count + 1, retry_requested_at = NULL WHERE lifecycle = 'active' AND commit_lsn = $1",
      [commit],
    );
    if (updated.rowCount === 0) {
      await db.query(
        "INSERT INTO synchro.wal_poison (stream_generation, commit_lsn, failure_class, failure_detail, table_id, lifecycle) VALUES ($1, $2, $3, $4, $5, 'active')",
        [this.generation, commit, failure.failureClass, detail, failure.tableId],
      );
    }
    await db.query(BLOCKED);
  }

  async status(): Promise<CaptureStatus> {
    const db = this.db as pg.Client;
    const { rows } = await db.query<{ stream_generation: string; processed_end_lsn: string; acknowledged_end_lsn: string; materialized_commit_lsn: string | null }>(
      'SELECT stream_generation, processed_end_lsn::text, acknowledged_end_lsn::text, materialized_commit_lsn::text FROM synchro.wal_progress',
    );
    const r = rows[0];
    if (r === undefined) throw new Error('capture has not started');
    return {
      generation: r.stream_generation,
      slot: this.slot,
      processedEndLsn: r.processed_end_lsn,
      acknowledgedEndLsn: r.acknowledged_end_lsn,
      materializedCommitLsn: r.materialized_commit_lsn,
      poisoned: (await this.activePoison()) !== undefined,
    };
  }

  /**
   * Resolves once everything committed before the call is materialized and
   * acknowledged; rejects with CapturePoisoned when a quarantine blocks it, or
   * when the deadline passes first. Each round waits for a real poll.
   */
  async catchUp(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const db = await this.sqlSession();
    try {
      const target = parseLsn(await flushWal(db));
      let polled = false;
      for (;;) {
        if (this.slotRefused) throw new CapturePoisoned('capture is blocked: the worker refused its recorded slot');
        if (this.paused || this.stopped) throw new CaptureStopped('the capture worker is stopped; start it before waiting for materialization');
        if (this.testControls.holding) throw new CaptureStopped('the capture worker is held before its materialization commit; resume it before waiting for materialization');
        const { rows } = await db.query<{ a: string; p: boolean }>(
          "SELECT acknowledged_end_lsn::text AS a, EXISTS (SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active' AND retry_requested_at IS NULL) AS p FROM synchro.wal_progress",
        );
        const r = rows[0];
        if (r !== undefined && parseLsn(r.a) >= target) return;
        if (r?.p === true) throw new CapturePoisoned('capture is blocked by a quarantined transaction');
        // Drift blocks until an operator acts, like a quarantine: once a real poll has run into it, waiting
        // for the deadline would only hide that.
        if (polled && (await relationDrifted(db))) throw new CapturePoisoned('capture is blocked: a registered relation drifted from its registration');
        if (Date.now() > deadline) throw new Error(`capture did not reach ${formatLsn(target)} in ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          // No wait outlives the deadline, whatever the worker does.
          const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()) + 1);
          const wake = () => {
            clearTimeout(timer);
            resolve();
          };
          this.waiters.push(wake);
          // A poll that reaches an armed hold does not end until released: the loop then refuses at once.
          this.testControls.whenHeld(wake);
          this.kick();
          // A worker paused or stopped after the checks above (a crash point pauses it from inside its poll)
          // runs no poll that would wake this wait: the loop checks again at once.
          if (this.running === undefined) wake();
        });
        polled = true;
      }
    } finally {
      await db.end();
    }
  }

  /** Test control: finish the transaction in hand, then process nothing until `resume`. */
  async pause(): Promise<void> {
    this.paused = true;
    await this.running;
    // A killed worker, or one whose session the database dropped (a restart), has no session to record it on.
    if (!this.killed && !this.sessionLost) await this.db?.query("UPDATE synchro.wal_worker_state SET state = 'stopped', heartbeat_at = now()");
  }

  /**
   * Test control: an abrupt stop. The worker's sessions are terminated from
   * another connection, so whatever it had open rolls back and nothing is
   * recorded on the way out; only the durable progress survives.
   */
  async kill(): Promise<void> {
    if (this.killed) return;
    // A kill meant for an armed hold happens there: wait until the worker holds its transaction open.
    if (this.testControls.holdArmed) await this.testControls.reachedHold(10_000);
    const held = this.testControls.holding;
    await this.cutSessions();
    if (held) this.testControls.abortHold();
    // The poll in flight fails on its dead session (and is only logged); wait so no stale work overlaps a restart.
    await this.running;
    await this.closeSessions();
  }

  /** Test control: the worker dies at `point` of the next transaction with row events it materializes. */
  armCrash(point: CrashPoint): void {
    this.testControls.armCrash(point);
  }

  /** Stops the worker as a crash would: no more work until resume reconnects, and its sessions cut from outside. */
  private async cutSessions(): Promise<void> {
    this.paused = true;
    this.killed = true;
    clearInterval(this.heartbeat);
    await this.terminateSessions();
  }

  /** Terminates the worker's sessions from another connection and waits until they are gone. */
  private async terminateSessions(): Promise<void> {
    const pids = [this.db, this.slotDb, this.listener].map((c) => (c as unknown as { processID?: number } | undefined)?.processID).filter((p): p is number => typeof p === 'number');
    await this.withServerSession(async (admin) => {
      await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
      // Termination is signalled, not awaited: a restart must not meet the old session still holding the slot.
      const deadline = Date.now() + 10_000;
      while ((await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1::int[])', [pids])).rowCount !== 0) {
        if (Date.now() > deadline) throw new Error('the capture worker sessions did not end after termination');
      }
    });
  }

  /** Ends the worker's sessions: its own, the slot's and the listener's (already dead after a kill, which is harmless). */
  private async closeSessions(): Promise<void> {
    await this.listener?.end().catch(() => undefined);
    await this.slotDb?.end().catch(() => undefined);
    await this.db?.end().catch(() => undefined);
    this.listener = undefined;
    this.slotDb = undefined;
    this.db = undefined;
  }

  /** Test control: carry on after `pause`, or reconnect after `kill`; either way from the durable progress. */
  async resume(): Promise<void> {
    // Killed, or blocked on a refused slot: connect again and reconcile from the durable progress.
    if (this.killed || this.slotRefused || this.sessionLost) return this.reopen();
    // A held worker is running, only waiting to commit: let it.
    if (this.testControls.holding) return this.testControls.releaseHold();
    this.paused = false;
    await this.db?.query("UPDATE synchro.wal_worker_state SET state = 'running', heartbeat_at = now()");
    this.kick();
  }

  /**
   * Operator stream reset (see stream-reset.ts) in one call: the worker
   * finishes the transaction in hand and stops, the reset runs every phase
   * and activates a new generation on a new slot (or is aborted and changes
   * nothing when it fails), and the worker starts again from whatever the
   * durable progress now names.
   */
  async resetStream(): Promise<StreamResetResult> {
    const progress = await this.driveReset({ start: true }).catch(async (e: unknown) => {
      // A one-call reset leaves nothing in flight: what it could not finish is aborted.
      await this.abortReset().catch(() => undefined);
      throw e;
    });
    if (progress.result === undefined) throw new StreamResetFailed(progress.reason ?? `the stream reset ended ${progress.lifecycle}`);
    return progress.result;
  }

  /**
   * Operator stream reset, phase by phase: the worker stops while a reset is
   * in flight and starts again, from the durable progress, once it is
   * activated or aborted. A refused activation leaves the reset in flight
   * (and the worker stopped) for the operator to decide.
   */
  async driveReset(options: { start: boolean; holdAt?: ResetPhase }): Promise<ResetProgress> {
    await this.pause();
    this.resetOperator ??= new StreamResetOperator(this.databaseUrl);
    let progress: ResetProgress;
    try {
      progress = await this.resetOperator.drive((await this.registryNow()), options);
    } catch (e) {
      if (e instanceof ActivationRefused) throw new ResetActivationRefused(e.message);
      if (!(await this.resetOperator.inFlight().catch(() => false))) await this.reopen();
      throw e;
    }
    if (progress.lifecycle === 'activated' || progress.lifecycle === 'aborted') await this.reopen();
    return progress;
  }

  async abortReset(): Promise<ResetProgress | undefined> {
    await this.pause();
    this.resetOperator ??= new StreamResetOperator(this.databaseUrl);
    const progress = await this.resetOperator.abort();
    await this.reopen();
    return progress;
  }

  async killResetOperator(): Promise<number> {
    const admin = new pg.Client({ connectionString: this.databaseUrl });
    admin.on('error', () => undefined);
    await admin.connect();
    try {
      const killed = await killOperatorSessions(admin);
      // Termination is signalled, not awaited: wait until the operator's backends are gone.
      const deadline = Date.now() + 10_000;
      while ((await admin.query("SELECT 1 FROM pg_stat_activity WHERE application_name = 'synchro-reset-operator' AND datname = current_database()")).rowCount !== 0) {
        if (Date.now() > deadline) throw new Error('the operator sessions did not end after termination');
      }
      return killed;
    } finally {
      await admin.end();
    }
  }

  /** The registry as it stands now, read on a session of its own (the worker's may be closed while paused). */
  private async registryNow(): Promise<{ lookup: TableLookup; tables: Map<string, RegisteredTable> }> {
    if (this.db !== undefined && !this.killed && !this.sessionLost) return this.tableLookup();
    // Paused or killed: the generation in force at the worker's durable position.
    return this.registryTimeline.started ?? this.tableLookup();
  }

  /** Closes the worker's sessions after a pause or a kill and starts again from the durable progress. */
  private async reopen(): Promise<void> {
    clearInterval(this.heartbeat);
    await this.closeSessions();
    this.killed = false;
    this.sessionLost = false;
    this.paused = false;
    this.slotRefused = false;
    await this.start();
  }

  /** Test control: the next transaction with row events waits just before its materialization commit until resume or kill. */
  armHold(): void {
    this.testControls.armHold();
  }

  /** Test control: resolves once the worker waits at the armed hold. */
  async awaitHold(timeoutMs: number): Promise<void> {
    await this.testControls.reachedHold(timeoutMs);
  }

  /** Test control: the next source transaction with row events fails and is quarantined. */
  armPoison(): void {
    this.testControls.armPoison();
  }

  /**
   * After a `start()` that threw: ends the sessions it opened and writes no
   * worker state, since a worker that never started has not stopped (`stop()`
   * would record 'stopped' over what readiness reports).
   */
  async closeAfterFailedStart(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeat);
    await this.closeSessions();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeat);
    // A worker held before its commit would never finish its poll: it gives up, and its transaction rolls back.
    this.testControls.abortHold();
    await this.running;
    await this.resetOperator?.close();
    await this.db?.query("UPDATE synchro.wal_worker_state SET state = 'stopped', heartbeat_at = now()").catch(() => undefined);
    await this.closeSessions();
  }
}
