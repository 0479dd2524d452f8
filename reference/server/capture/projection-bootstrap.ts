/**
 * Causally bound Class 3 projection bootstrap. A manifest step that adds
 * fields whose source rows already hold values (history capture never
 * recorded) is not published from a live read. The coordinator instead runs
 * durable phases, each a commit of its record in
 * `synchro.projection_bootstraps` (SQL 088):
 *
 * - `preparing`: a permanent candidate pgoutput slot is created with an
 *   exported snapshot; the slot's facts, its consistent point, the snapshot
 *   name and boundary are recorded.
 * - `baseline_staged`: a transaction importing that snapshot reads the added
 *   fields' values of every row into `synchro.projection_bootstrap_rows`.
 * - `catching_up`: the candidate slot's transactions after the consistent
 *   point are decoded (peeked, never consumed) and applied to the staged
 *   values, up to the main capture worker's durable processed end.
 * - activation: the main worker is stopped at a transaction boundary;
 *   catch-up goes exactly to its durable processed end (a catch-up already
 *   past it is refused: those values are not what the projections hold), the
 *   barrier recorded is the end of the last transaction it made durable, and
 *   one commit publishes the manifest, rewrites the
 *   stored rows with the staged values and records the affected scopes.
 *   The active slot and stream generation are untouched; the candidate slot
 *   is dropped after.
 *
 * Until activation, connect answers with the previous manifest. A bootstrap
 * whose exported snapshot was lost while `preparing` (its coordinator killed)
 * is aborted with its slot dropped and a new one starts; a staged or
 * catching-up one resumes with the same slot and consistent point.
 *
 * Approximations (docs/decisions.md): only the added fields' values are
 * staged (the rows themselves, versions and memberships are the main
 * worker's), whether a step needs history at all is decided from live rows,
 * and the coordinator runs inside the server process.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { fault } from '../core/faults.ts';
import { formatLsn, parseLsn } from '../core/lsn.ts';
import { publishBootstrapped } from '../core/manifests.ts';
import {
  BootstrapActivationRefused,
  type BootstrapDriver,
  type BootstrapHandle,
  type BootstrapPhase,
  type BootstrapProgress,
  type BootstrapRequest,
  NoBootstrap,
} from '../core/projection-bootstrap-control.ts';
import type { FieldChange } from '../core/reshape.ts';
import { wireRow } from '../core/rows.ts';
import { loadTables, type TableDef } from '../core/tables.ts';
import { CandidateSession, dropCandidateSlot, peekCandidate, terminateSessions } from './candidate-slot.ts';
import type { Cell } from './pgoutput.ts';
import { groupTransactions } from './transaction.ts';
import { flushWal } from './wal-flush.ts';

/** Every session of the coordinator carries this name, so it can be found (and killed). */
export const COORDINATOR_APPLICATION = 'synchro-bootstrap-coordinator';
/** How long activation waits for a running main worker to reach the barrier. */
const ACTIVATION_WAIT_MS = 15_000;

/** The capture worker as the coordinator needs it: caught up to the barrier, then stopped at a transaction boundary for activation. */
export interface MainWorker {
  /** Resolves once everything committed before the call is materialized and acknowledged. */
  catchUp(timeoutMs?: number): Promise<void>;
  pause(): Promise<void>;
  resume(): Promise<void>;
}

interface BootstrapRecord {
  id: string;
  lifecycle: BootstrapProgress['lifecycle'];
  addedFields: Record<string, string[]>;
  slot: string | null;
  consistentPoint: string | null;
  snapshotName: string | null;
  caughtUpEnd: string | null;
}

type StagedValues = Record<string, unknown> | null;

async function inFlight(db: pg.ClientBase): Promise<BootstrapRecord | undefined> {
  const r = (await db.query<{ id: string; lifecycle: BootstrapRecord['lifecycle']; added: Record<string, string[]>; slot: string | null; cp: string | null; snap: string | null; caught: string | null }>(
    `SELECT bootstrap_id::text AS id, lifecycle, added_fields AS added, candidate_slot_name AS slot, consistent_point::text AS cp, exported_snapshot_name AS snap, caught_up_end_lsn::text AS caught
       FROM synchro.projection_bootstraps WHERE lifecycle IN ('preparing', 'baseline_staged', 'catching_up')`,
  )).rows[0];
  if (r === undefined) return undefined;
  return { id: r.id, lifecycle: r.lifecycle, addedFields: r.added, slot: r.slot, consistentPoint: r.cp, snapshotName: r.snap, caughtUpEnd: r.caught };
}

async function latest(db: pg.ClientBase): Promise<BootstrapProgress | undefined> {
  const r = (await db.query<{ id: string; lifecycle: BootstrapRecord['lifecycle']; slot: string | null; refusal: string | null }>(
    'SELECT bootstrap_id::text AS id, lifecycle, candidate_slot_name AS slot, last_refusal AS refusal FROM synchro.projection_bootstraps ORDER BY created_at DESC LIMIT 1',
  )).rows[0];
  if (r === undefined) return undefined;
  return { bootstrapId: r.id, lifecycle: r.lifecycle, slot: r.slot, ...(r.refusal === null ? {} : { reason: r.refusal }) };
}

/** The main worker's durable processed end: what it has made of the stream so far. */
async function durableProcessedEnd(db: pg.ClientBase): Promise<string> {
  const p = (await db.query<{ p: string }>('SELECT processed_end_lsn::text AS p FROM synchro.wal_progress')).rows[0]?.p;
  if (p === undefined) throw new Error('capture has never started: there is no main worker barrier to reach');
  return p;
}

async function inTransaction<T>(db: pg.ClientBase, work: () => Promise<T>, begin = 'BEGIN'): Promise<T> {
  await db.query(begin);
  try {
    const out = await work();
    await db.query('COMMIT');
    return out;
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** The tables of the step, as the registry in force on `db` describes them. */
async function changedTables(db: pg.ClientBase, record: BootstrapRecord): Promise<TableDef[]> {
  const defs = await loadTables(db as unknown as pg.PoolClient);
  return Object.keys(record.addedFields)
    .sort()
    .map((id) => {
      const def = defs.get(id);
      if (def === undefined) throw new Error(`table ${id} of the bootstrap is no longer registered`);
      return def;
    });
}

/** The added fields' wire values of one selected row. */
function addedOf(def: TableDef, record: BootstrapRecord, selected: Record<string, unknown>): Record<string, unknown> {
  const wire = wireRow(def, selected);
  return Object.fromEntries((record.addedFields[def.tableId] ?? []).map((id) => [id, wire[id] ?? null]));
}

/** Phase `preparing`: the record, then the candidate slot with its exported snapshot, recorded with what PostgreSQL says it is. */
async function prepare(session: CandidateSession, request: BootstrapRequest): Promise<BootstrapRecord> {
  const db = await session.connection();
  const id = randomUUID();
  const slot = `synchro_bootstrap_${id.replaceAll('-', '').slice(0, 24)}`;
  // Refused while another bootstrap is in flight (unique index), before any slot exists.
  await db.query("INSERT INTO synchro.projection_bootstraps (bootstrap_id, registry_generation, added_fields, lifecycle) VALUES ($1, $2, $3, 'preparing')", [
    id,
    request.registryGeneration,
    JSON.stringify(request.addedFields),
  ]);
  const created = await session.createSlot(slot);
  await db.query(
    `UPDATE synchro.projection_bootstraps SET candidate_slot_name = $2, slot_type = $3, plugin = $4, slot_temporary = $5, database_name = $6, slot_created_by = $7,
       exported_snapshot_name = $8, consistent_point = $9, snapshot_boundary = $10 WHERE bootstrap_id = $1`,
    [id, slot, created.slotType, created.plugin, created.temporary, created.database, created.command, created.snapshotName, created.consistentPoint, created.snapshotBoundary],
  );
  return { id, lifecycle: 'preparing', addedFields: request.addedFields, slot, consistentPoint: created.consistentPoint, snapshotName: created.snapshotName, caughtUpEnd: null };
}

/** Phase `baseline_staged`: the added values of every row as the exported snapshot holds them. */
async function stageBaseline(session: CandidateSession, record: BootstrapRecord): Promise<void> {
  const db = await session.connection();
  const staged = await inTransaction(
    db,
    async () => {
      await db.query(`SET TRANSACTION SNAPSHOT '${record.snapshotName}'`);
      const out: { tableId: string; pk: string; values: Record<string, unknown> }[] = [];
      for (const def of await changedTables(db, record)) {
        const { rows } = await db.query<Record<string, unknown>>(`SELECT (to_jsonb(src) ->> $1) AS "$pk", ${def.selectList} FROM ${def.qualified} AS src`, [def.pkColumn]);
        for (const r of rows) out.push({ tableId: def.tableId, pk: String(r.$pk), values: addedOf(def, record, r) });
      }
      return out;
    },
    'BEGIN ISOLATION LEVEL REPEATABLE READ',
  );
  // Written outside the snapshot, in one commit with the phase.
  await inTransaction(db, async () => {
    await db.query('DELETE FROM synchro.projection_bootstrap_rows WHERE bootstrap_id = $1', [record.id]);
    for (const r of staged) {
      await db.query("INSERT INTO synchro.projection_bootstrap_rows (bootstrap_id, table_id, pk_text, added_values, staged_from) VALUES ($1, $2, $3, $4, 'snapshot')", [record.id, r.tableId, r.pk, r.values]);
    }
    await db.query("UPDATE synchro.projection_bootstraps SET lifecycle = 'baseline_staged' WHERE bootstrap_id = $1 AND lifecycle = 'preparing'", [record.id]);
  });
  // The snapshot has served; the permanent candidate slot stays for catch-up.
  await session.closeReplication();
  record.lifecycle = 'baseline_staged';
}

/** The text a cell gives jsonb_populate_record, or `kept` for an unchanged TOAST column. */
const KEPT = Symbol('kept');
function cellText(cell: Cell): string | null | typeof KEPT {
  if (cell.kind === 'null') return null;
  if (cell.kind === 'unchanged') return KEPT;
  return cell.text;
}

/**
 * Applies the candidate slot's transactions that end after the record's
 * catch-up position and no later than `upto` to the staged values, in the
 * caller's transaction, and moves the catch-up position to `upto`.
 */
async function catchUpTo(db: pg.ClientBase, record: BootstrapRecord, upto: string): Promise<void> {
  if (fault('scope006-skip-catch-up')) return; // fault: server:scope006-skip-catch-up
  const from = parseLsn(record.caughtUpEnd ?? (record.consistentPoint as string));
  const until = parseLsn(upto);
  if (until <= from) return;
  const defs = await changedTables(db, record);
  const oids = new Map<number, TableDef>();
  for (const def of defs) oids.set(Number((await db.query<{ o: string }>('SELECT $1::regclass::oid::text AS o', [def.qualified])).rows[0]?.o), def);
  const relations = new Map<number, { name: string; isKey: boolean }[]>();
  for (const tx of groupTransactions(await peekCandidate(db, record.slot as string, upto))) {
    for (const m of tx.messages) if (m.tag === 'relation') relations.set(m.oid, m.columns.map((c) => ({ name: c.name, isKey: c.isKey })));
    if (tx.endLsn <= from || tx.endLsn > until) continue;
    const commit = formatLsn(tx.commitLsn);
    for (const m of tx.messages) {
      if (m.tag !== 'insert' && m.tag !== 'update' && m.tag !== 'delete') continue;
      const def = oids.get(m.oid);
      const columns = relations.get(m.oid);
      if (def === undefined || columns === undefined) continue;
      const cells = m.tag === 'delete' ? m.key : m.tuple;
      const image: Record<string, string | null> = {};
      const kept = new Set<string>();
      columns.forEach((c, i) => {
        const v = cellText(cells[i] as Cell);
        if (v === KEPT) kept.add(c.name);
        else image[c.name] = v;
      });
      const pk = image[def.pkColumn];
      if (typeof pk !== 'string') throw new Error(`a catch-up event of ${def.tableId} has no key value`);
      if (m.tag === 'delete') {
        await db.query(
          `INSERT INTO synchro.projection_bootstrap_rows (bootstrap_id, table_id, pk_text, added_values, staged_from) VALUES ($1, $2, $3, NULL, $4)
           ON CONFLICT (bootstrap_id, table_id, pk_text) DO UPDATE SET added_values = NULL, staged_from = excluded.staged_from`,
          [record.id, def.tableId, pk, commit],
        );
        continue;
      }
      // The image read as the table's row type gives each added field its wire value, as a snapshot read would.
      const selected = (await db.query<Record<string, unknown>>(`SELECT ${def.selectList} FROM jsonb_populate_record(NULL::${def.qualified}, $1::jsonb) AS src`, [JSON.stringify(image)])).rows[0] ?? {};
      const values = addedOf(def, record, selected);
      // An unchanged (TOASTed) column keeps the value staged before.
      const keptFields = def.fields.filter((f) => kept.has(f.column) && f.fieldId in values).map((f) => f.fieldId);
      if (keptFields.length > 0) {
        const before = (await db.query<{ v: StagedValues }>('SELECT added_values AS v FROM synchro.projection_bootstrap_rows WHERE bootstrap_id = $1 AND table_id = $2 AND pk_text = $3', [record.id, def.tableId, pk])).rows[0]?.v ?? null;
        for (const id of keptFields) values[id] = before?.[id] ?? null;
      }
      await db.query(
        `INSERT INTO synchro.projection_bootstrap_rows (bootstrap_id, table_id, pk_text, added_values, staged_from) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (bootstrap_id, table_id, pk_text) DO UPDATE SET added_values = excluded.added_values, staged_from = excluded.staged_from`,
        [record.id, def.tableId, pk, JSON.stringify(values), commit],
      );
    }
  }
  await db.query('UPDATE synchro.projection_bootstraps SET caught_up_end_lsn = $2 WHERE bootstrap_id = $1', [record.id, upto]);
  record.caughtUpEnd = upto;
}

/** Phase `catching_up`: staged values brought to `upto` (the main worker's durable end, or the flush position when asked to go past it). */
async function catchUp(session: CandidateSession, record: BootstrapRecord, upto: 'durable' | 'flush'): Promise<void> {
  const db = await session.connection();
  const target = upto === 'flush' ? await flushWal(db) : await durableProcessedEnd(db);
  await inTransaction(db, async () => {
    if (record.lifecycle === 'baseline_staged') {
      await db.query("UPDATE synchro.projection_bootstraps SET lifecycle = 'catching_up', caught_up_end_lsn = consistent_point WHERE bootstrap_id = $1", [record.id]);
      record.lifecycle = 'catching_up';
      record.caughtUpEnd = record.consistentPoint;
    }
    await catchUpTo(db, record, target);
  });
}

async function refuse(db: pg.ClientBase, record: BootstrapRecord, reason: string): Promise<never> {
  await db.query('UPDATE synchro.projection_bootstraps SET last_refusal = $2 WHERE bootstrap_id = $1', [record.id, reason]);
  throw new BootstrapActivationRefused(reason);
}

/** The staged values with a value in some added field, per table and key: what the manifest step writes into stored rows. */
async function stagedValues(db: pg.ClientBase, record: BootstrapRecord): Promise<Map<string, Map<string, Record<string, unknown>>>> {
  const out = new Map<string, Map<string, Record<string, unknown>>>();
  const { rows } = await db.query<{ table_id: string; pk_text: string; added_values: StagedValues }>('SELECT table_id, pk_text, added_values FROM synchro.projection_bootstrap_rows WHERE bootstrap_id = $1', [record.id]);
  for (const r of rows) {
    if (r.added_values === null || !Object.values(r.added_values).some((v) => v !== null)) continue;
    const table = out.get(r.table_id) ?? new Map<string, Record<string, unknown>>();
    out.set(r.table_id, table);
    table.set(r.pk_text, r.added_values);
  }
  return out;
}

/**
 * Activation, with the main worker stopped at a transaction boundary: its
 * durable processed end is the barrier. A catch-up already past it is
 * refused; otherwise catch-up goes exactly to it and one commit publishes the
 * manifest with the staged values. Nothing of the stream itself changes.
 */
async function activate(session: CandidateSession, record: BootstrapRecord): Promise<void> {
  const db = await session.connection();
  await inTransaction(db, async () => {
    await db.query('SELECT 1 FROM synchro.projection_bootstraps WHERE bootstrap_id = $1 FOR UPDATE', [record.id]);
    const durable = await durableProcessedEnd(db);
    if (parseLsn(record.caughtUpEnd as string) > parseLsn(durable) && !fault('scope006-activate-past-durable-barrier')) { // fault: server:scope006-activate-past-durable-barrier
      await db.query('ROLLBACK');
      await refuse(db, record, `the staged values are caught up to ${record.caughtUpEnd}, past the main worker's durable processed end ${durable}`);
    }
    await catchUpTo(db, record, durable);
    // The barrier is the end of the last transaction the main worker made durable: everything after it up to its processed end touched no registered row.
    const barrier = (await db.query<{ b: string }>('SELECT coalesce(materialized_end_lsn, generation_start_lsn)::text AS b FROM synchro.wal_progress')).rows[0]?.b as string;
    const staged = fault('scope006-activate-without-staged-values') ? new Map() : await stagedValues(db, record); // fault: server:scope006-activate-without-staged-values
    await db.query('SET LOCAL ROLE synchro_owner');
    const manifest = await publishBootstrapped(db as unknown as pg.PoolClient, async (_db, change: FieldChange) => staged.get(change.table.tableId) ?? new Map());
    await db.query('RESET ROLE');
    if (fault('scope006-activation-starts-new-generation')) await db.query('UPDATE synchro.wal_progress SET stream_generation = gen_random_uuid()::text'); // fault: server:scope006-activation-starts-new-generation
    await db.query(
      "UPDATE synchro.projection_bootstraps SET lifecycle = 'activated', activation_barrier = $2, activated_schema_version = $3, last_refusal = NULL, finished_at = clock_timestamp() WHERE bootstrap_id = $1",
      [record.id, barrier, manifest.version],
    );
  });
  record.lifecycle = 'activated';
  // Staging is over: the slot would otherwise hold WAL forever.
  await dropCandidateSlot(db, record.slot);
}

/** Marks a bootstrap aborted and drops its candidate slot: nothing of it was activated. */
async function abortRecord(db: pg.ClientBase, record: BootstrapRecord, reason: string): Promise<void> {
  await db.query("UPDATE synchro.projection_bootstraps SET lifecycle = 'aborted', last_refusal = $2, finished_at = clock_timestamp() WHERE bootstrap_id = $1 AND lifecycle NOT IN ('activated', 'aborted')", [
    record.id,
    reason,
  ]);
  await dropCandidateSlot(db, record.slot);
  record.lifecycle = 'aborted';
}

/**
 * The coordinator of one server: drives one bootstrap at a time (calls queue),
 * stopping at the held phase when a hold is armed.
 */
export class ProjectionBootstrapCoordinator implements BootstrapDriver, BootstrapHandle {
  readonly #session: CandidateSession;
  readonly #databaseUrl: string;
  readonly #worker: MainWorker;
  readonly #log: (line: string) => void;
  #holdAt: BootstrapPhase | undefined;
  #catchUpTo: 'durable' | 'flush' = 'durable';
  #queue: Promise<unknown> = Promise.resolve();
  /** Asks the manifest store for its catalog, which hands a due step to `due`. */
  #requestCatalog: () => Promise<unknown> = async () => undefined;

  constructor(databaseUrl: string, worker: MainWorker, log: (line: string) => void) {
    this.#session = new CandidateSession(databaseUrl, COORDINATOR_APPLICATION);
    this.#databaseUrl = databaseUrl;
    this.#worker = worker;
    this.#log = log;
  }

  attach(requestCatalog: () => Promise<unknown>): void {
    this.#requestCatalog = requestCatalog;
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#queue.catch(() => undefined).then(work);
    this.#queue = next;
    return next;
  }

  async due(request: BootstrapRequest): Promise<void> {
    await this.#serial(() => this.#drive(request)).catch((e: unknown) => {
      this.#log(`projection bootstrap: ${(e as Error).message}`);
      throw e;
    });
  }

  /** Runs the bootstrap in flight (or a new one for `request`) up to the held phase or through activation. */
  async #drive(request?: BootstrapRequest): Promise<BootstrapProgress | undefined> {
    const db = await this.#session.connection();
    let record = await inFlight(db);
    // A snapshot is imported only through the connection that exported it; one lost before staging cannot be staged.
    if (record?.lifecycle === 'preparing' && !this.#session.holdsSnapshotOf(record.slot)) {
      await abortRecord(db, record, 'the exported snapshot was lost before the baseline was staged');
      record = undefined;
    }
    if (record === undefined) {
      if (request === undefined) return undefined;
      record = await prepare(this.#session, request);
    }
    const held = (phase: BootstrapPhase) => this.#holdAt === phase && record?.lifecycle === phase;
    if (held('preparing')) return this.#progress(record);
    if (record.lifecycle === 'preparing') await stageBaseline(this.#session, record);
    if (held('baseline_staged')) return this.#progress(record);
    if (record.lifecycle === 'baseline_staged' || held('catching_up')) await catchUp(this.#session, record, this.#holdAt === 'catching_up' ? this.#catchUpTo : 'durable');
    if (held('catching_up')) return this.#progress(record);
    await this.#activateStopped(record);
    return this.#progress(record);
  }

  /**
   * Activation with the main worker stopped at a transaction boundary. A
   * running worker is first waited for until it has made everything committed
   * so far durable (the barrier it must reach); one stopped by someone else is
   * left stopped, and a barrier it has not reached is refused.
   */
  async #activateStopped(record: BootstrapRecord): Promise<void> {
    const db = await this.#session.connection();
    const stopped = (await db.query<{ s: string }>('SELECT state AS s FROM synchro.wal_worker_state')).rows[0]?.s === 'stopped';
    if (!stopped) await this.#worker.catchUp(ACTIVATION_WAIT_MS);
    if (!stopped) await this.#worker.pause();
    try {
      await activate(this.#session, record);
    } finally {
      if (!stopped) await this.#worker.resume();
    }
  }

  #progress(record: BootstrapRecord): BootstrapProgress {
    return { bootstrapId: record.id, lifecycle: record.lifecycle, slot: record.slot };
  }

  async hold(phase: BootstrapPhase, options: { pastDurableBarrier?: boolean } = {}): Promise<BootstrapProgress> {
    this.#holdAt = phase;
    this.#catchUpTo = options.pastDurableBarrier === true ? 'flush' : 'durable';
    const running = await this.#serial(() => this.#drive());
    if (running !== undefined) return running;
    // None in flight: the manifest store finds the step due and hands it here, which stops at the hold.
    await this.#requestCatalog();
    return this.#current();
  }

  async release(): Promise<BootstrapProgress> {
    this.#holdAt = undefined;
    this.#catchUpTo = 'durable';
    const running = await this.#serial(() => this.#drive());
    if (running !== undefined) return running;
    await this.#requestCatalog();
    return this.#current();
  }

  async kill(): Promise<number> {
    // Killed from a session of its own: the coordinator's sessions are the ones that end.
    const admin = new CandidateSession(this.#databaseUrl, 'synchro-bootstrap-admin');
    try {
      return await terminateSessions(await admin.connection(), COORDINATOR_APPLICATION);
    } finally {
      await admin.close();
    }
  }

  async activate(): Promise<BootstrapProgress> {
    return this.#serial(async () => {
      const db = await this.#session.connection();
      const record = await inFlight(db);
      if (record === undefined || record.lifecycle !== 'catching_up') throw new NoBootstrap(record === undefined ? 'no projection bootstrap is in flight' : `the bootstrap is ${record.lifecycle}, not catching_up`);
      await this.#activateStopped(record);
      return this.#progress(record);
    });
  }

  async #current(): Promise<BootstrapProgress> {
    const p = await latest(await this.#session.connection());
    if (p === undefined) throw new NoBootstrap('no projection bootstrap is in flight or due: the registry has no step whose added fields hold values');
    return p;
  }

  async close(): Promise<void> {
    await this.#session.close();
  }
}
