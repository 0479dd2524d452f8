/**
 * Push units: one mutation of a non-atomic request, or the whole group of an
 * atomic one, each inside its own subtransaction with deferrable constraints
 * deferred and checked at the unit's end. Row work is compare-and-swap under
 * row locks: lock the source row and the fence, compare, then write; the
 * fence trigger allocates the new version.
 */
import { createHash } from 'node:crypto';
import type { PoolClient, QueryResult } from 'pg';
import type { SchemaRef } from '../../../harness/wire/index.ts';
import { integrityFailure } from '../core/errors.ts';
import { fault } from '../core/faults.ts';
import type { Catalog } from '../core/manifests.ts';
import { toParameter } from '../core/rows.ts';
import { quoteIdent, type TableDef } from '../core/tables.ts';
import { touchesKeyColumn } from './lock-mode.ts';
import { joinedStateRead, keyPredicate, type RowState, readState, readStateAfter, rowWithChecksum, stateFromJoinedRead } from './row-state.ts';
import type { Mutation } from './validate.ts';

export type Outcome = Record<string, unknown>;

const MESSAGES: Record<string, string> = {
  version_conflict: 'base version does not match the current row',
  row_already_exists: 'row already exists',
  row_deleted: 'row has been deleted',
  row_not_found: 'row does not exist',
  validation_failed: 'mutation failed validation',
  policy_rejected: 'write policy rejected the mutation',
  table_not_synced: 'table is not synced',
  schema_incompatible: 'authored mutation cannot be represented by the current schema',
  atomic_batch_rejected: 'atomic batch rejected',
};

export interface UnitContext {
  db: PoolClient;
  catalog: Catalog;
  schema: SchemaRef;
}

type Evaluation =
  | { kind: 'applied'; table: TableDef }
  | { kind: 'rejected'; outcome: Outcome; conflict?: { table: TableDef; code: string } };

function head(m: Mutation, schema: SchemaRef): Outcome {
  return { mutation_id: m.mutation_id, table: m.table, pk: m.pk, outcome_schema: { version: schema.version, hash: schema.hash } };
}

function terminal(m: Mutation, ctx: UnitContext, code: string): Outcome {
  return { ...head(m, ctx.schema), status: 'rejected_terminal', code, message: MESSAGES[code] };
}

function conflict(m: Mutation, ctx: UnitContext, table: TableDef, code: string, state: RowState): Outcome {
  const o: Outcome = { ...head(m, ctx.schema), status: 'conflict', code, message: MESSAGES[code] };
  if (code === 'row_not_found' || state.fence === undefined || state.fence.state === 'reserved') return o;
  if (state.row !== undefined) Object.assign(o, rowWithChecksum(table, ctx.schema.hash, state.row, state.fence.version));
  o.server_version = state.fence.version;
  return o;
}

const isDataOrIntegrity = (e: unknown) => {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
};

function columnsOf(m: Mutation): Record<string, unknown> {
  return 'columns' in m ? (m.columns as Record<string, unknown>) : {};
}

/** Terminal classification in the required order, before any row is touched. */
type Classified = { outcome?: Outcome; table?: TableDef; params?: Array<[string, unknown]> };

function classify(m: Mutation, ctx: UnitContext): Classified {
  const current = ctx.catalog.current;
  const table = ctx.catalog.tables.get(m.table);
  const isCurrent = m.authored_schema.version === current.version && m.authored_schema.hash === current.hash;
  const fields = Object.keys(columnsOf(m));
  if (!isCurrent) {
    const authored = ctx.catalog.history.get(m.authored_schema.version);
    const known = authored !== undefined && authored.hash === m.authored_schema.hash;
    const authoredHasTable = known && (authored.body.tables as Array<{ table_id: string }>).some((t) => t.table_id === m.table);
    const bad = fields.filter((id) => table === undefined || table.byId.get(id)?.writable !== true);
    if (table !== undefined && fault('strip-incompatible-fields')) for (const id of bad.splice(0)) delete (m as { columns: Record<string, unknown> }).columns[id]; // fault: server:strip-incompatible-fields
    if ((table === undefined && authoredHasTable) || (table !== undefined && bad.length > 0)) {
      return {
        outcome: {
          ...terminal(m, ctx, 'schema_incompatible'),
          retryable: false,
          authored_schema: { version: m.authored_schema.version, hash: m.authored_schema.hash },
          current_schema: { version: current.version, hash: current.hash },
          incompatible_field_ids: [...new Set(bad)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
        },
      };
    }
  }
  if (table === undefined) return { outcome: terminal(m, ctx, 'table_not_synced') };
  if (table.pushPolicy !== 'enabled') return { outcome: terminal(m, ctx, 'policy_rejected') };
  const params: Array<[string, unknown]> = [];
  for (const [id, value] of Object.entries(columnsOf(m))) {
    const f = table.byId.get(id);
    if (f === undefined && fault('ignore-unknown-fields')) continue; // fault: server:ignore-unknown-fields
    if (id === table.pkFieldId && fault('cap010-key-field-dropped-from-patch')) continue; // fault: server:cap010-key-field-dropped-from-patch
    if (f === undefined || !f.writable) return { outcome: terminal(m, ctx, 'validation_failed') };
    try {
      params.push([f.column, toParameter(f, value)]);
    } catch {
      return { outcome: terminal(m, ctx, 'validation_failed') };
    }
  }
  return { table, params };
}

function pkValue(m: Mutation): string {
  return String(Object.values(m.pk)[0]);
}

async function insertRow(ctx: UnitContext, m: Mutation, table: TableDef, params: Array<[string, unknown]>, opening: string): Promise<Evaluation> {
  const pkSql = table.byId.get(table.pkFieldId)?.sqlType ?? 'text';
  // Literals (the table ID and the key, escaped) let the reservation share one round trip with the unit's opening statements.
  const tableId = ctx.db.escapeLiteral(table.tableId);
  const key = `to_jsonb(${ctx.db.escapeLiteral(pkValue(m))}::${pkSql}) #>> '{}'`;
  // Reserve the identity first: a concurrent insert of the same key waits here, then finds it taken.
  const reserve = `INSERT INTO synchro.row_versions (table_id, pk_text, state, server_version) VALUES (${tableId}, ${key}, 'reserved', 'reserved')
     ON CONFLICT DO NOTHING`;
  const reserved = lastResult(await ctx.db.query(`${opening}${fault('unreserved-insert') ? `SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM synchro.row_versions WHERE table_id = ${tableId} AND pk_text = ${key})` : reserve}`)); // fault: server:unreserved-insert
  if (reserved.rowCount === 0) {
    const state = await readState(ctx.db, table, pkValue(m), 'NO KEY UPDATE');
    const code = state.fence?.state === 'deleted' ? 'row_deleted' : 'row_already_exists';
    return { kind: 'rejected', outcome: conflict(m, ctx, table, code, state), conflict: { table, code } };
  }
  const cols = [quoteIdent(table.pkColumn), ...params.map(([c]) => quoteIdent(c))];
  const values = [pkValue(m), ...params.map(([, v]) => v)];
  const exprs = cols.map((_, k) => `$${k + 1}`);
  if (table.updatedAtColumn !== null) {
    cols.push(quoteIdent(table.updatedAtColumn));
    exprs.push('now()');
  }
  const done = await ctx.db.query(`INSERT INTO ${table.qualified} (${cols.join(', ')}) VALUES (${exprs.join(', ')})`, values);
  // A BEFORE trigger (or row security) swallowed the row: nothing was written.
  if (done.rowCount === 0) return { kind: 'rejected', outcome: terminal(m, ctx, 'policy_rejected') };
  if (fault('push-writes-projection')) await ctx.db.query("INSERT INTO synchro.projections (table_id, pk_text, server_version, deleted, commit_lsn, event_ordinal) SELECT table_id, pk_text, server_version, false, pg_current_wal_insert_lsn(), 0 FROM synchro.row_versions WHERE table_id = $1 AND pk_text = $2 ON CONFLICT (table_id, pk_text) DO UPDATE SET server_version = excluded.server_version", [table.tableId, pkValue(m)]); // fault: server:push-writes-projection
  return { kind: 'applied', table };
}

async function changeRow(ctx: UnitContext, m: Mutation, table: TableDef, params: Array<[string, unknown]>, opening: string): Promise<Evaluation> {
  await ctx.db.query(opening);
  if (m.op === 'delete' && fault('bound004-delete-needs-own-endpoint')) return { kind: 'rejected', outcome: terminal(m, ctx, 'policy_rejected') }; // fault: server:bound004-delete-needs-own-endpoint
  const soft = m.op === 'delete' && table.deletedAtColumn !== null;
  const assigned = m.op === 'update' ? params.map(([c]) => c) : soft ? [table.deletedAtColumn as string] : [];
  if (table.updatedAtColumn !== null && m.op !== 'delete') assigned.push(table.updatedAtColumn);
  if (soft && table.updatedAtColumn !== null) assigned.push(table.updatedAtColumn);
  // The first lock matches what the write itself would take, so it never has to be upgraded.
  const keyTouched = m.op === 'delete' && !soft ? true : fault('cached-key-columns') ? assigned.some((c) => table.keyColumns.has(c)) : await touchesKeyColumn(ctx.db, table, pkValue(m), assigned); // fault: server:cached-key-columns
  const state = await readState(ctx.db, table, pkValue(m), fault('unlocked-version-check') ? undefined : keyTouched ? 'UPDATE' : 'NO KEY UPDATE'); // fault: server:unlocked-version-check
  if (state.fence === undefined || state.fence.state === 'reserved') {
    if (state.row !== undefined) throw integrityFailure();
    if (m.op === 'update' && fault('update-missing-inserts')) return await insertRow(ctx, m, table, params, ''); // fault: server:update-missing-inserts
    return { kind: 'rejected', outcome: conflict(m, ctx, table, 'row_not_found', state), conflict: { table, code: 'row_not_found' } };
  }
  if (state.fence.state === 'deleted') {
    return { kind: 'rejected', outcome: conflict(m, ctx, table, 'row_deleted', state), conflict: { table, code: 'row_deleted' } };
  }
  if (state.row === undefined) throw integrityFailure();
  const base = 'base_version' in m ? m.base_version : undefined;
  const stale = fault('loose-version-compare') ? base?.trim().toLowerCase() !== state.fence.version.toLowerCase() : base !== state.fence.version; // fault: server:loose-version-compare
  if (stale && !fault('ignore-base-version')) { // fault: server:ignore-base-version
    return { kind: 'rejected', outcome: conflict(m, ctx, table, 'version_conflict', state), conflict: { table, code: 'version_conflict' } };
  }
  if (m.op === 'update' && fault('skip-unchanged-update') && Object.entries(columnsOf(m)).every(([id, v]) => state.row?.[id] === v)) return { kind: 'applied', table }; // fault: server:skip-unchanged-update
  let done: { rowCount: number | null };
  if (m.op === 'delete' && !soft) {
    done = await ctx.db.query(`DELETE FROM ${table.qualified} WHERE ${keyPredicate(table, 1)}`, [pkValue(m)]);
  } else {
    const sets: string[] = [];
    const values: unknown[] = [pkValue(m)];
    for (const [c, v] of params) {
      values.push(v);
      sets.push(`${quoteIdent(c)} = $${values.length}`);
    }
    if (soft) sets.push(`${quoteIdent(table.deletedAtColumn as string)} = now()`);
    if (table.updatedAtColumn !== null) sets.push(`${quoteIdent(table.updatedAtColumn)} = ${fault('updated-at-from-client-version') ? `'${m.client_version}'::timestamptz` : 'now()'}`); // fault: server:updated-at-from-client-version
    done = await ctx.db.query(`UPDATE ${table.qualified} SET ${sets.join(', ')} WHERE ${keyPredicate(table, 1)}`, values);
  }
  if (done.rowCount === 0) return { kind: 'rejected', outcome: terminal(m, ctx, 'policy_rejected') };
  return { kind: 'applied', table };
}

/**
 * Evaluates a classified mutation. `before` is SQL the caller needs run first
 * (a unit's savepoint), sent in the same round trip as the mutation's first
 * statements.
 */
async function evaluateClassified(ctx: UnitContext, m: Mutation, c: Classified, before = ''): Promise<Evaluation> {
  if (c.outcome !== undefined) return { kind: 'rejected', outcome: c.outcome };
  const table = c.table as TableDef;
  // Fences written by this mutation carry its ID.
  const opening = `${before}${owner(m.mutation_id)}; `;
  return m.op === 'insert' ? await insertRow(ctx, m, table, c.params ?? [], opening) : await changeRow(ctx, m, table, c.params ?? [], opening);
}

async function evaluate(ctx: UnitContext, m: Mutation): Promise<Evaluation> {
  return await evaluateClassified(ctx, m, classify(m, ctx));
}

/** The result of a statement's last part (a multi-statement query answers with one result per statement). */
function lastResult(r: QueryResult | QueryResult[]): QueryResult {
  return Array.isArray(r) ? (r.at(-1) as QueryResult) : r;
}

/** The applied outcome shows the row and version as they are after the unit. */
async function appliedOutcome(ctx: UnitContext, m: Mutation, table: TableDef): Promise<Outcome> {
  return appliedFrom(m, ctx, table, await readState(ctx.db, table, pkValue(m)));
}

function appliedFrom(m: Mutation, ctx: UnitContext, table: TableDef, state: RowState): Outcome {
  if (state.fence === undefined || state.fence.state === 'reserved') throw integrityFailure();
  const o: Outcome = { ...head(m, ctx.schema), status: 'applied' };
  if (state.row !== undefined) Object.assign(o, rowWithChecksum(table, ctx.schema.hash, state.row, state.fence.version));
  o.server_version = state.fence.version;
  return o;
}

/**
 * The statement that makes `mutationId` the owner of the fences written next.
 * The ID passed the UUID pattern of the wire schema, so it is safe as a literal,
 * which lets it share a round trip with the statements around it.
 */
function owner(mutationId: string): string {
  if (!/^[0-9a-f-]{36}$/.test(mutationId)) throw new Error('mutation_id is not a validated UUID');
  return `SELECT set_config('synchro.mutation_id', '${mutationId}', true)`;
}

/** End of a unit: deferred constraints and triggers fire now, owned by the unit's last mutation. */
async function unitEnd(ctx: UnitContext, lastId: string, release: string): Promise<void> {
  await ctx.db.query(unitEndSql(lastId, release));
}

function unitEndSql(lastId: string, release: string): string {
  return unitEndStatements(lastId, release).join('; ');
}

/** `ownerSet`: the unit's opening already made `lastId` the owner (a unit of one mutation), so it is not set again. */
function unitEndStatements(lastId: string, release: string, ownerSet = false): string[] {
  return [...(ownerSet ? [] : [owner(lastId)]), ...(fault('unit-check-at-commit') ? [] : ['SET CONSTRAINTS ALL IMMEDIATE']), `RELEASE SAVEPOINT ${release}`]; // fault: server:unit-check-at-commit
}

export async function runNonAtomic(ctx: UnitContext, mutations: Mutation[]): Promise<Outcome[]> {
  // Classification touches no row and depends on nothing a unit writes, so it can run first for all.
  const units = mutations.map((m) => ({ m, c: classify(m, ctx) }));
  const pipelined = insertPipelineAvailable();
  const out: Outcome[] = [];
  for (let k = 0; k < units.length; ) {
    const { m, c } = units[k] as ClassifiedUnit;
    // A mutation classification rejects needs no unit (a savepoint rolled straight back changes nothing).
    if (c.outcome !== undefined) {
      out.push(c.outcome);
      k++;
      continue;
    }
    if (pipelined && pipelinable(units[k] as ClassifiedUnit)) {
      let end = k + 1;
      while (end < units.length && end - k < PIPELINE_UNITS && pipelinable(units[end] as ClassifiedUnit)) end++;
      out.push(...(await runInsertRun(ctx, units.slice(k, end))));
      k = end;
      continue;
    }
    out.push(await runUnit(ctx, m, c));
    k++;
  }
  return out;
}

/** One non-atomic unit on its own: three round trips for an insert, more for an update or delete. */
async function runUnit(ctx: UnitContext, m: Mutation, c: Classified): Promise<Outcome> {
  try {
    const r = await evaluateClassified(ctx, m, c, 'SAVEPOINT unit; SET CONSTRAINTS ALL DEFERRED; ');
    if (r.kind === 'rejected') {
      await ctx.db.query('ROLLBACK TO SAVEPOINT unit; RELEASE SAVEPOINT unit');
      return r.outcome;
    }
    const early = fault('outcome-before-unit-end') ? await appliedOutcome(ctx, m, r.table) : undefined; // fault: server:outcome-before-unit-end
    const commitEachUnit = fault('commit-each-unit'); // fault: server:commit-each-unit
    if (early !== undefined || commitEachUnit) {
      await unitEnd(ctx, m.mutation_id, 'unit');
      if (commitEachUnit) await ctx.db.query("COMMIT; BEGIN; SET LOCAL ROLE synchro_owner; SET LOCAL lock_timeout = '5s'");
      return early ?? (await appliedOutcome(ctx, m, r.table));
    }
    // The unit's end and the read of its applied outcome share a round trip.
    return appliedFrom(m, ctx, r.table, await readStateAfter(ctx.db, r.table, pkValue(m), unitEndSql(m.mutation_id, 'unit')));
  } catch (e) {
    if (!isDataOrIntegrity(e)) throw e;
    await ctx.db.query('ROLLBACK TO SAVEPOINT unit; RELEASE SAVEPOINT unit');
    return terminal(m, ctx, 'validation_failed');
  }
}

interface ClassifiedUnit {
  m: Mutation;
  c: Classified;
}

/** Insert units sent in one round trip at most (the query text grows with them). */
const PIPELINE_UNITS = 100;

/**
 * The switches (each marked where it acts, in insertRow and runUnit) that
 * change the insert unit's path: while one is on, units go one by one on
 * that path, so the switch keeps its effect.
 */
const INSERT_UNIT_SWITCHES = ['unreserved-insert', 'push-writes-projection', 'outcome-before-unit-end', 'commit-each-unit'] as const;

/**
 * An insert the pipeline can carry: every value it puts in the run's query as
 * a literal (literal below) can be written there. escapeLiteral makes any
 * string a literal except one holding U+0000, which ends the query text of
 * the simple protocol (the robustness profile found the 503 it gave, seed
 * 1924652600); such an insert is decided alone on runUnit's parameterized
 * path, where PostgreSQL refuses the value as data (validation_failed), the
 * same outcome it has there in any push.
 */
function pipelinable(u: ClassifiedUnit): boolean {
  if (u.m.op !== 'insert' || u.c.outcome !== undefined) return false;
  if (!literalSafe(pkValue(u.m))) return false;
  for (const [, v] of u.c.params ?? []) if (!literalSafe(v)) return false;
  return true;
}

/** Whether literal() can carry this value in query text: bytes and null always can, text unless it holds U+0000. */
function literalSafe(v: unknown): boolean {
  return typeof v !== 'string' || !v.includes('\u0000');
}

/** The insert pipeline is the unit path of runUnit, sent many units at a time. */
function insertPipelineAvailable(): boolean {
  return !INSERT_UNIT_SWITCHES.some((name) => fault(name));
}

/**
 * Consecutive insert units. Each runs as in runUnit: its own savepoint with
 * constraints deferred, the owner setting, the reservation, the source
 * insert, the deferred checks at the unit's end, then the unlocked read of
 * the applied outcome; but the units of the run go to the database in one
 * simple-protocol query (values as escaped literals, the statements that
 * carry them as EXECUTE of forms prepared on the session: decision 416),
 * inside a savepoint of the run's own. Only a unit that writes its row and fence goes through
 * there: when one does not (its key is taken, a trigger or policy swallowed
 * the row, a value or constraint fails), the query stops at it, the whole
 * run is rolled back, the units before it are sent again, and the failing
 * unit is decided by runUnit, exactly as when every unit went alone.
 */
async function runInsertRun(ctx: UnitContext, run: ClassifiedUnit[]): Promise<Outcome[]> {
  if (run.length === 0) return [];
  const first = await tryInsertPipeline(ctx, run);
  if (first.outcomes !== undefined) return first.outcomes;
  const failedAt = first.failedAt;
  const out: Outcome[] = [];
  const before = run.slice(0, failedAt);
  const again = before.length > 0 ? await tryInsertPipeline(ctx, before) : { outcomes: [] };
  if (again.outcomes !== undefined) out.push(...again.outcomes);
  else for (const u of before) out.push(await runUnit(ctx, u.m, u.c));
  if (failedAt < run.length) out.push(await runUnit(ctx, (run[failedAt] as ClassifiedUnit).m, (run[failedAt] as ClassifiedUnit).c));
  out.push(...(await runInsertRun(ctx, run.slice(failedAt + 1))));
  return out;
}

/** The run in one query: its outcomes, or (everything rolled back) the index of the unit it stopped at. */
async function tryInsertPipeline(ctx: UnitContext, run: ClassifiedUnit[]): Promise<{ outcomes: Outcome[]; failedAt?: undefined } | { outcomes?: undefined; failedAt: number }> {
  // Units of one relation with the same columns share their forms: each distinct one is written once per run.
  const byShape = new Map<string, InsertUnitForms>();
  const forms = run.map(({ c }) => {
    const table = c.table as TableDef;
    const params = c.params ?? [];
    const shape = [table.tableId, ...params.map(([column]) => column)].join('\u0000');
    let f = byShape.get(shape);
    if (f === undefined) {
      f = insertUnitForms(ctx, table, params, parameter);
      byShape.set(shape, f);
    }
    return f;
  });
  const names = await prepareForms(ctx.db, ctx.schema.hash, [...byShape.values()].flatMap((f) => [f.write, f.check, f.read]));
  const parts = run.map(({ m, c }, k) => insertUnitStatements(ctx, m, c.table as TableDef, c.params ?? [], forms[k] as InsertUnitForms, names));
  const text = ['SAVEPOINT run', ...parts.flat(), 'RELEASE SAVEPOINT run'].join(';\n');
  let results: QueryResult[];
  try {
    results = (await ctx.db.query(text)) as unknown as QueryResult[];
  } catch (e) {
    const failedAt = await stoppedAt(ctx, run, e);
    // A unit refused its values (the check, a constraint, a value): the forms are sound. Any other failure may be
    // a prepared form's (a plan that outlived a change of the relation): the next run prepares afresh.
    if (!isDataOrIntegrity(e)) await forgetPrepared(ctx.db);
    return { failedAt };
  }
  const outcomes: Outcome[] = [];
  let at = 1;
  for (const [k, { m, c }] of run.entries()) {
    at += (parts[k] as string[]).length;
    const table = c.table as TableDef;
    outcomes.push(appliedFrom(m, ctx, table, stateFromJoinedRead(table, results[at - 1] as QueryResult)));
  }
  return { outcomes };
}

/**
 * After the pipeline failed: which unit it stopped at, read before the run is
 * rolled back. A unit's owner setting is rolled back with its savepoint, so
 * the owner left is the one of the last unit released (none of this run's
 * when the first one failed).
 */
async function stoppedAt(ctx: UnitContext, run: ClassifiedUnit[], e: unknown): Promise<number> {
  let failedAt = 0;
  try {
    const r = lastResult(await ctx.db.query("ROLLBACK TO SAVEPOINT unit; RELEASE SAVEPOINT unit; SELECT current_setting('synchro.mutation_id', true) AS owner"));
    const owner = (r.rows[0] as { owner: string | null } | undefined)?.owner;
    failedAt = run.findIndex((u) => u.m.mutation_id === owner) + 1;
  } catch {
    // It failed outside a unit (between units): the run is redone unit by unit.
  }
  try {
    await ctx.db.query('ROLLBACK TO SAVEPOINT run; RELEASE SAVEPOINT run');
  } catch {
    throw e;
  }
  return failedAt;
}

/**
 * The three statements of an insert unit that carry the unit's values, the
 * n-th value of each written by `arg(statement, n)`: `$n` gives the
 * statement's form with parameters
 * (the same text for every unit of the relation with the same columns), a
 * literal gives the statement itself. The source insert takes its row from
 * the reservation, so it writes nothing when the key is taken (INSERT …
 * SELECT types its untyped values by the target columns, as the
 * parameterized insert does); the check after it fails the unit, by a
 * division by zero, unless the fence of the key was written by this mutation
 * in this transaction (not still reserved, not another writer's). The read
 * is that of joinedStateRead: the row and its fence in one statement.
 */
interface InsertUnitForms {
  /** Values: 1 the key, 2 the key as the source row's value, then each column value. */
  write: string;
  /** Values: 1 the key, 2 the mutation ID. */
  check: string;
  /** Value: 1 the key. */
  read: string;
}

type UnitStatement = keyof InsertUnitForms;

function insertUnitForms(ctx: UnitContext, table: TableDef, params: Array<[string, unknown]>, arg: (statement: UnitStatement, n: number) => string): InsertUnitForms {
  const pkSql = table.byId.get(table.pkFieldId)?.sqlType ?? 'text';
  const tableId = ctx.db.escapeLiteral(table.tableId);
  const key = (statement: UnitStatement) => `to_jsonb(${arg(statement, 1)}::${pkSql}) #>> '{}'`;
  const cols = [quoteIdent(table.pkColumn), ...params.map(([c]) => quoteIdent(c))];
  const exprs = cols.map((_, k) => arg('write', k + 2));
  if (table.updatedAtColumn !== null) {
    cols.push(quoteIdent(table.updatedAtColumn));
    exprs.push('now()');
  }
  return {
    write: `WITH reserved AS (INSERT INTO synchro.row_versions (table_id, pk_text, state, server_version) VALUES (${tableId}, ${key('write')}, 'reserved', 'reserved')
       ON CONFLICT DO NOTHING RETURNING 1)
     INSERT INTO ${table.qualified} (${cols.join(', ')}) SELECT ${exprs.join(', ')} FROM reserved`,
    check: `SELECT 1 / count(*) FROM synchro.row_versions WHERE table_id = ${tableId} AND pk_text = ${key('check')} AND state <> 'reserved'
       AND mutation_id = ${arg('check', 2)}::uuid AND fenced_xact = pg_current_xact_id()`,
    read: joinedStateRead(ctx.db, table, arg('read', 1)),
  };
}

const parameter = (_statement: UnitStatement, n: number) => `$${n}`;

/**
 * One insert unit as statements without parameters: a statement whose form
 * is prepared on this session runs as EXECUTE of it with the values as
 * literals (planned once per session, not once per unit), any other with the
 * literals written in. Either way the database runs the same statement on
 * the same values.
 */
function insertUnitStatements(ctx: UnitContext, m: Mutation, table: TableDef, params: Array<[string, unknown]>, forms: InsertUnitForms, names: Map<string, string>): string[] {
  const key = literal(ctx, pkValue(m));
  const values: Record<UnitStatement, string[]> = {
    write: [key, key, ...params.map(([, v]) => literal(ctx, v))],
    check: [key, ctx.db.escapeLiteral(m.mutation_id)],
    read: [key],
  };
  let written: InsertUnitForms | undefined;
  const statement = (part: UnitStatement) => {
    const name = names.get(forms[part]);
    if (name !== undefined) return `EXECUTE ${name}(${values[part].join(', ')})`;
    written ??= insertUnitForms(ctx, table, params, (s, n) => values[s][n - 1] as string);
    return written[part];
  };
  return [
    'SAVEPOINT unit',
    'SET CONSTRAINTS ALL DEFERRED',
    owner(m.mutation_id),
    statement('write'),
    statement('check'),
    ...unitEndStatements(m.mutation_id, 'unit', true),
    statement('read'),
  ];
}

/**
 * Prepared statement names on each session (the pool's, or a caller's), by
 * the form they were prepared from. A session keeps what it prepared until it
 * ends, whatever its transactions do, so the names are tracked here.
 */
const preparedBySession = new WeakMap<PoolClient, Map<string, string>>();

/** Forms prepared on one session at most; past that the others run with their values written in. */
const MAX_PREPARED_FORMS = 256;

/**
 * Prepares the forms not yet prepared on this session and answers the names
 * of those that are. A name hashes the form with the schema it was prepared
 * under, so a new schema (a column's type changed, say) never meets a plan
 * whose parameter types came from the old one. Preparing runs inside a
 * savepoint: a form the database refuses to prepare is simply run with its
 * values written in, where it meets the same refusal it meets in any push.
 */
async function prepareForms(db: PoolClient, schemaHash: string, forms: string[]): Promise<Map<string, string>> {
  let prepared = preparedBySession.get(db);
  if (prepared === undefined) {
    prepared = new Map();
    preparedBySession.set(db, prepared);
  }
  const wanted = new Map<string, string>();
  for (const form of forms) {
    if (prepared.has(form) || wanted.has(form)) continue;
    if (prepared.size + wanted.size >= MAX_PREPARED_FORMS) break;
    wanted.set(form, `synchro_push_${createHash('sha256').update(schemaHash).update('\0').update(form).digest('hex').slice(0, 32)}`);
  }
  if (wanted.size > 0) {
    const statements = [...wanted].map(([form, name]) => `PREPARE ${name} AS ${form}`);
    try {
      await db.query(['SAVEPOINT prepare', ...statements, 'RELEASE SAVEPOINT prepare'].join(';\n'));
      for (const [form, name] of wanted) prepared.set(form, name);
    } catch {
      await db.query('ROLLBACK TO SAVEPOINT prepare; RELEASE SAVEPOINT prepare');
      // PREPARE is not undone by the rollback: keep the names the statements before the refused one made.
      const made = await db.query<{ name: string }>('SELECT name FROM pg_prepared_statements WHERE name = ANY ($1::text[])', [[...wanted.values()]]);
      const names = new Set(made.rows.map((r) => r.name));
      for (const [form, name] of wanted) if (names.has(name)) prepared.set(form, name);
    }
  }
  return prepared;
}

/** Drops every statement this session prepared here; the next run prepares what it needs again. */
async function forgetPrepared(db: PoolClient): Promise<void> {
  const prepared = preparedBySession.get(db);
  if (prepared === undefined || prepared.size === 0) return;
  preparedBySession.delete(db);
  const made = await db.query<{ name: string }>('SELECT name FROM pg_prepared_statements WHERE name = ANY ($1::text[])', [[...prepared.values()]]);
  if (made.rows.length > 0) await db.query(made.rows.map((r) => `DEALLOCATE ${r.name}`).join('; '));
}

/** A parameter value (text, bytes or null, as toParameter makes them) as an untyped literal. */
function literal(ctx: UnitContext, v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (Buffer.isBuffer(v)) return `'\\x${v.toString('hex')}'`;
  return ctx.db.escapeLiteral(String(v));
}

/**
 * The conflict code committed state gives a mutation that failed inside a
 * rolled-back group. A group write (a cascaded delete, a trigger) may have
 * made the row look deleted or changed during evaluation; once it is rolled
 * back the outcome must not reveal it. When committed state alone would not
 * have failed the mutation, the code found inside the group stands.
 */
function committedConflictCode(m: Mutation, state: RowState, inGroup: string): string {
  const fence = state.fence;
  if (m.op === 'insert') {
    if (fence === undefined || fence.state === 'reserved') return inGroup;
    return fence.state === 'deleted' ? 'row_deleted' : 'row_already_exists';
  }
  if (fence === undefined || fence.state === 'reserved') return 'row_not_found';
  if (fence.state === 'deleted') return 'row_deleted';
  const base = 'base_version' in m ? m.base_version : undefined;
  return base !== fence.version ? 'version_conflict' : inGroup;
}

export async function runAtomic(ctx: UnitContext, mutations: Mutation[]): Promise<Outcome[]> {
  await ctx.db.query(fault('group-constraints-as-declared') ? 'SAVEPOINT grp' : 'SAVEPOINT grp; SET CONSTRAINTS ALL DEFERRED'); // fault: server:group-constraints-as-declared
  const applied: Array<{ m: Mutation; table: TableDef }> = [];
  let failing: { index: number; evaluation: Evaluation & { kind: 'rejected' } } | undefined;
  for (const [index, m] of mutations.entries()) {
    let r: Evaluation;
    try {
      r = await evaluate(ctx, m);
    } catch (e) {
      if (!isDataOrIntegrity(e)) throw e;
      r = { kind: 'rejected', outcome: terminal(m, ctx, 'validation_failed') };
    }
    if (r.kind === 'rejected') {
      failing = { index, evaluation: r };
      break;
    }
    applied.push({ m, table: r.table });
  }
  const last = mutations.at(-1) as Mutation;
  if (failing === undefined) {
    try {
      await unitEnd(ctx, (fault('unit-writes-owned-by-first') ? (mutations[0] as Mutation) : last).mutation_id, 'grp'); // fault: server:unit-writes-owned-by-first
    } catch (e) {
      if (!isDataOrIntegrity(e)) throw e;
      const blamed = fault('unit-end-failure-on-first') ? (mutations[0] as Mutation) : last; // fault: server:unit-end-failure-on-first
      failing = { index: mutations.indexOf(blamed), evaluation: { kind: 'rejected', outcome: terminal(blamed, ctx, 'validation_failed') } };
    }
  }
  if (failing === undefined) {
    const out: Outcome[] = [];
    for (const { m, table } of applied) out.push(await appliedOutcome(ctx, m, table));
    return out;
  }
  await ctx.db.query(fault('atomic-failure-keeps-writes') ? 'RELEASE SAVEPOINT grp' : 'ROLLBACK TO SAVEPOINT grp; RELEASE SAVEPOINT grp'); // fault: server:atomic-failure-keeps-writes
  let failed = failing.evaluation.outcome;
  const c = failing.evaluation.conflict;
  const failedMutation = mutations[failing.index] as Mutation;
  if (c !== undefined && !fault('atomic-conflict-from-group-state')) { // fault: server:atomic-conflict-from-group-state
    // The group's own writes are gone: describe the conflict from committed state, code included.
    const state = await readState(ctx.db, c.table, pkValue(failedMutation), 'NO KEY UPDATE');
    failed = conflict(failedMutation, ctx, c.table, committedConflictCode(failedMutation, state, c.code), state);
  }
  if (fault('atomic-siblings-copy-failure')) return mutations.map((m) => ({ ...failed, ...head(m, ctx.schema) })); // fault: server:atomic-siblings-copy-failure
  return mutations.map((m, k) => (k === failing.index ? failed : terminal(m, ctx, 'atomic_batch_rejected')));
}

