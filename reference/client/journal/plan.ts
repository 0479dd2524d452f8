/**
 * The typed local migration plan: what DDL turns the tables of one verified
 * manifest into those of the next. It is computed from the two manifests,
 * the schema action, its affected scopes and the physical columns found
 * before the change, and nothing else, so the same inputs always give the
 * same bytes. Steps carry names and portable types only; the SQL is rendered
 * when a step runs, so a journal can never smuggle a statement in.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../../harness/codec/index.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { type LocalSchema, type LocalTable, quoteIdent as q, sqliteType } from '../local/manifest.ts';
import { triggerDdl, triggerNames } from '../local/triggers.ts';

/** The name and version of the plan format; a journal in another format is refused. */
export const PLAN_FORMAT = 'synchro-local-migration/1';

const SQL_TYPES = ['INTEGER', 'REAL', 'BLOB', 'TEXT'] as const;
type SqlType = (typeof SQL_TYPES)[number];

export type PlanStep =
  | { kind: 'drop_triggers'; table: string }
  | { kind: 'create_table'; table: string; columns: { name: string; sqlType: SqlType; primaryKey: boolean }[] }
  | { kind: 'add_column'; table: string; column: string; sqlType: SqlType }
  | { kind: 'create_triggers'; table: string };

export interface SchemaRef {
  version: number;
  hash: string;
}

/** Column names of each table the plan touches (null: the table does not exist), before and after its DDL. */
export type PhysicalShape = Record<string, string[] | null>;

export interface MigrationPlan {
  format: string;
  source: SchemaRef;
  target: SchemaRef;
  action: string;
  affectedScopes: string[];
  steps: PlanStep[];
  physical: { before: PhysicalShape; after: PhysicalShape };
}

/** Lower-cased, sorted column names of a table as SQLite has it now; null when it does not exist. */
export function physicalColumns(ctx: Ctx, table: string): string[] | null {
  const rows = ctx.db.prepare('SELECT name FROM pragma_table_info(?)').all(table) as { name: string }[];
  return rows.length === 0 ? null : rows.map((r) => r.name.toLowerCase()).sort();
}

export function physicalShape(ctx: Ctx, tables: readonly string[]): PhysicalShape {
  return Object.fromEntries(tables.map((t) => [t, physicalColumns(ctx, t)]));
}

/** Every table name either schema knows, lower-cased and sorted. */
function touchedTables(source: LocalSchema | undefined, target: LocalSchema): string[] {
  return [...new Set([...(source?.tables ?? []), ...target.tables].map((t) => t.name.toLowerCase()))].sort();
}

function stepsFor(source: LocalSchema | undefined, target: LocalSchema, before: PhysicalShape): PlanStep[] {
  const steps: PlanStep[] = [];
  for (const table of source?.tables ?? []) steps.push({ kind: 'drop_triggers', table: table.name });
  for (const table of target.tables) {
    const have = before[table.name.toLowerCase()] ?? null;
    if (have === null) {
      steps.push({ kind: 'create_table', table: table.name, columns: table.columns.map((c) => ({ name: c.name, sqlType: sqliteType(c.type) as SqlType, primaryKey: c.fieldId === table.pk.fieldId })) });
    } else {
      for (const c of table.columns) if (!have.includes(c.name.toLowerCase())) steps.push({ kind: 'add_column', table: table.name, column: c.name, sqlType: sqliteType(c.type) as SqlType });
    }
    steps.push({ kind: 'drop_triggers', table: table.name }, { kind: 'create_triggers', table: table.name });
  }
  return steps;
}

function shapeAfter(steps: readonly PlanStep[], before: PhysicalShape): PhysicalShape {
  const after: PhysicalShape = Object.fromEntries(Object.entries(before).map(([t, cols]) => [t, cols === null ? null : [...cols]]));
  for (const step of steps) {
    const key = step.table.toLowerCase();
    if (step.kind === 'create_table') after[key] = step.columns.map((c) => c.name.toLowerCase()).sort();
    if (step.kind === 'add_column') after[key] = [...(after[key] ?? []), step.column.toLowerCase()].sort();
  }
  return after;
}

/** The plan for the given inputs; `before` is the physical shape of every touched table. */
export function buildPlan(source: LocalSchema | undefined, target: LocalSchema, action: string, affectedScopes: readonly string[], before: PhysicalShape): MigrationPlan {
  const steps = stepsFor(source, target, before);
  return {
    format: PLAN_FORMAT,
    source: { version: source?.version ?? 0, hash: source?.hash ?? '' },
    target: { version: target.version, hash: target.hash },
    action,
    affectedScopes: [...affectedScopes].sort(),
    steps,
    physical: { before, after: shapeAfter(steps, before) },
  };
}

export function planTables(source: LocalSchema | undefined, target: LocalSchema): string[] {
  return touchedTables(source, target);
}

export function planHash(plan: MigrationPlan): string {
  return createHash('sha256').update(canonicalJson(plan)).digest('hex');
}

function inconsistent(message: string): ClientError {
  return new ClientError('schema', 'migration_journal_inconsistent', message, false, 'schema_reset');
}

const STEP_MEMBERS: Record<PlanStep['kind'], string[]> = {
  drop_triggers: ['kind', 'table'],
  create_table: ['columns', 'kind', 'table'],
  add_column: ['column', 'kind', 'sqlType', 'table'],
  create_triggers: ['kind', 'table'],
};

/** Refuses any step that is not exactly one of the typed kinds, naming a table of the target or source schema. */
export function checkStep(step: unknown, known: ReadonlySet<string>, index: number): asserts step is PlanStep {
  const record = step as Record<string, unknown> | null;
  const kind = record?.kind;
  const members = typeof kind === 'string' ? STEP_MEMBERS[kind as PlanStep['kind']] : undefined;
  if (record === null || typeof record !== 'object' || members === undefined) throw inconsistent(`plan step ${index} is not a typed step (kind ${JSON.stringify(kind)})`);
  const have = Object.keys(record).sort();
  if (have.join(',') !== members.join(',')) throw inconsistent(`plan step ${index} (${String(kind)}) has members ${have.join(', ')}, not ${members.join(', ')}`);
  if (typeof record.table !== 'string' || !known.has(record.table.toLowerCase())) throw inconsistent(`plan step ${index} names table ${JSON.stringify(record.table)}, which neither schema has`);
  if (kind === 'add_column' && (typeof record.column !== 'string' || !SQL_TYPES.includes(record.sqlType as SqlType))) throw inconsistent(`plan step ${index} adds a column without a name or a portable type`);
  if (kind === 'create_table') {
    const ok = Array.isArray(record.columns) && record.columns.every((c: Record<string, unknown>) => typeof c?.name === 'string' && SQL_TYPES.includes(c.sqlType as SqlType) && typeof c.primaryKey === 'boolean');
    if (!ok) throw inconsistent(`plan step ${index} creates a table with untyped columns`);
  }
}

/** Runs one typed step; the SQL is rendered here from names and types, and triggers from the target schema. */
export function runStep(ctx: Ctx, step: PlanStep, source: LocalSchema | undefined, target: LocalSchema): void {
  const table = (schema: LocalSchema | undefined): LocalTable | undefined => schema?.byName.get(step.table.toLowerCase());
  switch (step.kind) {
    case 'drop_triggers': {
      const of = table(source) ?? table(target);
      if (of !== undefined) for (const name of triggerNames(of)) ctx.db.exec(`DROP TRIGGER IF EXISTS ${q(name)}`);
      return;
    }
    case 'create_table':
      ctx.db.exec(`CREATE TABLE ${q(step.table)} (${step.columns.map((c) => `${q(c.name)} ${c.sqlType}${c.primaryKey ? ' PRIMARY KEY NOT NULL' : ''}`).join(', ')})`);
      return;
    case 'add_column':
      ctx.db.exec(`ALTER TABLE ${q(step.table)} ADD COLUMN ${q(step.column)} ${step.sqlType}`);
      return;
    case 'create_triggers': {
      const of = table(target);
      if (of === undefined) throw inconsistent(`the target schema has no table ${step.table} to capture`);
      for (const sql of triggerDdl(of)) ctx.db.exec(sql);
      return;
    }
  }
}
