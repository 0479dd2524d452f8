/**
 * Schema installation through a durable journal. Before any DDL the client
 * commits the complete verified target manifest and a typed plan bound to the
 * source and target references, the schema action, its affected scopes and a
 * phase. The DDL and its phase change commit together, so a restart never
 * repeats DDL; the next unit switches schema metadata, cursors and rebuild
 * markers at once; the journal says `completed` only once every affected
 * scope is rebuilt. A restart finishes a journalled migration from the
 * database alone, without the network, after checking that the journal, the
 * installed schema and the physical tables agree; anything else is an
 * explicit, non-retryable schema error that changes nothing.
 */
import type { SchemaManifest } from '../../../harness/wire/generated.ts';
import { markRebuild } from '../apply/scopes.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { durably, emit } from '../events.ts';
import { fault } from '../faults.ts';
import { type LocalSchema, localSchema, verifyManifest } from '../local/manifest.ts';
import { getMeta, setMeta } from '../local/metadata.ts';
import { buildPlan, checkStep, type MigrationPlan, PLAN_FORMAT, physicalShape, planHash, planTables, runStep } from './plan.ts';

/** prepared: journal written, no DDL yet; ddl_applied: DDL committed; applied: schema active, affected scopes still rebuilding; completed. */
export const PHASES = ['prepared', 'ddl_applied', 'applied', 'completed'] as const;
export type Phase = (typeof PHASES)[number];

export interface MigrationRequest {
  /** The connect's schema action (`replace`, `rebuild_local`), or `replace` for a bundled manifest. */
  action: string;
  affectedScopes: readonly string[];
  /** Scopes whose cursor is replaced (null = rebuild) when the schema switches. */
  cursorUpdates: Record<string, string | null>;
}

export interface JournalRow {
  source_version: number | null;
  source_hash: string | null;
  target_version: number | null;
  target_hash: string | null;
  target_manifest_json: string | null;
  action: string | null;
  affected_scopes_json: string | null;
  plan_format: string | null;
  plan_json: string | null;
  plan_hash: string | null;
  cursor_updates_json: string | null;
  phase: string | null;
  phase_history_json: string | null;
}

export function readJournalRow(ctx: Ctx): JournalRow | undefined {
  return ctx.db.prepare('SELECT * FROM _synchro_migration_journal WHERE id = 1').get() as JournalRow | undefined;
}

function inconsistent(message: string): ClientError {
  return new ClientError('schema', 'migration_journal_inconsistent', message, false, 'schema_reset');
}

function installedRef(ctx: Ctx): { version: number; hash: string } {
  return { version: Number(getMeta(ctx.db, 'schema_version') ?? 0), hash: getMeta(ctx.db, 'schema_hash') ?? '' };
}

/** Moves the journal to `phase`, appending it to the durable phase history (inside the caller's transaction). */
function enterPhase(ctx: Ctx, phase: Phase): void {
  const row = readJournalRow(ctx);
  const history = JSON.parse(row?.phase_history_json ?? '[]') as { phase: string; atMs: number }[];
  history.push({ phase, atMs: ctx.clock.now() });
  ctx.db.prepare('UPDATE _synchro_migration_journal SET phase = ?, phase_history_json = ? WHERE id = 1').run(phase, JSON.stringify(history));
}

/** Journals, runs and completes a migration to `manifest` (already verified). */
export function migrate(ctx: Ctx, manifest: SchemaManifest, request: MigrationRequest = { action: 'replace', affectedScopes: [], cursorUpdates: {} }): void {
  const target = localSchema(manifest);
  const source = ctx.schema;
  const plan = buildPlan(source, target, request.action, request.affectedScopes, physicalShape(ctx, planTables(source, target)));
  ctx.db.transaction(() => {
    ctx.db
      .prepare(
        `INSERT OR REPLACE INTO _synchro_migration_journal(id, source_version, source_hash, target_version, target_hash, target_manifest_json, action, affected_scopes_json, plan_format, plan_json, plan_hash, cursor_updates_json, phase, phase_history_json)
         VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'prepared', ?)`,
      )
      .run(
        plan.source.version,
        plan.source.hash,
        plan.target.version,
        plan.target.hash,
        fault('scope007-journal-reference-only') ? null : JSON.stringify(manifest), // fault: client:scope007-journal-reference-only
        plan.action,
        JSON.stringify(plan.affectedScopes),
        PLAN_FORMAT,
        JSON.stringify(plan),
        planHash(plan),
        JSON.stringify(request.cursorUpdates),
        JSON.stringify([{ phase: 'prepared', atMs: ctx.clock.now() }]),
      );
    if (fault('scope007-activate-before-ddl')) for (const [key, value] of [['schema_version', manifest.schema_version], ['schema_hash', manifest.schema_hash]] as const) setMeta(ctx.db, key, value); // fault: client:scope007-activate-before-ddl
  })();
  emit(ctx, { kind: 'schema_applying', version: manifest.schema_version, hash: manifest.schema_hash, resumed: false });
  ctx.crash('migration_prepared');
  // This process still holds the verified inputs it journalled; only a restart has to read them back and check them.
  runMigration(ctx, { phase: 'prepared', manifest, plan, cursorUpdates: request.cursorUpdates }, true);
}

interface CheckedJournal {
  phase: Phase;
  manifest: SchemaManifest;
  plan: MigrationPlan;
  cursorUpdates: Record<string, string | null>;
}

function parsed<T>(text: string | null, what: string): T {
  if (text === null) throw inconsistent(`the migration journal has no ${what}`);
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw inconsistent(`the journalled ${what} cannot be read: ${(e as Error).message}`);
  }
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The installed (source) schema, from its archive; undefined for a client that has none yet. */
function archivedSchema(ctx: Ctx, ref: { version: number; hash: string }): LocalSchema | undefined {
  if (ref.version === 0) return undefined;
  const row = ctx.db.prepare('SELECT manifest_json FROM _synchro_schema_archives WHERE schema_version = ? AND schema_hash = ?').get(ref.version, ref.hash) as { manifest_json: string } | undefined;
  if (row === undefined) throw inconsistent(`the journal's source schema ${ref.version}/${ref.hash} is not installed`);
  return localSchema(verifyManifest(JSON.parse(row.manifest_json)));
}

/**
 * Every check a pending journal must pass before recovery touches anything:
 * a known phase, the complete target body matching its recorded reference, a
 * typed plan in the known format whose hash and members match the journal and
 * which is exactly the plan the two manifests give, a source reference that
 * is the installed schema, and physical tables in the shape the phase says.
 */
function checkJournal(ctx: Ctx, row: JournalRow): CheckedJournal {
  const phase = row.phase as Phase;
  if (!PHASES.includes(phase)) throw inconsistent(`the migration journal is in unknown phase ${JSON.stringify(row.phase)}`);
  let manifest: SchemaManifest;
  try {
    manifest = verifyManifest(parsed(row.target_manifest_json, 'target manifest'));
  } catch (e) {
    throw e instanceof ClientError && e.code === 'migration_journal_inconsistent' ? e : inconsistent(`the journalled target manifest does not verify: ${(e as Error).message}`);
  }
  if (manifest.schema_version !== row.target_version || manifest.schema_hash !== row.target_hash) throw inconsistent('the journalled target manifest is not the recorded target reference');
  if (row.plan_format !== PLAN_FORMAT) throw inconsistent(`the journalled plan format ${JSON.stringify(row.plan_format)} is not ${PLAN_FORMAT}`);
  const plan = parsed<MigrationPlan>(row.plan_json, 'plan');
  const target = localSchema(manifest);
  const source = { version: Number(row.source_version), hash: String(row.source_hash) };
  const sourceSchema = archivedSchema(ctx, source);
  const known = new Set(planTables(sourceSchema, target));
  if (!Array.isArray(plan?.steps)) throw inconsistent('the journalled plan has no step list');
  for (const [k, step] of plan.steps.entries()) checkStep(step, known, k);
  if (planHash(plan) !== row.plan_hash) throw inconsistent('the journalled plan does not match its hash');
  const bound = plan.format === PLAN_FORMAT && same(plan.source, source) && same(plan.target, { version: row.target_version, hash: row.target_hash }) && plan.action === row.action;
  if (!bound || !same(plan.affectedScopes, parsed(row.affected_scopes_json, 'affected scopes'))) throw inconsistent('the journalled plan is bound to other references, action or scopes than the journal');
  if (!same(plan, buildPlan(sourceSchema, target, plan.action, plan.affectedScopes, plan.physical?.before ?? {}))) throw inconsistent('the journalled plan is not the plan its two manifests give');
  if (!same(installedRef(ctx), source)) throw inconsistent(`the journal starts from schema ${source.version}/${source.hash}, but ${installedRef(ctx).version}/${installedRef(ctx).hash} is installed`);
  const expected = phase === 'prepared' ? plan.physical.before : plan.physical.after;
  const found = physicalShape(ctx, Object.keys(expected));
  if (!same(found, expected) && !fault('scope007-physical-state-unchecked')) throw new ClientError('schema', 'migration_physical_mismatch', `local tables ${JSON.stringify(found)} match neither the source nor the target schema of the journal (phase ${phase} expects ${JSON.stringify(expected)})`, false, 'schema_reset'); // fault: client:scope007-physical-state-unchecked
  return { phase, manifest, plan, cursorUpdates: parsed(row.cursor_updates_json, 'cursor updates') };
}

/**
 * Finishes a journalled migration found on opening, if one is pending, after
 * checking it; it is announced as resumed. Returns whether one was pending.
 */
export function resumeMigration(ctx: Ctx): boolean {
  const row = readJournalRow(ctx);
  if (row === undefined || row.phase === 'applied' || row.phase === 'completed') return false;
  runMigration(ctx, checkJournal(ctx, row), false);
  return true;
}

/** Carries a checked journal from its phase to `applied` (or `completed`): the DDL unit, then the switch unit. */
function runMigration(ctx: Ctx, journal: CheckedJournal, announced: boolean): void {
  const { manifest, plan } = journal;
  const source = archivedSchema(ctx, plan.source);
  const target = localSchema(manifest);
  if (!announced) emit(ctx, { kind: 'schema_applying', version: manifest.schema_version, hash: manifest.schema_hash, resumed: true });
  if (journal.phase === 'prepared' || fault('scope007-resume-replays-ddl')) { // fault: client:scope007-resume-replays-ddl
    ctx.db.transaction(() => {
      for (const step of plan.steps) runStep(ctx, step, source, target);
      enterPhase(ctx, 'ddl_applied');
    })();
    ctx.crash('migration_ddl_applied');
  }
  if (fault('scope007-recovery-resets-queue') && !announced) ctx.db.exec('DELETE FROM _synchro_mutation_values; DELETE FROM _synchro_pending_changes'); // fault: client:scope007-recovery-resets-queue
  // The in-memory schema switches inside the unit, so listeners hear schema_applied only once it is in use.
  durably(ctx, () => {
    ctx.db.transaction(() => {
      ctx.db.prepare('INSERT OR IGNORE INTO _synchro_schema_archives(schema_version, schema_hash, manifest_json) VALUES (?, ?, ?)').run(manifest.schema_version, manifest.schema_hash, JSON.stringify(manifest));
      setMeta(ctx.db, 'schema_version', manifest.schema_version);
      setMeta(ctx.db, 'schema_hash', manifest.schema_hash);
      for (const [scope, cursor] of Object.entries(journal.cursorUpdates)) {
        const before = ctx.db.prepare('SELECT rebuild_required FROM _synchro_scopes WHERE scope_id = ?').get(scope) as { rebuild_required: number } | undefined;
        ctx.db.prepare('UPDATE _synchro_scopes SET cursor = ?, rebuild_required = ? WHERE scope_id = ?').run(cursor, cursor === null ? 1 : 0, scope);
        if (cursor === null && before?.rebuild_required === 0) emit(ctx, { kind: 'rebuild_requested', scopeID: scope });
      }
      for (const scope of plan.affectedScopes) markRebuild(ctx, scope);
      enterPhase(ctx, 'applied');
      settleMigration(ctx);
      emit(ctx, { kind: 'schema_applied', version: manifest.schema_version, hash: manifest.schema_hash });
    })();
    ctx.schema = target;
  });
}

/**
 * Marks an applied migration completed once no scope it made rebuild still
 * waits for its rebuild (inside the caller's transaction). Called when the
 * schema switches and whenever a rebuild finishes.
 */
export function settleMigration(ctx: Ctx): void {
  const row = readJournalRow(ctx);
  if (row?.phase !== 'applied') return;
  const affected = [...(JSON.parse(row.affected_scopes_json ?? '[]') as string[]), ...Object.entries(JSON.parse(row.cursor_updates_json ?? '{}') as Record<string, string | null>).filter(([, c]) => c === null).map(([s]) => s)];
  const waiting = affected.filter((scope) => (ctx.db.prepare('SELECT rebuild_required FROM _synchro_scopes WHERE scope_id = ?').get(scope) as { rebuild_required: number } | undefined)?.rebuild_required === 1);
  if (waiting.length === 0 || fault('scope007-completed-before-rebuild')) enterPhase(ctx, 'completed'); // fault: client:scope007-completed-before-rebuild
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
