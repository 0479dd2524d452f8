/**
 * A permanent candidate pgoutput slot and its exported snapshot, as a process
 * that stages state apart from the live stream uses them: the Class 3
 * projection bootstrap (projection-bootstrap.ts) and the operator's stream
 * reset (stream-reset.ts) both hold their sessions, create their slot and
 * read it through here.
 *
 * The exported snapshot lives only while the replication connection that
 * created the slot stays open and idle, so the session keeps that connection
 * and says whether it still holds the snapshot of a given slot.
 */
import pg from 'pg';

export const CAPTURE_PUBLICATION = 'synchro_capture';

/** What PostgreSQL reported when the slot was created, and what its catalog shows right after. */
export interface CreatedSlot {
  slot: string;
  consistentPoint: string;
  snapshotName: string;
  /** pg_current_snapshot() of the imported snapshot: which transactions it holds. */
  snapshotBoundary: string;
  command: string;
  slotType: string;
  plugin: string | null;
  temporary: boolean;
  database: string | null;
}

/**
 * One coordinator's database sessions: an ordinary connection for records and
 * staging, and the replication connection that created the candidate slot.
 * Both carry `application` so the sessions can be found (and killed).
 */
export class CandidateSession {
  readonly #databaseUrl: string;
  readonly #application: string;
  #sql: pg.Client | undefined;
  #sqlDead = false;
  #replication: pg.Client | undefined;
  #replicationDead = false;
  /** The slot whose exported snapshot the open replication connection holds. */
  #snapshotSlot: string | undefined;

  constructor(databaseUrl: string, application: string) {
    this.#databaseUrl = databaseUrl;
    this.#application = application;
  }

  /** The SQL session, logging in again when the previous one was killed or lost. */
  async connection(): Promise<pg.Client> {
    if (this.#sql !== undefined && !this.#sqlDead && (await this.#sql.query('SELECT 1').then(() => true, () => false))) return this.#sql;
    await this.#sql?.end().catch(() => undefined);
    const sql = new pg.Client({ connectionString: this.#databaseUrl, application_name: this.#application });
    const dead = () => {
      this.#sqlDead = true;
    };
    sql.on('error', dead);
    sql.on('end', dead);
    await sql.connect();
    await sql.query("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'iso_8601'; SET extra_float_digits = 3");
    this.#sql = sql;
    this.#sqlDead = false;
    return sql;
  }

  /** True while the replication connection that created `slot` is open, so its exported snapshot can still be imported. */
  holdsSnapshotOf(slot: string | null): boolean {
    return slot !== null && this.#snapshotSlot === slot && this.#replication !== undefined && !this.#replicationDead;
  }

  /** Creates the permanent candidate slot with an exported snapshot and reads what it is; the replication connection stays open. */
  async createSlot(slot: string): Promise<CreatedSlot> {
    await this.closeReplication();
    const replication = new pg.Client({ connectionString: this.#databaseUrl, replication: 'database', application_name: this.#application } as pg.ClientConfig);
    const dead = () => {
      this.#replicationDead = true;
    };
    replication.on('error', dead);
    replication.on('end', dead);
    await replication.connect();
    this.#replication = replication;
    this.#replicationDead = false;
    const command = `CREATE_REPLICATION_SLOT ${slot} LOGICAL pgoutput (SNAPSHOT 'export')`;
    const created = (await replication.query<{ consistent_point: string; snapshot_name: string }>(command)).rows[0];
    if (created === undefined || typeof created.snapshot_name !== 'string') throw new Error('the candidate slot was created without an exported snapshot');
    this.#snapshotSlot = slot;
    const db = await this.connection();
    const facts = (await db.query<{ slot_type: string; plugin: string | null; temporary: boolean; database: string | null }>(
      'SELECT slot_type, plugin, temporary, database FROM pg_replication_slots WHERE slot_name = $1',
      [slot],
    )).rows[0];
    if (facts === undefined) throw new Error(`the candidate slot ${slot} is not in pg_replication_slots after its creation`);
    // Importing the snapshot once tells which transactions it holds; it stays exported meanwhile.
    await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    let boundary: string;
    try {
      await db.query(`SET TRANSACTION SNAPSHOT '${created.snapshot_name}'`);
      boundary = (await db.query<{ b: string }>('SELECT pg_current_snapshot()::text AS b')).rows[0]?.b as string;
      await db.query('COMMIT');
    } catch (e) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
    return {
      slot,
      consistentPoint: created.consistent_point,
      snapshotName: created.snapshot_name,
      snapshotBoundary: boundary,
      command,
      slotType: facts.slot_type,
      plugin: facts.plugin,
      temporary: facts.temporary,
      database: facts.database,
    };
  }

  /** Ends the replication connection: the exported snapshot goes with it, the permanent slot stays. */
  async closeReplication(): Promise<void> {
    await this.#replication?.end().catch(() => undefined);
    this.#replication = undefined;
    this.#snapshotSlot = undefined;
  }

  async close(): Promise<void> {
    await this.closeReplication();
    await this.#sql?.end().catch(() => undefined);
    this.#sql = undefined;
  }
}

/**
 * Raw pgoutput messages of the slot's transactions committed before `upto`;
 * the slot is only peeked, never advanced, so it still holds everything for
 * the reader it is handed to. `consume` exists for a sensitivity-run fault
 * (a catch-up that advances the candidate slot) and nothing else.
 */
export async function peekCandidate(db: pg.ClientBase, slot: string, upto: string, read: 'peek' | 'consume' = 'peek'): Promise<Buffer[]> {
  const reader = read === 'consume' ? 'pg_logical_slot_get_binary_changes' : 'pg_logical_slot_peek_binary_changes';
  const { rows } = await db.query<{ data: Buffer }>(
    `SELECT data FROM ${reader}($1, $2::pg_lsn, NULL, 'proto_version', '1', 'publication_names', '${CAPTURE_PUBLICATION}', 'messages', 'true')`,
    [slot, upto],
  );
  return rows.map((r) => r.data);
}

/** Drops a candidate slot nobody reads any more (an active one is left for its reader to end). */
export async function dropCandidateSlot(db: pg.ClientBase, slot: string | null): Promise<void> {
  if (slot === null) return;
  await db.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active', [slot]);
}

/** Terminates every session carrying `application` in this database and waits until they are gone. Answers how many were signalled. */
export async function terminateSessions(db: pg.ClientBase, application: string, timeoutMs = 10_000): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database() AND pid <> pg_backend_pid()',
    [application],
  );
  const deadline = Date.now() + timeoutMs;
  // Termination is signalled, not awaited.
  while ((await db.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database() AND pid <> pg_backend_pid()', [application])).rowCount !== 0) {
    if (Date.now() > deadline) throw new Error(`the sessions of ${application} did not end after termination`);
  }
  return rows[0]?.n ?? 0;
}
