/**
 * Schema installation through a durable journal. The target manifest and a
 * typed plan are committed before any DDL runs; the DDL and the phase change
 * commit together, so a restart never repeats DDL; the final step switches
 * schema metadata, cursors and rebuild markers at once. A restart finishes a
 * journalled migration from the database alone, without the network.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../../harness/codec/index.ts';
import type { SchemaManifest } from '../../../harness/wire/generated.ts';
import { markRebuild } from '../apply/scopes.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { durably, emit } from '../events.ts';
import { type LocalSchema, localSchema, quoteIdent as q, sqliteType, verifyManifest } from '../local/manifest.ts';
import { getMeta, setMeta } from '../local/metadata.ts';
import { triggerDdl, triggerNames } from '../local/triggers.ts';

export interface PlanStep {
  kind: 'create_table' | 'add_column' | 'drop_trigger' | 'create_trigger';
  sql: string;
}

export interface MigrationPlan {
  steps: PlanStep[];
  /** Scopes whose cursor is replaced (null = rebuild) when the migration completes. */
  cursorUpdates: Record<string, string | null>;
  rebuildScopes: string[];
}

function tableExists(ctx: Ctx, name: string): boolean {
  return ctx.db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE`).get(name) !== undefined;
}

function columnsOf(ctx: Ctx, name: string): Set<string> {
  const rows = ctx.db.prepare(`SELECT name FROM pragma_table_info(?)`).all(name) as { name: string }[];
  return new Set(rows.map((r) => r.name.toLowerCase()));
}

/** The DDL that turns the current local tables into the target schema's tables. */
export function planMigration(ctx: Ctx, target: LocalSchema, cursorUpdates: Record<string, string | null> = {}, rebuildScopes: string[] = []): MigrationPlan {
  const steps: PlanStep[] = [];
  for (const table of ctx.schema?.tables ?? []) {
    for (const name of triggerNames(table)) steps.push({ kind: 'drop_trigger', sql: `DROP TRIGGER IF EXISTS ${q(name)}` });
  }
  for (const table of target.tables) {
    if (!tableExists(ctx, table.name)) {
      const cols = table.columns.map((c) => `${q(c.name)} ${sqliteType(c.type)}${c.fieldId === table.pk.fieldId ? ' PRIMARY KEY NOT NULL' : ''}`);
      steps.push({ kind: 'create_table', sql: `CREATE TABLE ${q(table.name)} (${cols.join(', ')})` });
    } else {
      const have = columnsOf(ctx, table.name);
      for (const c of table.columns) {
        if (!have.has(c.name.toLowerCase())) steps.push({ kind: 'add_column', sql: `ALTER TABLE ${q(table.name)} ADD COLUMN ${q(c.name)} ${sqliteType(c.type)}` });
      }
    }
    for (const name of triggerNames(table)) steps.push({ kind: 'drop_trigger', sql: `DROP TRIGGER IF EXISTS ${q(name)}` });
    for (const sql of triggerDdl(table)) steps.push({ kind: 'create_trigger', sql });
  }
  return { steps, cursorUpdates, rebuildScopes };
}

function planHash(plan: MigrationPlan): string {
  return createHash('sha256').update(canonicalJson(plan)).digest('hex');
}

/** Journals, runs and completes a migration to `manifest` (already verified). */
export function migrate(ctx: Ctx, manifest: SchemaManifest, cursorUpdates: Record<string, string | null> = {}, rebuildScopes: string[] = []): void {
  const target = localSchema(manifest);
  const plan = planMigration(ctx, target, cursorUpdates, rebuildScopes);
  ctx.db
    .prepare(
      `INSERT INTO _synchro_migration_journal(id, source_version, source_hash, target_manifest_json, plan_json, plan_hash, phase) VALUES (1, ?, ?, ?, ?, ?, 'prepared')`,
    )
    .run(Number(getMeta(ctx.db, 'schema_version') ?? 0), getMeta(ctx.db, 'schema_hash') ?? '', JSON.stringify(manifest), JSON.stringify(plan), planHash(plan));
  emit(ctx, { kind: 'schema_applying', version: manifest.schema_version, hash: manifest.schema_hash, resumed: false });
  ctx.crash('migration_prepared');
  resumeMigration(ctx, true);
}

interface JournalRow {
  target_manifest_json: string;
  plan_json: string;
  plan_hash: string;
  phase: 'prepared' | 'ddl_applied';
}

/**
 * Finishes a journalled migration, if one is pending. Returns whether one was.
 * `announced` says the caller already raised `schema_applying` for it; a
 * journal found on opening is announced here, as resumed.
 */
export function resumeMigration(ctx: Ctx, announced = false): boolean {
  const row = ctx.db.prepare('SELECT target_manifest_json, plan_json, plan_hash, phase FROM _synchro_migration_journal WHERE id = 1').get() as JournalRow | undefined;
  if (row === undefined) return false;
  let manifest: SchemaManifest;
  let plan: MigrationPlan;
  try {
    manifest = verifyManifest(JSON.parse(row.target_manifest_json));
    plan = JSON.parse(row.plan_json) as MigrationPlan;
  } catch (e) {
    throw new ClientError('schema', 'migration_journal_inconsistent', `the migration journal cannot be read: ${(e as Error).message}`, false, 'schema_reset');
  }
  if (planHash(plan) !== row.plan_hash) {
    throw new ClientError('schema', 'migration_journal_inconsistent', 'the journalled plan does not match its hash', false, 'schema_reset');
  }
  if (!announced) emit(ctx, { kind: 'schema_applying', version: manifest.schema_version, hash: manifest.schema_hash, resumed: true });
  if (row.phase === 'prepared') {
    ctx.db.transaction(() => {
      for (const step of plan.steps) ctx.db.exec(step.sql);
      ctx.db.prepare(`UPDATE _synchro_migration_journal SET phase = 'ddl_applied' WHERE id = 1`).run();
    })();
    ctx.crash('migration_ddl_applied');
  }
  // The in-memory schema switches inside the unit, so listeners hear schema_applied only once it is in use.
  durably(ctx, () => {
    ctx.db.transaction(() => {
      ctx.db.prepare('INSERT OR IGNORE INTO _synchro_schema_archives(schema_version, schema_hash, manifest_json) VALUES (?, ?, ?)').run(manifest.schema_version, manifest.schema_hash, JSON.stringify(manifest));
      setMeta(ctx.db, 'schema_version', manifest.schema_version);
      setMeta(ctx.db, 'schema_hash', manifest.schema_hash);
      for (const [scope, cursor] of Object.entries(plan.cursorUpdates)) {
        const before = ctx.db.prepare('SELECT rebuild_required FROM _synchro_scopes WHERE scope_id = ?').get(scope) as { rebuild_required: number } | undefined;
        ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ?, rebuild_required = ? WHERE scope_id = ?').run(cursor, cursor === null ? 1 : 0, scope);
        if (cursor === null && before?.rebuild_required === 0) emit(ctx, { kind: 'rebuild_requested', scopeID: scope });
      }
      for (const scope of plan.rebuildScopes) markRebuild(ctx, scope);
      ctx.db.prepare('DELETE FROM _synchro_migration_journal WHERE id = 1').run();
      emit(ctx, { kind: 'schema_applied', version: manifest.schema_version, hash: manifest.schema_hash });
    })();
    ctx.schema = localSchema(manifest);
  });
  return true;
}

/** The installed schema, from the archive row that metadata points at. */
export function loadInstalledSchema(ctx: Ctx): LocalSchema | undefined {
  const version = Number(getMeta(ctx.db, 'schema_version') ?? 0);
  const hash = getMeta(ctx.db, 'schema_hash') ?? '';
  if (version === 0) return undefined;
  const row = ctx.db.prepare('SELECT manifest_json FROM _synchro_schema_archives WHERE schema_version = ? AND schema_hash = ?').get(version, hash) as { manifest_json: string } | undefined;
  if (row === undefined) throw new ClientError('opening', 'schema_metadata_inconsistent', `schema ${version}/${hash} has no archived manifest`, false, 'schema_reset');
  return localSchema(verifyManifest(JSON.parse(row.manifest_json)));
}
