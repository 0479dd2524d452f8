/**
 * Which registry generation each row event is read under (SYNC-CAP-008,
 * decision 272). A generation applies from its activation message on: the
 * `synchro_registry` message its registry change emitted inside the same
 * source transaction. Events before the message keep the generation in force
 * before it, whether the message is in an earlier transaction or earlier in
 * the same one. Nothing else moves the worker to a generation: not a
 * notification, a poll or a restart, which resumes under the generation
 * recorded durably with the last materialized activation.
 *
 * Each generation is read from the snapshot stored with it (067 SQL), never
 * from the registry as it is now.
 */
import type pg from 'pg';
import { fault } from '../core/faults.ts';
import type { RegisteredTable } from './registered-table.ts';
import { CaptureFailure, type SourceTransaction, type TableLookup } from './transaction.ts';

/** One registry generation as the worker reads events under it. */
export interface RegistryView {
  generation: number;
  lookup: TableLookup;
  tables: Map<string, RegisteredTable>;
}

/** Builds the view of a stored registry snapshot (the worker's table loader). */
export type SnapshotLoader = (snapshot: unknown) => Promise<{ lookup: TableLookup; tables: Map<string, RegisteredTable> }>;

/** The generations one source transaction is read under, in stream order. */
export interface TransactionRegistry {
  /** In force at the transaction's first message. */
  initial: RegistryView;
  /** In force after its last message. */
  final: RegistryView;
  /**
   * What its final rows are projected and placed under: each table as the
   * latest generation in force during the transaction that registers it (a
   * table unregistered later in it keeps the rows written before that).
   */
  tables: Map<string, RegisteredTable>;
  /** Generations the transaction's activation messages name, in order. */
  activated: number[];
  /** The view an activation message switches to (rowEvents calls it at the message). */
  activate(content: Buffer): RegistryView;
}

const SAMPLE_REFUSAL = 'registry activation is not a validated pending generation';

/** The generation an activation message names: a decimal number, or strict JSON `{"generation":n,...}`. */
function activationGeneration(content: Buffer): number {
  const text = content.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CaptureFailure('decode_failed', 'a registry activation message is not valid JSON');
  }
  const generation = typeof value === 'number' ? value : (value as { generation?: unknown } | null)?.generation;
  if (typeof generation !== 'number' || !Number.isSafeInteger(generation) || generation <= 0) throw new CaptureFailure('decode_failed', 'a registry activation message names no generation');
  return generation;
}

/**
 * A refused activation concerns the whole transaction; its quarantine record
 * names the relation of the transaction's first registered row, as other
 * failures name the relation of the row they met.
 */
function namingFirstRow(e: unknown, tx: SourceTransaction, lookup: TableLookup): unknown {
  if (!(e instanceof CaptureFailure) || e.tableId !== null) return e;
  for (const m of tx.messages) {
    const table = m.tag === 'insert' || m.tag === 'update' || m.tag === 'delete' ? lookup.byOid(m.oid) : undefined;
    if (table !== undefined) return new CaptureFailure(e.failureClass, e.message, table.tableId);
  }
  return e;
}

const isActivation = (m: SourceTransaction['messages'][number]): m is Extract<SourceTransaction['messages'][number], { tag: 'message' }> =>
  m.tag === 'message' && m.transactional && m.prefix === 'synchro_registry';

export class RegistryTimeline {
  private readonly load: SnapshotLoader;
  private readonly views = new Map<number, RegistryView>();
  private inForce: RegistryView | undefined;

  constructor(load: SnapshotLoader) {
    this.load = load;
  }

  /** The generation in force at the worker's durable position. */
  get current(): RegistryView {
    if (this.inForce === undefined) throw new Error('the registry timeline has not started');
    return this.inForce;
  }

  /** The generation in force, or undefined before the worker first started. */
  get started(): RegistryView | undefined {
    return this.inForce;
  }

  /**
   * At worker start: the generation recorded with the last materialized
   * activation of this stream, or, on a stream's first start, the newest
   * generation already activated when it began.
   */
  async start(db: pg.ClientBase, streamGeneration: string): Promise<void> {
    this.views.clear();
    const recorded = await db.query<{ g: string }>('SELECT registry_generation::text AS g FROM synchro.capture_registry_state WHERE stream_generation = $1', [streamGeneration]);
    let generation = recorded.rows[0]?.g;
    if (generation === undefined) {
      generation = (await db.query<{ g: string | null }>("SELECT max(generation)::text AS g FROM synchro.registry_generations WHERE state = 'active' AND validated")).rows[0]?.g ?? undefined;
      // Nothing registered yet: an empty registry until the first registration's activation message.
      if (generation === undefined) {
        this.inForce = { generation: 0, ...(await this.load({ relations: [], fields: [] })) };
        return;
      }
      await db.query('INSERT INTO synchro.capture_registry_state (stream_generation, registry_generation) VALUES ($1, $2) ON CONFLICT (stream_generation) DO NOTHING', [streamGeneration, generation]);
    }
    this.inForce = await this.view(db, Number(generation));
  }

  /** A generation's view, read once from its stored snapshot. */
  private async view(db: pg.ClientBase, generation: number): Promise<RegistryView> {
    const known = this.views.get(generation);
    if (known !== undefined) return known;
    const { rows } = await db.query<{ validated: boolean; snapshot: unknown }>('SELECT validated, snapshot FROM synchro.registry_generations WHERE generation = $1', [generation]);
    const row = rows[0];
    if (row === undefined || (!row.validated && !fault('cap008-activate-unvalidated-generation')) || row.snapshot === null) throw new CaptureFailure('validation_failed', SAMPLE_REFUSAL); // fault: server:cap008-activate-unvalidated-generation
    const view = { generation, ...(await this.load(row.snapshot)) };
    this.views.set(generation, view);
    return view;
  }

  /**
   * The generations of one source transaction, each activation checked before
   * any event is read: a message naming a generation that is missing,
   * unvalidated or without its snapshot fails the transaction (quarantined as
   * validation_failed) instead of switching.
   */
  async forTransaction(db: pg.ClientBase, tx: SourceTransaction): Promise<TransactionRegistry> {
    const initial = fault('cap008-transaction-reads-newest-generation') ? await this.view(db, Number((await db.query<{ g: string }>('SELECT max(generation) AS g FROM synchro.registry_generations WHERE validated')).rows[0]?.g)) : this.current; // fault: server:cap008-transaction-reads-newest-generation
    const byContent = new Map<string, RegistryView>();
    const activated: number[] = [];
    let final = initial;
    for (const m of tx.messages) {
      if (!isActivation(m)) continue;
      final = await this.view(db, activationGeneration(m.content)).catch((e: unknown) => {
        throw namingFirstRow(e, tx, initial.lookup);
      });
      byContent.set(m.content.toString('hex'), final);
      activated.push(final.generation);
    }
    const tables = new Map(initial.tables);
    for (const generation of activated) for (const [id, table] of (this.views.get(generation) as RegistryView).tables) tables.set(id, table);
    return {
      initial,
      final,
      tables,
      activated,
      activate: (content) => byContent.get(content.toString('hex')) as RegistryView,
    };
  }

  /**
   * Inside the materialization transaction: records the generation in force
   * after it, so a restart resumes there, and marks the generations it
   * activated active (a staged pending one becomes active only here).
   */
  async record(db: pg.ClientBase, streamGeneration: string, registry: TransactionRegistry): Promise<void> {
    if (registry.activated.length === 0) return;
    await db.query("UPDATE synchro.registry_generations SET state = 'active' WHERE generation = ANY ($1::int8[]) AND state = 'pending'", [registry.activated]);
    await db.query(
      `INSERT INTO synchro.capture_registry_state (stream_generation, registry_generation) VALUES ($1, $2)
       ON CONFLICT (stream_generation) DO UPDATE SET registry_generation = excluded.registry_generation`,
      [streamGeneration, registry.final.generation],
    );
  }

  /** After the transaction committed: later transactions start under its final generation. */
  advance(registry: TransactionRegistry): void {
    if (fault('cap008-known-tables-keep-their-generation') && registry.initial.tables.size > 0) return; // fault: server:cap008-known-tables-keep-their-generation
    this.inForce = registry.final;
  }
}
