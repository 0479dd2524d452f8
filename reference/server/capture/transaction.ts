/**
 * Groups decoded pgoutput messages into source transactions and turns each
 * into an ordered list of row events, every one paired with the version
 * fence its write produced. Pure: no database access.
 */
import { createHash } from 'node:crypto';
import { fault } from '../core/faults.ts';
import { CaptureFailure } from './capture-failure.ts';
import { correlateFences, type EventRelation, type Fence, type PairedFence, readFence } from './fence-correlation.ts';
import { type Cell, decodeMessage, type PgOutputMessage, type RelationColumn } from './pgoutput.ts';

export { CaptureFailure };

export interface RelationInfo {
  oid: number;
  namespace: string;
  name: string;
  columns: RelationColumn[];
}

export interface SourceTransaction {
  xid: number;
  commitLsn: bigint;
  endLsn: bigint;
  /** Decoded messages in order (relations included, so events can be read against them). */
  messages: PgOutputMessage[];
  contentHash: Buffer;
}

/** Cuts a run of raw replication messages into complete transactions; a trailing partial one is dropped. */
export function groupTransactions(raw: Buffer[]): SourceTransaction[] {
  const out: SourceTransaction[] = [];
  let current: { xid: number; messages: PgOutputMessage[]; hash: ReturnType<typeof createHash> } | undefined;
  for (const bytes of raw) {
    const m = decodeMessage(bytes);
    if (m.tag === 'begin') {
      current = { xid: m.xid, messages: [], hash: createHash('sha256') };
      continue;
    }
    if (current === undefined) continue; // a non-transactional message between transactions
    if (m.tag === 'commit') {
      out.push({ xid: current.xid, commitLsn: m.commitLsn, endLsn: m.endLsn, messages: current.messages, contentHash: current.hash.digest() });
      current = undefined;
      continue;
    }
    // The identity of a transaction is its changes and messages. Relation, type and origin
    // messages depend on what the decoding session had already sent, so a replay in a new
    // session (after a crash between commit and acknowledgement) would differ in them.
    if (m.tag !== 'relation' && m.tag !== 'type' && m.tag !== 'origin') current.hash.update(bytes);
    current.messages.push(m);
  }
  return out;
}

/** Column name → the value jsonb_populate_record reads (text for most types, parsed JSON for json columns). */
export type SourceImage = Record<string, unknown>;

export interface RowEvent {
  ordinal: number;
  relationOid: number | null;
  tableId: string | null;
  op: 'insert' | 'update' | 'delete' | 'baseline';
  /** Key text as the fence trigger computes it. */
  pkText: string;
  /** Complete new image; null for a delete. Unchanged TOAST columns are marked with UNCHANGED. */
  image: SourceImage | null;
  /** The fence paired with the event; a baseline record carries its version only. */
  fence: PairedFence;
  /** The registry generation the event was read under (its activation precedes the event in the stream). */
  registryGeneration?: number;
}

/** A registry generation as rowEvents reads events under it. */
export interface GenerationLookup {
  generation: number;
  lookup: TableLookup;
}

/** The generations of one transaction: the one in force at its start, and the one each activation message switches to. */
export interface RegistrySwitch {
  initial: GenerationLookup;
  final: GenerationLookup;
  activate(content: Buffer): GenerationLookup;
}

export const UNCHANGED = Symbol('unchanged');

export interface TableLookup {
  /** Registered table of a relation OID, or undefined when the relation is not registered. */
  byOid(oid: number): { tableId: string; pkColumn: string; jsonColumns: Set<string>; columns: Set<string>; schema: string; name: string } | undefined;
  /** The registration of a table: what its fences must name (fence-correlation.ts). */
  registration(tableId: string): EventRelation | undefined;
}

/** A column's value in a row image: its text form (JSON columns keep their JSON text, so JSON null stays apart from SQL NULL). */
function cellValue(cell: Cell): unknown {
  if (cell.kind === 'null') return null;
  if (cell.kind === 'unchanged') return UNCHANGED;
  return cell.text;
}

/**
 * A baseline row message (sql/008-capture.sql): table, key, version, state and
 * the row. A rebinding's re-baseline (sql/079) also asserts a hard delete: a
 * deleted state with no row.
 */
interface BaselineMessage {
  t: string;
  k: string;
  v: string;
  s: 'live' | 'deleted';
  row?: Record<string, unknown>;
}

function readBaseline(content: Buffer): BaselineMessage {
  let v: unknown;
  try {
    v = JSON.parse(content.toString('utf8'));
  } catch {
    throw new CaptureFailure('decode_failed', 'a baseline message is not valid JSON');
  }
  const f = v as Partial<BaselineMessage>;
  if (typeof f !== 'object' || f === null || typeof f.t !== 'string' || typeof f.k !== 'string' || typeof f.v !== 'string' || (f.s !== 'live' && f.s !== 'deleted')) {
    // The record names the relation when the message still says which table it fences.
    throw new CaptureFailure('decode_failed', 'a baseline message lacks a member', typeof f?.t === 'string' ? f.t : null);
  }
  return f as BaselineMessage;
}

/** Keeps a relation message: a decoding session describes each relation once, before its first row. */
function learnRelation(m: Extract<PgOutputMessage, { tag: 'relation' }>, relations: Map<number, RelationInfo>): void {
  relations.set(m.oid, { oid: m.oid, namespace: m.namespace, name: m.name, columns: m.columns });
}

/**
 * Records the relation messages of a transaction that is not decoded again
 * (its materialization is already durable): the transactions after it in
 * the same decoding session rely on them.
 */
export function learnRelations(tx: SourceTransaction, relations: Map<number, RelationInfo>): void {
  for (const m of tx.messages) if (m.tag === 'relation') learnRelation(m, relations);
}

/**
 * Row events in decoded order, with pre-filter ordinals, each correlated
 * one-to-one with its version fence (fence-correlation.ts: per row identity,
 * the k-th event with the fence of the k-th lowest registered-DML ordinal).
 */
export function rowEvents(tx: SourceTransaction, registered: TableLookup, relations: Map<number, RelationInfo>, registry?: RegistrySwitch, rebound?: RebindingCover): RowEvent[] {
  // Events before an activation message are read under the generation in force before it, those after under its own.
  let inForce = fault('cap008-transaction-read-under-final-generation') ? registry?.final : registry?.initial; // fault: server:cap008-transaction-read-under-final-generation
  let tables = inForce?.lookup ?? registered;
  const events: RowEvent[] = [];
  const fences: Fence[] = [];
  /** Events a later rebinding re-baselines: paired with their fences like any other, then left out. */
  const covered = new Set<RowEvent>();
  let ordinal = 0;
  for (const m of tx.messages) {
    if (m.tag === 'relation') {
      learnRelation(m, relations);
      continue;
    }
    if (m.tag === 'truncate') {
      const t = m.oids.map((o) => tables.byOid(o)).find((x) => x !== undefined);
      throw new CaptureFailure('truncate_unsupported', 'TRUNCATE of a registered relation', t?.tableId ?? null);
    }
    if (m.tag === 'message') {
      if (!m.transactional) continue;
      if (m.prefix === 'synchro_fence') {
        fences.push(readFence(m.content, events[events.length - 1]?.tableId ?? null));
      } else if (m.prefix === 'synchro_registry' && registry !== undefined) {
        inForce = registry.activate(m.content);
        tables = inForce.lookup;
      } else if (m.prefix === 'synchro_baseline') {
        const f = readBaseline(m.content);
        const gone = f.s === 'deleted' && f.row === undefined;
        if (!gone && (typeof f.row !== 'object' || f.row === null)) throw new CaptureFailure('decode_failed', 'a baseline message lacks its row', f.t);
        events.push({ ordinal: ordinal++, relationOid: null, tableId: f.t, op: 'baseline', pkText: f.k, image: gone ? null : (f.row as SourceImage), fence: { version: f.v, state: f.s }, registryGeneration: inForce?.generation });
      }
      continue;
    }
    if (m.tag !== 'insert' && m.tag !== 'update' && m.tag !== 'delete') continue;
    const thisOrdinal = ordinal++;
    const table = tables.byOid(m.oid);
    if (table === undefined) continue; // counted, then filtered: not a registered relation
    const rel = relations.get(m.oid);
    if (rel === undefined) throw new CaptureFailure('decode_failed', 'a row event precedes its relation message', table.tableId);
    if (rel.namespace !== table.schema || rel.name !== table.name || [...table.columns].some((c) => !rel.columns.some((rc) => rc.name === c))) {
      const keyAt = rel.columns.findIndex((c) => c.name === table.pkColumn);
      const keyCell = (m.tag === 'delete' ? m.key : m.tuple)[keyAt];
      if (keyCell?.kind !== 'text' || rebound?.covers(table.tableId, m.oid, inForce?.generation ?? 0) !== true) {
        throw new CaptureFailure('registered_relation_drift', 'the decoded relation differs from its registration', table.tableId);
      }
      const event: RowEvent = { ordinal: thisOrdinal, relationOid: m.oid, tableId: table.tableId, op: m.tag, pkText: keyCell.text, image: null, fence: { version: '', state: 'live' }, registryGeneration: inForce?.generation };
      covered.add(event);
      events.push(event);
      continue;
    }
    const cells = m.tag === 'delete' ? m.key : m.tuple;
    if (cells.length !== rel.columns.length) throw new CaptureFailure('decode_failed', 'tuple width differs from its relation', table.tableId);
    const image: SourceImage = {};
    rel.columns.forEach((c, i) => {
      const cell = cells[i] as Cell;
      if (m.tag === 'delete' && cell.kind === 'null' && !c.isKey) return;
      if (table.columns.has(c.name)) image[c.name] = cellValue(cell);
    });
    const pk = image[table.pkColumn];
    if (typeof pk !== 'string') throw new CaptureFailure('decode_failed', 'a row event has no key value', table.tableId);
    events.push({
      ordinal: thisOrdinal,
      relationOid: m.oid,
      tableId: table.tableId,
      op: m.tag,
      pkText: pk,
      image: m.tag === 'delete' ? null : image,
      fence: { version: '', state: 'live' },
      registryGeneration: inForce?.generation,
    });
  }
  if (fault('cap003-ordinals-in-key-order')) [...events].sort((a, b) => (a.pkText < b.pkText ? -1 : a.pkText > b.pkText ? 1 : 0)).forEach((ev, i) => { ev.ordinal = i; }); // fault: server:cap003-ordinals-in-key-order
  correlateFences(events, fences, (tableId) => tables.registration(tableId));
  if (covered.size > 0) events.splice(0, events.length, ...events.filter((ev) => !covered.has(ev)));
  if (fault('cap012-same-row-fences-collapsed')) return events.filter((ev, i) => !events.slice(i + 1).some((later) => later.relationOid === ev.relationOid && later.pkText === ev.pkText)); // fault: server:cap012-same-row-fences-collapsed
  return events;
}

/**
 * Controlled rebindings committed after the generation an event is read under
 * (capture/relation-rebinding.ts): an event of the rebound object under
 * another name before the rebinding's activation is covered by its
 * re-baseline, not drift.
 */
export interface RebindingCover {
  covers(tableId: string, relationOid: number, generation: number): boolean;
}
