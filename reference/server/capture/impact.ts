/**
 * Dependency-driven membership. A membership function may read rows other
 * than its own: a parent's projection (a capture-only dependency) or sibling
 * rows (a self-impact declaration). For every row of such a dependency that
 * a source transaction changed, the registered impact function receives the
 * row's image before the transaction and its final image, and names the
 * target rows whose membership may have moved. Those rows are evaluated
 * again on the transaction's final projected state; only their edges can
 * move (their own row did not change), so they get an effect only in the
 * scopes they enter or leave.
 *
 * Both images are needed: the old one names the rows a change takes away
 * (a project leaving team A), the new one the rows it brings (joining B).
 */
import type { ClientBase } from 'pg';
import { rowIdentityFromWire, utf8Order } from '../../../harness/codec/index.ts';
import { fault } from '../core/faults.ts';
import { supersede } from './effects.ts';
import { asFunctionOwner } from './owner-role.ts';
import type { ImpactRule, RegisteredTable } from './registered-table.ts';
import { CaptureFailure, type SourceImage } from './transaction.ts';

/** Impact rules by the internal table_id of the dependency relation. */
export async function loadImpactRules(db: ClientBase): Promise<Map<string, ImpactRule[]>> {
  const { rows } = await db.query<{ dependency_id: string; source_table_id: string; dependency_table_id: string; impact_function_id: string; owner: string; max_impact_rows: number }>(
    `SELECT d.dependency_id, d.source_table_id, d.dependency_table_id, d.impact_function_id, d.max_impact_rows,
            (SELECT pg_get_userbyid(p.proowner) FROM pg_proc p WHERE p.oid = d.impact_function_oid) AS owner
       FROM synchro.membership_dependencies d
       JOIN synchro.relations s ON s.table_id = d.source_table_id AND s.active
       JOIN synchro.relations r ON r.table_id = d.dependency_table_id AND r.active
      ORDER BY d.dependency_id COLLATE "C"`,
  );
  const out = new Map<string, ImpactRule[]>();
  for (const r of rows) {
    const list = out.get(r.dependency_table_id) ?? [];
    list.push({ dependencyId: r.dependency_id, targetTableId: r.source_table_id, impactFunction: r.impact_function_id, impactOwner: r.owner, maxImpactRows: r.max_impact_rows });
    out.set(r.dependency_table_id, list);
  }
  return out;
}

/** A changed row of this transaction, as materialization holds it. */
export interface ChangedRow {
  table: RegisteredTable;
  pkText: string;
  /** Final image; null when the row was deleted. */
  image: SourceImage | null;
}

const INTEGER_KEY = /^-?(0|[1-9][0-9]*)$/;

/**
 * A captured image as populate input: JSON columns as JSON values. Images hold every column as
 * text (decoded changes) or as JSON values (baselines); the impact call reads them back through
 * the relation's own row type, so the function always sees the row as to_jsonb would give it.
 */
function populateInput(t: RegisteredTable, image: SourceImage | null): string | null {
  if (image === null) return null;
  const out = { ...image };
  for (const f of t.def.fields) if (f.type === 'json' && typeof out[f.column] === 'string') out[f.column] = JSON.parse(out[f.column] as string);
  return JSON.stringify(out);
}

/** The keys one impact call names, validated against its target; any violation quarantines the transaction. */
async function callImpact(db: ClientBase, rule: ImpactRule, source: RegisteredTable, target: RegisteredTable, oldImage: SourceImage | null, newImage: SourceImage | null): Promise<Set<string>> {
  let rows: Array<{ table_id: unknown; pk_type: unknown; pk_value: unknown }>;
  const image = (n: number) => `CASE WHEN $${n}::jsonb IS NULL THEN NULL ELSE to_jsonb(jsonb_populate_record(NULL::${source.def.qualified}, $${n}::jsonb)) END`;
  try {
    // No savepoint: a failure aborts the materialization transaction, which is then quarantined.
    const values = [populateInput(source, oldImage), populateInput(source, newImage)];
    // The images are built as the worker; only the function call itself runs as its owner.
    const { rows: images } = await db.query<{ o: string | null; n: string | null }>(`SELECT (${image(1)})::text AS o, (${image(2)})::text AS n`, values);
    const call = () => db.query(`SELECT r.table_id, r.pk_type, r.pk_value FROM ${rule.impactCall ?? rule.impactFunction}($1::jsonb, $2::jsonb) AS r`, [images[0]?.o ?? null, images[0]?.n ?? null]);
    // A forwarder already runs as the owner.
    rows = (rule.impactCall === undefined ? await asFunctionOwner(db, rule.impactOwner, call) : await call()).rows;
  } catch {
    throw new CaptureFailure('scope_evaluation_failed', 'the impact function failed', target.def.tableId);
  }
  const keys = new Set<string>();
  for (const r of rows) {
    const valid =
      r.table_id === target.def.tableId &&
      r.pk_type === target.def.pkType &&
      typeof r.pk_value === 'string' &&
      (target.def.pkType === 'string' || INTEGER_KEY.test(r.pk_value));
    if (!valid && fault('impact-invalid-reference-as-none')) continue; // fault: server:impact-invalid-reference-as-none
    if (!valid) throw new CaptureFailure('scope_evaluation_failed', 'the impact function returned an invalid row reference', target.def.tableId);
    keys.add(r.pk_value as string);
  }
  if (keys.size > rule.maxImpactRows) throw new CaptureFailure('scope_evaluation_failed', 'the impact result exceeds max_impact_rows', target.def.tableId);
  return keys;
}

/**
 * Target rows to evaluate again, by target table_id. Call it after the
 * transaction's images are applied to the projections and before the
 * projection records are replaced: `prior` must still return the state
 * before this transaction, which is the old image.
 */
export async function impactedRows(
  db: ClientBase,
  changed: ChangedRow[],
  tables: Map<string, RegisteredTable>,
  prior: (tableId: string, pkText: string) => Promise<{ row_source: SourceImage | null } | undefined>,
): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  for (const c of changed) {
    const rules = fault('capture-only-dependency-ignored') && c.table.membershipFunction === null ? [] : (c.table.impacts ?? []); // fault: server:capture-only-dependency-ignored
    if (rules.length === 0) continue;
    const oldImage = fault('impact-new-image-only') ? null : ((await prior(c.table.def.tableId, c.pkText))?.row_source ?? null); // fault: server:impact-new-image-only
    for (const rule of rules) {
      const target = tables.get(rule.targetTableId);
      if (target === undefined) throw new CaptureFailure('scope_evaluation_failed', 'a dependency names a table that is not registered', rule.targetTableId);
      const keys = await callImpact(db, rule, c.table, target, oldImage, c.image);
      const set = out.get(target.def.tableId) ?? new Set<string>();
      for (const k of keys) set.add(k);
      out.set(target.def.tableId, set);
    }
  }
  return out;
}

/**
 * Evaluates the impacted rows on the final projected state and writes the
 * edge diff: entering a scope is an upsert of the row's current projection
 * (a tombstone when it is soft-deleted), leaving is a rowless delete.
 * Rows the transaction changed itself were already evaluated, so their
 * diff is empty here. Effects sit after every changed row's effects of the
 * transaction, at its last event ordinal; the effect ordinals of that event
 * are then numbered from zero within each scope in the order (logical table
 * ID bytes, typed key identity bytes, operation rank), the changed row's own
 * effect included. Returns the number of effects written.
 */
export async function reevaluateImpacted(
  db: ClientBase,
  at: { generation: string; commit: string; eventOrdinal: number },
  impacted: Map<string, Set<string>>,
  tables: Map<string, RegisteredTable>,
  membership: (t: RegisteredTable, pkText: string) => Promise<string[]>,
): Promise<number> {
  let effectOrdinal = 0;
  for (const tableId of [...impacted.keys()].sort(utf8Order)) {
    const t = tables.get(tableId) as RegisteredTable;
    const def = t.def;
    const identityOf = (pkText: string) => Buffer.from(rowIdentityFromWire(tableId, def.pkFieldId, def.pkType, def.pkType === 'int' ? Number(pkText) : pkText));
    // Typed key order (2 before 10), which is the order of the identity bytes, not of the key text.
    for (const pkText of [...(impacted.get(tableId) as Set<string>)].sort((a, b) => Buffer.compare(identityOf(a), identityOf(b)))) {
      const { rows } = await db.query<{ row_wire: Record<string, unknown> | null; server_version: string; deleted: boolean }>(
        'SELECT row_wire, server_version, deleted FROM synchro.projections WHERE table_id = $1 AND pk_text = $2 AND row_source IS NOT NULL',
        [tableId, pkText],
      );
      const p = rows[0];
      if (p === undefined || p.row_wire === null) continue; // not (or no longer) a row of the target
      const before = (await db.query<{ scope_id: string }>('SELECT scope_id FROM synchro.membership_edges WHERE table_id = $1 AND pk_text = $2', [tableId, pkText])).rows.map((r) => r.scope_id);
      const after = await membership(t, pkText);
      const entering = after.filter((s) => !before.includes(s));
      const leaving = before.filter((s) => !after.includes(s)).sort(utf8Order);
      if (entering.length === 0 && leaving.length === 0) continue;
      const identity = identityOf(pkText);
      const effect = async (scope: string, op: 'upsert' | 'delete', wire: Record<string, unknown> | null) => {
        effectOrdinal++;
        await supersede(db, at.generation, [{ scope_id: scope, table_id: tableId, pk_bytes: identity.toString('hex') }]);
        await db.query(
          `INSERT INTO synchro.scope_effects (scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal, table_id, pk_text, pk_bytes, op_rank, op, server_version, row_wire)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
          [scope, at.generation, at.commit, at.eventOrdinal, PROVISIONAL_ORDINAL + effectOrdinal, tableId, pkText, identity, op === 'upsert' ? 1 : 0, op, p.server_version, wire === null ? null : JSON.stringify(wire)],
        );
      };
      for (const scope of entering) {
        await effect(scope, p.deleted ? 'delete' : 'upsert', p.row_wire);
        if (!p.deleted) {
          await db.query(
            `INSERT INTO synchro.scope_rows (scope_id, table_id, pk_bytes, pk_text, row_wire, server_version) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (scope_id, table_id, pk_bytes) DO UPDATE SET row_wire = excluded.row_wire, server_version = excluded.server_version`,
            [scope, tableId, identity, pkText, JSON.stringify(p.row_wire), p.server_version],
          );
        }
        await db.query('INSERT INTO synchro.membership_edges VALUES ($1, $2, $3)', [tableId, pkText, scope]);
      }
      for (const scope of leaving) {
        await effect(scope, 'delete', null);
        await db.query('DELETE FROM synchro.scope_rows WHERE scope_id = $1 AND table_id = $2 AND pk_bytes = $3', [scope, tableId, identity]);
        await db.query('DELETE FROM synchro.membership_edges WHERE table_id = $1 AND pk_text = $2 AND scope_id = $3', [tableId, pkText, scope]);
      }
    }
  }
  if (effectOrdinal > 0) await numberEffectsOfEvent(db, at);
  return effectOrdinal;
}

/** Impact effects are written above every ordinal an event's own effects use, then numbered in place. */
const PROVISIONAL_ORDINAL = 500_000_000;

/**
 * Gives the effects of one event their final ordinals: zero-based within
 * each scope, in (logical table ID bytes, key identity bytes, operation
 * rank) order. The own effects are first moved out of the way, so no
 * intermediate row collides with another's position.
 */
async function numberEffectsOfEvent(db: ClientBase, at: { generation: string; commit: string; eventOrdinal: number }): Promise<void> {
  const params = [at.generation, at.commit, at.eventOrdinal];
  await db.query(
    `UPDATE synchro.scope_effects SET effect_ordinal = effect_ordinal + ${2 * PROVISIONAL_ORDINAL}
      WHERE stream_generation = $1 AND commit_lsn = $2::pg_lsn AND event_ordinal = $3 AND effect_ordinal < ${PROVISIONAL_ORDINAL}`,
    params,
  );
  await db.query(
    `UPDATE synchro.scope_effects e SET effect_ordinal = n.ordinal
       FROM (SELECT scope_id, effect_ordinal AS provisional,
                    row_number() OVER (PARTITION BY scope_id ORDER BY table_id COLLATE "C", ${fault('effect-order-by-key-text') ? 'pk_text COLLATE "C"' : 'pk_bytes'}, op_rank) - 1 AS ordinal -- // fault: server:effect-order-by-key-text
               FROM synchro.scope_effects WHERE stream_generation = $1 AND commit_lsn = $2::pg_lsn AND event_ordinal = $3) n
      WHERE e.stream_generation = $1 AND e.commit_lsn = $2::pg_lsn AND e.event_ordinal = $3
        AND e.scope_id = n.scope_id AND e.effect_ordinal = n.provisional`,
    params,
  );
}
