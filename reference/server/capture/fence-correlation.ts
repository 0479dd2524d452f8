/**
 * One to one version fence correlation (SYNC-CAP-012). A source transaction's
 * fence messages are read, then paired with its row events per row identity
 * (the registered relation and its key): the k-th event of an identity in
 * source order takes the fence with the k-th lowest registered-DML ordinal,
 * and the pair must agree on registration kind, relation, operation, keys and
 * carry a version and fence ID seen nowhere else. Anything that does not pair
 * one to one is a blocking `fence_correlation_failed`; a message whose bytes
 * are not text at all is `decode_failed`. Pure, except `assertFencesUnused`,
 * which compares with what is already materialized.
 */
import type { ClientBase } from 'pg';
import { fault } from '../core/faults.ts';
import { CaptureFailure } from './capture-failure.ts';

export type RegistrationKind = 'synced' | 'capture_dependency';

/** A fence message as the fence trigger emits it (sql/064-fence-correlation.sql). */
export interface Fence {
  fenceId: string;
  ordinal: number;
  kind: RegistrationKind;
  relationId: string;
  relationOid: number;
  schema: string;
  relation: string;
  operation: 'insert' | 'update' | 'delete';
  version: string;
  state: 'live' | 'deleted';
  /** Synced fences only. */
  tableId: string | null;
  /** The key text before and after the operation (record ID, or the capture key's one value). */
  oldKey: string | null;
  newKey: string | null;
  /** The message as decoded, kept beside the event it pairs with. */
  message: Record<string, unknown>;
}

/** What a row event keeps of its fence; a baseline record carries its version only. */
export interface PairedFence {
  version: string;
  state: 'live' | 'deleted';
  fenceId?: string;
  ordinal?: number;
  kind?: RegistrationKind;
  message?: Record<string, unknown>;
}

/** The part of a decoded row event (transaction.ts RowEvent) that correlation reads and fills in. */
export interface RowEvent {
  relationOid: number | null;
  tableId: string | null;
  op: 'insert' | 'update' | 'delete' | 'baseline';
  pkText: string;
  fence: PairedFence;
}

/** What correlation needs to know of the registered relation an event belongs to. */
export interface EventRelation {
  tableId: string;
  relationId: string;
  kind: RegistrationKind;
  pkColumn: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function malformed(detail: string, tableId: string | null): CaptureFailure {
  return new CaptureFailure('fence_correlation_failed', `a fence message is malformed: ${detail}`, tableId);
}

/** The key text of a capture-key object: its one member, the registered key column. */
function captureKey(value: unknown, tableId: string | null): string | null {
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw malformed('a capture key is not an object', tableId);
  const members = Object.values(value as Record<string, unknown>);
  const only = members[0];
  if (members.length !== 1 || (typeof only !== 'string' && typeof only !== 'number')) throw malformed('a capture key is not one key value', tableId);
  return String(only);
}

function recordId(value: unknown, tableId: string | null): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') throw malformed('a record ID is not text', tableId);
  return value;
}

/**
 * Reads one `synchro_fence` message. `lastTable` is the table of the row event
 * decoded before it, the relation a failure is recorded against when the
 * message names none.
 */
export function readFence(content: Buffer, lastTable: string | null): Fence {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(content);
  } catch {
    throw new CaptureFailure('decode_failed', 'a fence message is not UTF-8 text', lastTable);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw malformed('not JSON', lastTable);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw malformed('not an object', lastTable);
  const m = parsed as Record<string, unknown>;
  const tableId = typeof m.table_id === 'string' ? m.table_id : lastTable;
  const kind = m.registration_kind;
  if (kind !== 'synced' && kind !== 'capture_dependency') throw malformed('no registration kind', tableId);
  if (typeof m.fence_id !== 'string' || !UUID.test(m.fence_id)) throw malformed('no fence ID', tableId);
  if (typeof m.dml_ordinal !== 'number' || !Number.isSafeInteger(m.dml_ordinal) || m.dml_ordinal < 1) throw malformed('no registered-DML ordinal', tableId);
  if (m.operation !== 'insert' && m.operation !== 'update' && m.operation !== 'delete') throw malformed('no operation', tableId);
  if (typeof m.row_version !== 'string' || m.row_version === '') throw malformed('no row version', tableId);
  if (m.row_state !== 'live' && m.row_state !== 'deleted') throw malformed('no row state', tableId);
  if (typeof m.relation_id !== 'string' || typeof m.physical_schema !== 'string' || typeof m.physical_relation !== 'string' || typeof m.physical_relation_oid !== 'number') {
    throw malformed('no relation identity', tableId);
  }
  let oldKey: string | null;
  let newKey: string | null;
  if (kind === 'synced') {
    if (typeof m.table_id !== 'string') throw malformed('a synced fence has no table ID', tableId);
    oldKey = recordId(m.old_record_id, tableId);
    newKey = recordId(m.new_record_id, tableId);
  } else {
    // A capture dependency has no table identity of its own.
    if ('table_id' in m) throw malformed('a capture-dependency fence names a table ID', tableId);
    oldKey = captureKey(m.old_capture_key ?? null, tableId);
    newKey = captureKey(m.new_capture_key ?? null, tableId);
  }
  const keysFit = m.operation === 'insert' ? oldKey === null && newKey !== null : m.operation === 'delete' ? oldKey !== null && newKey === null : oldKey !== null && oldKey === newKey;
  if (!keysFit) throw malformed('its keys do not fit its operation', tableId);
  return {
    fenceId: m.fence_id,
    ordinal: m.dml_ordinal,
    kind,
    relationId: m.relation_id,
    relationOid: m.physical_relation_oid,
    schema: m.physical_schema,
    relation: m.physical_relation,
    operation: m.operation,
    version: m.row_version,
    state: m.row_state,
    tableId: kind === 'synced' ? (m.table_id as string) : null,
    oldKey,
    newKey,
    message: m,
  };
}

const identity = (oid: number, key: string) => `${oid}\u0000${key}`;

function failure(detail: string, tableId: string | null): CaptureFailure {
  return new CaptureFailure('fence_correlation_failed', detail, tableId);
}

/**
 * Pairs every row event with its fence and fills in the event's fence. Events
 * are in source order; fences in the order they were decoded. `relationOf`
 * names the registration of an event's table.
 */
export function correlateFences(events: RowEvent[], fences: Fence[], relationOf: (tableId: string) => EventRelation | undefined): void {
  const ordinals = new Set<number>();
  const ids = new Set<string>();
  const versions = new Set<string>();
  const fencesOf = new Map<string, Fence[]>();
  for (const f of fences) {
    if (ordinals.has(f.ordinal)) throw failure('two fences share a registered-DML ordinal', f.tableId);
    if (ids.has(f.fenceId)) throw failure('two fences share a fence ID', f.tableId);
    if (versions.has(f.version)) throw failure('two fences share a row version', f.tableId);
    ordinals.add(f.ordinal);
    ids.add(f.fenceId);
    versions.add(f.version);
    const key = identity(f.relationOid, (f.newKey ?? f.oldKey) as string);
    const row = fencesOf.get(key) ?? [];
    // Within one row identity the fences fire in the order of its row operations.
    const previous = row[row.length - 1];
    if (previous !== undefined && previous.ordinal > f.ordinal && !fault('cap012-fence-order-unchecked')) throw failure('the fences of a row fired out of ordinal order', f.tableId); // fault: server:cap012-fence-order-unchecked
    row.push(f);
    fencesOf.set(key, row);
  }
  for (const row of fencesOf.values()) row.sort((a, b) => a.ordinal - b.ordinal);
  const taken = new Map<string, number>();
  for (const ev of events) {
    if (ev.op === 'baseline' || ev.relationOid === null || ev.tableId === null) continue;
    const key = identity(ev.relationOid, ev.pkText);
    const k = taken.get(key) ?? 0;
    taken.set(key, k + 1);
    const f = fencesOf.get(key)?.[k];
    if (f === undefined) throw failure('a row event has no version fence', ev.tableId);
    const reg = relationOf(ev.tableId);
    if (reg === undefined) throw failure('a row event names no registration', ev.tableId);
    const agrees =
      f.kind === reg.kind &&
      f.relationId === reg.relationId &&
      (f.kind === 'synced' ? f.tableId === ev.tableId : f.tableId === null) &&
      (f.operation === ev.op || fault('cap012-fence-operation-unchecked')) && // fault: server:cap012-fence-operation-unchecked
      (ev.op === 'delete' ? f.state === 'deleted' : true);
    if (!agrees) throw failure('a fence does not match its row event', ev.tableId);
    let version = f.version;
    if (fault('cap012-event-takes-row-final-version')) version = fencesOf.get(key)?.at(-1)?.version ?? version; // fault: server:cap012-event-takes-row-final-version
    ev.fence = { version, state: f.state, fenceId: f.fenceId, ordinal: f.ordinal, kind: f.kind, message: f.message };
  }
  for (const [key, row] of fencesOf) {
    if (row.length > (taken.get(key) ?? 0)) throw failure('a version fence has no row event', row[0]?.tableId ?? null);
  }
}

/**
 * A fence ID or a row version is used once: a fence of this transaction that
 * repeats one already materialized is a reused (or forged) correlation.
 */
export async function assertFencesUnused(db: ClientBase, events: RowEvent[]): Promise<void> {
  const fenced = events.filter((ev) => ev.fence.fenceId !== undefined);
  if (fenced.length === 0 || fault('cap012-fence-reuse-unchecked')) return; // fault: server:cap012-fence-reuse-unchecked
  // Two index probes (wal_events_fence_id_key, wal_events_server_version), not one OR: the planner answered
  // the OR with a scan of every materialized event, so this check grew with the stream.
  const { rows } = await db.query<{ table_id: string }>(
    `(SELECT table_id FROM synchro.wal_events WHERE fence_id = ANY ($1::uuid[]) LIMIT 1)
     UNION ALL (SELECT table_id FROM synchro.wal_events WHERE server_version = ANY ($2::text[]) LIMIT 1) LIMIT 1`,
    [fenced.map((ev) => ev.fence.fenceId), fenced.map((ev) => ev.fence.version)],
  );
  const reused = rows[0];
  if (reused !== undefined) throw failure('a fence ID or row version was already materialized', reused.table_id);
}
