/**
 * Materializes one source transaction in one database transaction: the
 * commit-ordered projections, membership edges evaluated on the
 * transaction's final projected state, the scope effects at their stream
 * positions, current scope contents, the transaction record and the
 * progress row. Nothing here reads a live application row.
 *
 * The work is set-based: each step is a handful of statements for all the
 * transaction's rows (per table where the SQL depends on the table), so
 * the number of round trips does not grow with the rows, and every lookup
 * goes through a key index (027-capture-performance.sql).
 */
import type { ClientBase } from 'pg';
import { canonicalJson, parseJson, rowIdentityFromWire, utf8Order } from '../../../harness/codec/index.ts';
import { type StoredDigest, storedDigest } from '../core/checksums.ts';
import { fault } from '../core/faults.ts';
import { TEXT_LIMITS } from '../core/input-limits.ts';
import { formatLsn } from '../core/lsn.ts';
import { wireRow } from '../core/rows.ts';
import { quoteIdent } from '../core/tables.ts';
import { pkWire } from '../core/wire-change.ts';
import { supersede } from './effects.ts';
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

interface PriorProjection {
  row_source: SourceImage | null;
  server_version: string;
  deleted: boolean;
}

async function priorProjection(db: ClientBase, tableId: string, pkText: string): Promise<PriorProjection | undefined> {
  const { rows } = await db.query<PriorProjection>(
    'SELECT row_source, server_version, deleted FROM synchro.projections WHERE table_id = $1 AND pk_text = $2',
    [tableId, pkText],
  );
  return rows[0];
}

const rowKey = (tableId: string, pkText: string) => `${tableId}\u0000${pkText}`;

/** The projection records of many rows at once, by rowKey. */
async function priorProjections(db: ClientBase, rows: Projected[]): Promise<Map<string, PriorProjection>> {
  const out = new Map<string, PriorProjection>();
  if (rows.length === 0) return out;
  const { rows: found } = await db.query<PriorProjection & { table_id: string; pk_text: string }>(
    `SELECT p.table_id, p.pk_text, p.row_source, p.server_version, p.deleted
       FROM jsonb_to_recordset($1::jsonb) AS k(table_id text, pk_text text)
       JOIN synchro.projections p ON p.table_id = k.table_id AND p.pk_text = k.pk_text`,
    [JSON.stringify(rows.map((p) => ({ table_id: p.table.def.tableId, pk_text: p.pkText })))],
  );
  for (const r of found) out.set(rowKey(r.table_id, r.pk_text), r);
  return out;
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

/**
 * The wire rows of source images of one table, in input order, read through
 * the relation's own column types; JSON values straight from their text.
 */
async function toWire(db: ClientBase, t: RegisteredTable, images: SourceImage[]): Promise<Array<Record<string, unknown>>> {
  if (images.length === 0) return [];
  const { rows } = await db.query<Record<string, unknown>>({
    text: `SELECT x."$synchro_n"::int AS "$synchro_n", ${t.def.selectList}
             FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x("$synchro_j", "$synchro_n"),
                  LATERAL jsonb_populate_record(NULL::${t.def.qualified}, x."$synchro_j") AS src`,
    values: [JSON.stringify(images.map((image) => populateInput(t, image)))],
  });
  const out: Array<Record<string, unknown>> = new Array(images.length);
  for (const raw of rows) {
    const at = (raw.$synchro_n as number) - 1;
    const image = images[at] as SourceImage;
    const row = wireRow(t.def, raw);
    for (const f of jsonFields(t)) {
      const text = image[f.column];
      row[f.fieldId] = text === null || text === undefined ? null : canonicalJson(parseJson(String(text)));
    }
    out[at] = row;
  }
  return out;
}

/**
 * A scope ID a membership function may return. The wire asks only that it be
 * nonempty; the reference also refuses blank text and control characters and
 * keeps to the length its request checks allow (TEXT_LIMITS.scopeId), so any
 * other Unicode text (ordered by UTF-8 bytes) is a scope.
 */
function validScopeId(s: string): boolean {
  if (s.trim() === '' || s === 'user:' || Buffer.byteLength(s, 'utf8') > TEXT_LIMITS.scopeId) return false;
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0;
    if (code < 0x20 || code === 0x7f) return false;
  }
  return true;
}

/** One row's scope set from what its membership function returned: validated, deduplicated, in byte order. */
function scopeSet(t: RegisteredTable, rows: Array<{ s: unknown }>): string[] {
  const out = new Set<string>();
  for (const r of rows) {
    if (typeof r.s !== 'string' || !validScopeId(r.s)) {
      if (fault('invalid-scope-as-empty')) continue; // fault: server:invalid-scope-as-empty
      throw new CaptureFailure('scope_evaluation_failed', 'the membership function returned an invalid scope', t.def.tableId);
    }
    out.add(r.s);
  }
  if (out.size > t.maxScopeFanout && fault('schema007-fanout-truncated')) return [...out].sort(utf8Order).slice(0, t.maxScopeFanout); // fault: server:schema007-fanout-truncated
  if (out.size > t.maxScopeFanout) throw new CaptureFailure('scope_evaluation_failed', 'the membership result exceeds max_scope_fanout', t.def.tableId);
  if (fault('membership-first-scope-only')) return [...out].slice(0, 1); // fault: server:membership-first-scope-only
  return [...out].sort(utf8Order);
}

/**
 * The registered membership function's scope sets for rows of one table, in input order, in one call.
 * The function is the one of the registry generation in force at the end of the transaction (the
 * worker reads generations at their activation messages), so a changed rule places every write after it.
 */
async function memberships(db: ClientBase, t: RegisteredTable, pkTexts: string[]): Promise<string[][]> {
  if (t.membershipFunction === null || pkTexts.length === 0) return pkTexts.map(() => []);
  const pkSql = t.def.byId.get(t.def.pkFieldId)?.sqlType ?? 'text';
  let rows: Array<{ n: number; s: unknown }>;
  try {
    // No savepoint: a failure aborts the whole materialization transaction, which is then quarantined.
    // Rows come back key by key in input order, each key's scopes in the order the function gave them.
    // The function runs once per key, as its contract has it: behind OFFSET 0 the planner cannot merge an
    // inlinable SQL function into a join that reads its whole projection for the transaction's few keys,
    // which made each transaction's cost grow with the rows captured (decision 432).
    const call = () =>
      db.query<{ n: number; s: unknown }>(
        `SELECT u.n::int AS n, m.s::text AS s FROM unnest($1::text[]) WITH ORDINALITY AS u(k, n)
           CROSS JOIN LATERAL (SELECT s FROM ${t.membershipCall ?? t.membershipFunction}(u.k::${pkSql}) AS s OFFSET 0) AS m`,
        [pkTexts],
      );
    // A forwarder already runs as the owner.
    rows = (t.membershipOwner && t.membershipCall === undefined ? await asFunctionOwner(db, t.membershipOwner, call) : await call()).rows;
  } catch (error) {
    if (fault('ops005-membership-error-stored-raw')) throw new CaptureFailure('scope_evaluation_failed', String((error as Error).message), t.def.tableId); // fault: server:ops005-membership-error-stored-raw
    throw new CaptureFailure('scope_evaluation_failed', 'the membership function failed', t.def.tableId);
  }
  const raw: Array<Array<{ s: unknown }>> = pkTexts.map(() => []);
  for (const r of rows) raw[r.n - 1]?.push({ s: r.s });
  return raw.map((scopes) => scopeSet(t, scopes));
}

/** One row's scope set (impact re-evaluation asks row by row). */
async function membership(db: ClientBase, t: RegisteredTable, pkText: string): Promise<string[]> {
  return (await memberships(db, t, [pkText]))[0] as string[];
}

export interface Materialized {
  eventCount: number;
  effectCount: number;
}

/** The schema hash row digests are stored under: the newest published manifest's, if any. */
export async function digestSchemaHash(db: ClientBase): Promise<string | null> {
  const { rows } = await db.query<{ h: string }>('SELECT schema_hash AS h FROM synchro.manifests ORDER BY schema_version DESC LIMIT 1');
  return rows[0]?.h ?? null;
}

/** Groups rows by table, keeping their order (rows arrive sorted by table, then key). */
function byTable(rows: Projected[]): Array<{ table: RegisteredTable; rows: Projected[] }> {
  const out: Array<{ table: RegisteredTable; rows: Projected[] }> = [];
  for (const p of rows) {
    const last = out[out.length - 1];
    if (last !== undefined && last.table.def.tableId === p.table.def.tableId) last.rows.push(p);
    else out.push({ table: p.table, rows: [p] });
  }
  return out;
}

/** Writes the final projected state of the transaction's rows, which membership functions read. */
async function writeProjectionRows(db: ClientBase, rows: Projected[]): Promise<void> {
  for (const { table, rows: group } of byTable(rows)) {
    const proj = `synchro_projection.${quoteIdent(table.name)}`;
    const pkSql = table.def.byId.get(table.def.pkFieldId)?.sqlType ?? 'text';
    const images = group.filter((p) => p.image !== null).map((p) => populateInput(table, p.image as SourceImage));
    try {
      const replaced = `DELETE FROM ${proj} WHERE ${quoteIdent(table.def.pkColumn)} = ANY ($1::${pkSql}[])`;
      // One statement when there are images: the insert does not see the delete's rows, and the projection's key index is not unique.
      if (images.length === 0) await db.query(replaced, [group.map((p) => p.pkText)]);
      else await db.query(`WITH replaced AS (${replaced}) INSERT INTO ${proj} SELECT * FROM jsonb_populate_recordset(NULL::${proj}, $2::jsonb)`, [group.map((p) => p.pkText), JSON.stringify(images)]);
    } catch {
      throw new CaptureFailure('projection_write_failed', 'the projection of a row could not be written', table.def.tableId);
    }
  }
}

/** A scope effect or scope row as the batch statements take it (keys as hex). */
interface EffectRecord {
  scope_id: string;
  event_ordinal: number;
  table_id: string;
  pk_text: string;
  pk_bytes: string;
  op_rank: number;
  op: 'upsert' | 'delete';
  server_version: string;
  row_wire: Record<string, unknown> | null;
  row_digest: string | null;
  digest_tag: string | null;
}

/** Everything step 3 writes, gathered first and written in a few statements. */
interface Writes {
  projections: Array<Record<string, unknown>>;
  effects: EffectRecord[];
  rowUpserts: Array<Omit<EffectRecord, 'event_ordinal' | 'op_rank' | 'op'>>;
  rowDeletes: Array<{ scope_id: string; table_id: string; pk_bytes: string }>;
  edgeDeletes: Array<{ table_id: string; pk_text: string; scope_id: string }>;
  edgeInserts: Array<{ table_id: string; pk_text: string; scope_id: string }>;
}

async function writeAll(db: ClientBase, generation: string, commit: string, w: Writes): Promise<void> {
  const batch = async (rows: unknown[], sql: string, extra: unknown[] = []) => {
    if (rows.length > 0) await db.query(sql, [JSON.stringify(rows), ...extra]);
  };
  await batch(
    w.projections,
    `INSERT INTO synchro.projections (table_id, pk_text, row_wire, row_source, server_version, deleted, commit_lsn, event_ordinal)
     SELECT x.table_id, x.pk_text, x.row_wire, x.row_source, x.server_version, x.deleted, $2::pg_lsn, x.event_ordinal
       FROM jsonb_to_recordset($1::jsonb) AS x(table_id text, pk_text text, row_wire jsonb, row_source jsonb, server_version text, deleted boolean, event_ordinal int8)
     ON CONFLICT (table_id, pk_text) DO UPDATE SET row_wire = excluded.row_wire, row_source = excluded.row_source,
       server_version = excluded.server_version, deleted = excluded.deleted, commit_lsn = excluded.commit_lsn,
       event_ordinal = excluded.event_ordinal`,
    [commit],
  );
  // An effect supersedes the earlier ones of its key in its scope (pull reads only the latest).
  await supersede(db, generation, w.effects);
  await batch(
    w.effects,
    `INSERT INTO synchro.scope_effects (scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal, table_id, pk_text, pk_bytes, op_rank, op, server_version, row_wire, row_digest, digest_tag)
     SELECT x.scope_id, $2, $3::pg_lsn, x.event_ordinal, 0, x.table_id, x.pk_text, decode(x.pk_bytes, 'hex'), x.op_rank, x.op, x.server_version, x.row_wire, decode(x.row_digest, 'hex'), x.digest_tag
       FROM jsonb_to_recordset($1::jsonb) AS x(scope_id text, event_ordinal int8, table_id text, pk_text text, pk_bytes text, op_rank int2, op text, server_version text, row_wire jsonb, row_digest text, digest_tag text)`,
    [generation, commit],
  );
  await batch(
    w.rowDeletes,
    `DELETE FROM synchro.scope_rows r USING jsonb_to_recordset($1::jsonb) AS x(scope_id text, table_id text, pk_bytes text)
      WHERE r.scope_id = x.scope_id AND r.table_id = x.table_id AND r.pk_bytes = decode(x.pk_bytes, 'hex')`,
  );
  await batch(
    w.rowUpserts,
    `INSERT INTO synchro.scope_rows (scope_id, table_id, pk_bytes, pk_text, row_wire, server_version, row_digest, digest_tag)
     SELECT x.scope_id, x.table_id, decode(x.pk_bytes, 'hex'), x.pk_text, x.row_wire, x.server_version, decode(x.row_digest, 'hex'), x.digest_tag
       FROM jsonb_to_recordset($1::jsonb) AS x(scope_id text, table_id text, pk_bytes text, pk_text text, row_wire jsonb, server_version text, row_digest text, digest_tag text)
     ON CONFLICT (scope_id, table_id, pk_bytes) DO UPDATE SET row_wire = excluded.row_wire, server_version = excluded.server_version,
       row_digest = excluded.row_digest, digest_tag = excluded.digest_tag`,
  );
  await batch(
    w.edgeDeletes,
    `DELETE FROM synchro.membership_edges e USING jsonb_to_recordset($1::jsonb) AS x(table_id text, pk_text text, scope_id text)
      WHERE e.table_id = x.table_id AND e.pk_text = x.pk_text AND e.scope_id = x.scope_id`,
  );
  await batch(
    w.edgeInserts,
    `INSERT INTO synchro.membership_edges (table_id, pk_text, scope_id)
     SELECT x.table_id, x.pk_text, x.scope_id FROM jsonb_to_recordset($1::jsonb) AS x(table_id text, pk_text text, scope_id text)`,
  );
}

/** Current membership edges of many rows, by rowKey. */
async function edgesOf(db: ClientBase, rows: Projected[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (rows.length === 0) return out;
  const { rows: found } = await db.query<{ table_id: string; pk_text: string; scope_id: string }>(
    `SELECT e.table_id, e.pk_text, e.scope_id
       FROM jsonb_to_recordset($1::jsonb) AS k(table_id text, pk_text text)
       JOIN synchro.membership_edges e ON e.table_id = k.table_id AND e.pk_text = k.pk_text`,
    [JSON.stringify(rows.map((p) => ({ table_id: p.table.def.tableId, pk_text: p.pkText })))],
  );
  for (const r of found) {
    const key = rowKey(r.table_id, r.pk_text);
    out.set(key, [...(out.get(key) ?? []), r.scope_id]);
  }
  return out;
}

/**
 * One record per row event of the transaction under its replay identity
 * (stream_generation, commit_lsn, event_ordinal): what every pull effect's
 * position names. Events outside the registry (no table) have none.
 */
async function writeEventRecords(db: ClientBase, generation: string, commit: string, events: RowEvent[]): Promise<void> {
  const records = events
    .filter((ev) => ev.tableId !== null)
    .map((ev) => ({
      event_ordinal: ev.ordinal,
      table_id: ev.tableId,
      pk_text: ev.pkText,
      operation: ev.op,
      server_version: ev.fence.version,
      registry_generation: ev.registryGeneration ?? null,
      // The paired fence (a baseline record has none): its ID is never accepted twice.
      fence_id: ev.fence.fenceId ?? null,
      dml_ordinal: ev.fence.ordinal ?? null,
      registration_kind: ev.fence.kind ?? null,
      fence_message: ev.fence.message ?? null,
    }));
  if (records.length === 0 || fault('effects-without-event-records')) return; // fault: server:effects-without-event-records
  await db.query(
    `INSERT INTO synchro.wal_events (stream_generation, commit_lsn, event_ordinal, table_id, pk_text, operation, server_version, registry_generation, fence_id, dml_ordinal, registration_kind, fence_message)
     SELECT $2, $3::pg_lsn, x.event_ordinal, x.table_id, x.pk_text, x.operation, x.server_version, x.registry_generation, x.fence_id, x.dml_ordinal, x.registration_kind, x.fence_message
       FROM jsonb_to_recordset($1::jsonb) AS x(event_ordinal int8, table_id text, pk_text text, operation text, server_version text, registry_generation int8,
                                               fence_id uuid, dml_ordinal int8, registration_kind text, fence_message jsonb)`,
    [JSON.stringify(records), generation, commit],
  );
}

/** Runs inside the caller's open transaction; throws CaptureFailure (or a database error) to abort it. */
export async function materializeTransaction(
  db: ClientBase,
  generation: string,
  tx: SourceTransaction,
  events: RowEvent[],
  tables: Map<string, RegisteredTable>,
  /** The schema hash to store row digests under (digestSchemaHash), when the caller has read it already. */
  digestHash?: string | null,
  /** The processed boundary this transaction moves the progress row to: its end unless the caller read past it (see materializeOne). */
  processedTo: string = formatLsn(tx.endLsn),
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
  const projected = keys.map((k) => state.get(k) as Projected);
  await writeProjectionRows(db, projected);

  // Before the projection records change: the old images of dependency rows are still there.
  const priors = await priorProjections(db, projected);
  const impacted = await impactedRows(db, projected, tables, async (id, pk) => priors.get(rowKey(id, pk)));

  // 3. Evaluate membership on the final state and write net projections, edges and effects.
  // A baseline of known state (same version, same deletion) changes nothing.
  const changed = projected.filter((p) => {
    const prior = priors.get(rowKey(p.table.def.tableId, p.pkText));
    return !(prior !== undefined && prior.server_version === p.version && prior.deleted === p.deleted);
  });
  const wires = new Map<Projected, Record<string, unknown>>();
  const scopes = new Map<Projected, string[]>();
  for (const { table, rows } of byTable(changed)) {
    const live = rows.filter((p) => p.image !== null);
    let rowsWire: Array<Record<string, unknown>>;
    try {
      rowsWire = await toWire(db, table, live.map((p) => p.image as SourceImage));
    } catch (e) {
      if (e instanceof CaptureFailure) throw e;
      throw new CaptureFailure('projection_write_failed', 'a row image does not fit its registered fields', table.def.tableId);
    }
    for (const [i, p] of live.entries()) wires.set(p, rowsWire[i] as Record<string, unknown>);
    const sets = await memberships(db, table, live.map((p) => p.pkText));
    for (const [i, p] of live.entries()) scopes.set(p, sets[i] as string[]);
  }
  const edges = await edgesOf(db, changed);
  const schemaHash = digestHash === undefined ? await digestSchemaHash(db) : digestHash;
  const writes: Writes = { projections: [], effects: [], rowUpserts: [], rowDeletes: [], edgeDeletes: [], edgeInserts: [] };
  for (const p of changed) {
    const def = p.table.def;
    const row = wires.get(p) ?? null;
    writes.projections.push({ table_id: def.tableId, pk_text: p.pkText, row_wire: row, row_source: p.image, server_version: p.version, deleted: p.deleted, event_ordinal: p.lastOrdinal });
    const before = edges.get(rowKey(def.tableId, p.pkText)) ?? [];
    const after = p.image === null ? [] : (scopes.get(p) ?? []);
    const pkBytes = Buffer.from(rowIdentityFromWire(def.tableId, def.pkFieldId, def.pkType, pkWire(def, p.pkText))).toString('hex');
    const stored: StoredDigest | null = row === null || schemaHash === null ? null : storedDigest(def, schemaHash, row, p.version);
    const digest = { row_digest: stored?.digest ?? null, digest_tag: stored?.tag ?? null };
    const at = { table_id: def.tableId, pk_text: p.pkText, pk_bytes: pkBytes, server_version: p.version };
    const effect = (scope: string, op: 'upsert' | 'delete', wire: Record<string, unknown> | null) =>
      writes.effects.push({ scope_id: scope, event_ordinal: p.lastOrdinal, ...at, op_rank: op === 'upsert' ? 1 : 0, op, row_wire: wire, ...(wire === null ? { row_digest: null, digest_tag: null } : digest) });
    for (const scope of after) {
      // A soft-deleted row is an authoritative tombstone in its scopes; a live one an upsert.
      effect(scope, p.deleted ? 'delete' : 'upsert', row);
      if (p.deleted) writes.rowDeletes.push({ scope_id: scope, table_id: def.tableId, pk_bytes: pkBytes });
      else writes.rowUpserts.push({ scope_id: scope, ...at, row_wire: row, ...digest });
    }
    for (const scope of before) {
      if (after.includes(scope)) continue;
      // Leaving a scope is a rowless delete there, never an invented tombstone.
      effect(scope, 'delete', null);
      writes.rowDeletes.push({ scope_id: scope, table_id: def.tableId, pk_bytes: pkBytes });
      writes.edgeDeletes.push({ table_id: def.tableId, pk_text: p.pkText, scope_id: scope });
    }
    for (const scope of after) if (!before.includes(scope)) writes.edgeInserts.push({ table_id: def.tableId, pk_text: p.pkText, scope_id: scope });
  }
  await writeAll(db, generation, commit, writes);
  let effectCount = writes.effects.length;

  // 3b. Rows named by impact functions: evaluated on the same final state, edge diffs only.
  const lastOrdinal = events.reduce((m, ev) => Math.max(m, ev.ordinal), 0);
  effectCount += await reevaluateImpacted(db, { generation, commit, eventOrdinal: lastOrdinal }, impacted, tables, (t, pk) => membership(db, t, pk));

  // 4. The event records, the transaction record and the progress row, in the same database transaction.
  await writeEventRecords(db, generation, commit, events);
  // The transaction record and the progress row are one statement (one round trip less before the commit).
  await db.query(
    `WITH recorded AS (
       INSERT INTO synchro.wal_transactions (stream_generation, commit_lsn, end_lsn, source_xid, event_count, effect_count, content_hash) VALUES ($1, $2, $3, $4, $5, $6, $7))
     UPDATE synchro.wal_progress SET materialized_commit_lsn = $2, materialized_end_lsn = $3,
       processed_end_lsn = greatest(processed_end_lsn, $8::pg_lsn)`,
    [generation, commit, formatLsn(tx.endLsn), tx.xid, events.length, effectCount, tx.contentHash, processedTo],
  );
  return { eventCount: events.length, effectCount };
}

