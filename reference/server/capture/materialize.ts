/**
 * Materializes one source transaction in one database transaction: the
 * commit-ordered projections, membership edges evaluated on the
 * transaction's final projected state, the scope effects at their stream
 * positions, current scope contents, the transaction record and the
 * progress row. Nothing here reads a live application row.
 */
import type { ClientBase } from 'pg';
import { canonicalJson, parseJson, rowIdentityFromWire, utf8Order } from '../../../harness/codec/index.ts';
import { fault } from '../core/faults.ts';
import { formatLsn } from '../core/lsn.ts';
import { wireRow } from '../core/rows.ts';
import { quoteIdent } from '../core/tables.ts';
import { pkWire } from '../core/wire-change.ts';
import { impactedRows, reevaluateImpacted } from './impact.ts';
import { asFunctionOwner } from './owner-role.ts';
import type { RegisteredTable } from './registered-table.ts';
import { CaptureFailure, type RowEvent, type SourceImage, type SourceTransaction, UNCHANGED } from './transaction.ts';

interface Projected {
  table: RegisteredTable;
  pkText: string;
  image: SourceImage | null;
  version: string;
  deleted: boolean;
  lastOrdinal: number;
}

async function priorProjection(db: ClientBase, tableId: string, pkText: string) {
  const { rows } = await db.query<{ row_source: SourceImage | null; server_version: string; deleted: boolean }>(
    'SELECT row_source, server_version, deleted FROM synchro.projections WHERE table_id = $1 AND pk_text = $2',
    [tableId, pkText],
  );
  return rows[0];
}

const jsonFields = (t: RegisteredTable) => t.def.fields.filter((f) => f.type === 'json');

/**
 * Images keep JSON columns as JSON text: decoded changes carry it as such, a
 * baseline row (built with to_jsonb) carries the parsed value, turned back
 * into text here. jsonb_populate_record would read a JSON null as SQL NULL.
 */
function jsonAsText(t: RegisteredTable, image: SourceImage, baseline: boolean): SourceImage {
  if (!baseline) return image;
  const out = { ...image };
  for (const f of jsonFields(t)) if (out[f.column] !== null && out[f.column] !== undefined) out[f.column] = JSON.stringify(out[f.column]);
  return out;
}

/** The image as jsonb_populate_record takes it: JSON columns as JSON values. */
function populateInput(t: RegisteredTable, image: SourceImage): SourceImage {
  const out = { ...image };
  for (const f of jsonFields(t)) if (typeof out[f.column] === 'string') out[f.column] = JSON.parse(out[f.column] as string);
  return out;
}

/** The wire row of a source image, read through the relation's own column types; JSON values straight from their text. */
async function toWire(db: ClientBase, t: RegisteredTable, image: SourceImage): Promise<Record<string, unknown>> {
  const { rows } = await db.query({
    text: `SELECT ${t.def.selectList} FROM jsonb_populate_record(NULL::${t.def.qualified}, $1::jsonb) AS src`,
    values: [JSON.stringify(populateInput(t, image))],
  });
  const row = wireRow(t.def, rows[0] as Record<string, unknown>);
  for (const f of jsonFields(t)) {
    const text = image[f.column];
    row[f.fieldId] = text === null || text === undefined ? null : canonicalJson(parseJson(String(text)));
  }
  return row;
}

const SCOPE_ID = /^[\x21-\x7e]{1,256}$/;

/**
 * The registered membership function's scope set for one row, deduplicated and in byte order.
 * The function is the one the registry held at this point of the stream (the worker reloads it at
 * each registry message), so a changed rule places every write committed after the change.
 */
async function membership(db: ClientBase, t: RegisteredTable, pkText: string): Promise<string[]> {
  if (t.membershipFunction === null) return [];
  const pkSql = t.def.byId.get(t.def.pkFieldId)?.sqlType ?? 'text';
  let rows: Array<{ s: unknown }>;
  try {
    // No savepoint: a failure aborts the whole materialization transaction, which is then quarantined.
    const call = () => db.query<{ s: unknown }>(`SELECT s::text AS s FROM ${t.membershipFunction}($1::${pkSql}) AS s`, [pkText]);
    rows = (t.membershipOwner ? await asFunctionOwner(db, t.membershipOwner, call) : await call()).rows;
  } catch {
    throw new CaptureFailure('scope_evaluation_failed', 'the membership function failed', t.def.tableId);
  }
  const out = new Set<string>();
  for (const r of rows) {
    if (typeof r.s !== 'string' || r.s.trim() === '' || !SCOPE_ID.test(r.s) || r.s === 'user:') {
      if (fault('invalid-scope-as-empty')) continue; // fault: server:invalid-scope-as-empty
      throw new CaptureFailure('scope_evaluation_failed', 'the membership function returned an invalid scope', t.def.tableId);
    }
    out.add(r.s);
  }
  if (out.size > t.maxScopeFanout) throw new CaptureFailure('scope_evaluation_failed', 'the membership result exceeds max_scope_fanout', t.def.tableId);
  if (fault('membership-first-scope-only')) return [...out].slice(0, 1); // fault: server:membership-first-scope-only
  return [...out].sort(utf8Order);
}

export interface Materialized {
  eventCount: number;
  effectCount: number;
}

/** Runs inside the caller's open transaction; throws CaptureFailure (or a database error) to abort it. */
export async function materializeTransaction(
  db: ClientBase,
  generation: string,
  tx: SourceTransaction,
  events: RowEvent[],
  tables: Map<string, RegisteredTable>,
): Promise<Materialized> {
  const commit = formatLsn(tx.commitLsn);
  // 1. Apply every row image, in order, to a transaction-local projected state.
  const state = new Map<string, Projected>();
  for (const ev of events) {
    const t = tables.get(ev.tableId ?? '');
    if (t === undefined) throw new CaptureFailure('validation_failed', 'an event names a table that is not registered', ev.tableId);
    const key = `${t.def.tableId}\u0000${ev.pkText}`;
    let image = ev.image === null ? null : jsonAsText(t, ev.image, ev.op === 'baseline');
    if (image !== null && Object.values(image).some((v) => v === UNCHANGED)) {
      const before = state.get(key)?.image ?? (await priorProjection(db, t.def.tableId, ev.pkText))?.row_source ?? null;
      if (before === null) throw new CaptureFailure('materialization_failed', 'an unchanged column has no prior projection', t.def.tableId);
      image = Object.fromEntries(Object.entries(image).map(([c, v]) => [c, v === UNCHANGED ? before[c] : v]));
    }
    if (fault('first-image-wins') && state.has(key)) continue; // fault: server:first-image-wins
    state.set(key, { table: t, pkText: ev.pkText, image, version: ev.fence.version, deleted: ev.fence.state === 'deleted', lastOrdinal: ev.ordinal });
  }

  // 2. The final projected state becomes what membership functions read.
  const keys = [...state.keys()].sort(utf8Order);
  for (const key of keys) {
    const p = state.get(key) as Projected;
    const proj = `synchro_projection.${quoteIdent(p.table.name)}`;
    const pkSql = p.table.def.byId.get(p.table.def.pkFieldId)?.sqlType ?? 'text';
    try {
      await db.query(`DELETE FROM ${proj} WHERE ${quoteIdent(p.table.def.pkColumn)} = $1::${pkSql}`, [p.pkText]);
      if (p.image !== null) await db.query(`INSERT INTO ${proj} SELECT * FROM jsonb_populate_record(NULL::${proj}, $1::jsonb)`, [JSON.stringify(populateInput(p.table, p.image))]);
    } catch {
      throw new CaptureFailure('projection_write_failed', 'the projection of a row could not be written', p.table.def.tableId);
    }
  }

  // Before the projection records change: the old images of dependency rows are still there.
  const impacted = await impactedRows(db, keys.map((k) => state.get(k) as Projected), tables, (id, pk) => priorProjection(db, id, pk));

  // 3. Evaluate membership on the final state and write net projections, edges and effects.
  let effectCount = 0;
  for (const key of keys) {
    const p = state.get(key) as Projected;
    const def = p.table.def;
    const prior = await priorProjection(db, def.tableId, p.pkText);
    if (prior !== undefined && prior.server_version === p.version && prior.deleted === p.deleted) continue; // a baseline of known state
    let row: Record<string, unknown> | null = null;
    try {
      if (p.image !== null) row = await toWire(db, p.table, p.image);
    } catch (e) {
      if (e instanceof CaptureFailure) throw e;
      throw new CaptureFailure('projection_write_failed', 'a row image does not fit its registered fields', def.tableId);
    }
    await db.query(
      `INSERT INTO synchro.projections (table_id, pk_text, row_wire, row_source, server_version, deleted, commit_lsn, event_ordinal)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (table_id, pk_text) DO UPDATE SET row_wire = excluded.row_wire, row_source = excluded.row_source,
         server_version = excluded.server_version, deleted = excluded.deleted, commit_lsn = excluded.commit_lsn,
         event_ordinal = excluded.event_ordinal`,
      [def.tableId, p.pkText, row === null ? null : JSON.stringify(row), p.image === null ? null : JSON.stringify(p.image), p.version, p.deleted, commit, p.lastOrdinal],
    );
    const before = (await db.query<{ scope_id: string }>('SELECT scope_id FROM synchro.membership_edges WHERE table_id = $1 AND pk_text = $2', [def.tableId, p.pkText])).rows.map((r) => r.scope_id);
    const after = p.image === null ? [] : await membership(db, p.table, p.pkText);
    const identity = Buffer.from(rowIdentityFromWire(def.tableId, def.pkFieldId, def.pkType, pkWire(def, p.pkText)));
    const effect = async (scope: string, op: 'upsert' | 'delete', wire: Record<string, unknown> | null) => {
      await db.query(
        `INSERT INTO synchro.scope_effects (scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal, table_id, pk_text, pk_bytes, op_rank, op, server_version, row_wire)
         VALUES ($1, $2, $3, $4, 0, $5, $6, $7, $8, $9, $10, $11)`,
        [scope, generation, commit, p.lastOrdinal, def.tableId, p.pkText, identity, op === 'upsert' ? 1 : 0, op, p.version, wire === null ? null : JSON.stringify(wire)],
      );
      effectCount++;
    };
    for (const scope of after) {
      // A soft-deleted row is an authoritative tombstone in its scopes; a live one an upsert.
      await effect(scope, p.deleted ? 'delete' : 'upsert', row);
      if (p.deleted) {
        await db.query('DELETE FROM synchro.scope_rows WHERE scope_id = $1 AND table_id = $2 AND pk_bytes = $3', [scope, def.tableId, identity]);
      } else {
        await db.query(
          `INSERT INTO synchro.scope_rows (scope_id, table_id, pk_bytes, pk_text, row_wire, server_version) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (scope_id, table_id, pk_bytes) DO UPDATE SET row_wire = excluded.row_wire, server_version = excluded.server_version`,
          [scope, def.tableId, identity, p.pkText, JSON.stringify(row), p.version],
        );
      }
    }
    for (const scope of before) {
      if (after.includes(scope)) continue;
      // Leaving a scope is a rowless delete there, never an invented tombstone.
      await effect(scope, 'delete', null);
      await db.query('DELETE FROM synchro.scope_rows WHERE scope_id = $1 AND table_id = $2 AND pk_bytes = $3', [scope, def.tableId, identity]);
    }
    if (before.some((scope) => !after.includes(scope))) {
      await db.query('DELETE FROM synchro.membership_edges WHERE table_id = $1 AND pk_text = $2 AND NOT (scope_id = ANY ($3::text[]))', [def.tableId, p.pkText, after]);
    }
    for (const scope of after) {
      if (!before.includes(scope)) await db.query('INSERT INTO synchro.membership_edges VALUES ($1, $2, $3)', [def.tableId, p.pkText, scope]);
    }
  }

  // 3b. Rows named by impact functions: evaluated on the same final state, edge diffs only.
  const lastOrdinal = events.reduce((m, ev) => Math.max(m, ev.ordinal), 0);
  effectCount += await reevaluateImpacted(db, { generation, commit, eventOrdinal: lastOrdinal }, impacted, tables, (t, pk) => membership(db, t, pk));

  // 4. The transaction record and the progress row, in the same database transaction.
  await db.query(
    'INSERT INTO synchro.wal_transactions (stream_generation, commit_lsn, end_lsn, source_xid, event_count, effect_count, content_hash) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [generation, commit, formatLsn(tx.endLsn), tx.xid, events.length, effectCount, tx.contentHash],
  );
  await db.query(
    `UPDATE synchro.wal_progress SET materialized_commit_lsn = $1, materialized_end_lsn = $2,
       processed_end_lsn = greatest(processed_end_lsn, $2::pg_lsn)`,
    [commit, formatLsn(tx.endLsn)],
  );
  return { eventCount: events.length, effectCount };
}

