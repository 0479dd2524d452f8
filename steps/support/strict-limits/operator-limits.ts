/**
 * Administrative limits set the way an operator sets them: SQL entry points
 * of the server (compaction, membership dependencies, assignment functions)
 * and the provisioning controls (table registration, staged backfill). Each
 * attempt is kept as an outcome (never thrown), and what the server held
 * before it is pictured, so the checks can show the refusal changed nothing.
 * Every object the attempt names is valid, so a refusal can only come from
 * the limit.
 */
import type { InspectControl } from '../../../harness/adapters/server.ts';
import { rememberGenerationBefore } from '../capture-order/registry-generations.ts';
import { activeGeneration, attemptAsOwner, createConformingAssignment, impactFunctionSql, OPERATOR, prepareOperator } from '../scopes/function-contract.ts';
import { runAs, type SqlOutcome } from '../scopes/roles.ts';
import type { SyncWorld } from '../world.ts';

interface LimitsState {
  outcome: SqlOutcome | undefined;
  generation: string | undefined;
  retention: string | undefined;
  scopeSetVersion: number | undefined;
}

const states = new WeakMap<SyncWorld, LimitsState>();

export function limitsState(world: SyncWorld): LimitsState {
  let state = states.get(world);
  if (!state) {
    state = { outcome: undefined, generation: undefined, retention: undefined, scopeSetVersion: undefined };
    states.set(world, state);
  }
  return state;
}

export function lastOutcome(world: SyncWorld): SqlOutcome {
  const outcome = limitsState(world).outcome;
  if (outcome === undefined) throw new Error('no administrative operation was attempted in this scenario');
  return outcome;
}

export function describeOutcome(outcome: SqlOutcome): string {
  return outcome.ok ? `the operation succeeded: ${JSON.stringify(outcome.rows).slice(0, 300)}` : `SQLSTATE ${outcome.code}: ${outcome.message}`;
}

/** Runs `act`, turning a refusal into an outcome with its SQLSTATE. */
async function attempt(act: () => Promise<unknown>): Promise<SqlOutcome> {
  try {
    const result = await act();
    return { ok: true, rows: Array.isArray(result) ? result : [] };
  } catch (error) {
    const e = error as { code?: string; message: string };
    return { ok: false, code: e.code, message: e.message };
  }
}

async function inspection(world: SyncWorld): Promise<InspectControl> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability`);
  return server.inspect;
}

/** Every effect and every scope's resume floor and retention generation, as one comparable text. */
export async function retentionPicture(world: SyncWorld): Promise<string> {
  const inspect = await inspection(world);
  const [row] = await inspect.query<{ r: string }>(
    `SELECT json_build_object(
       'effects', (SELECT coalesce(json_agg(e ORDER BY e), '[]') FROM (SELECT scope_id || '@' || commit_lsn::text || '/' || event_ordinal || '/' || effect_ordinal AS e FROM synchro.scope_effects) x),
       'floors', (SELECT coalesce(json_agg(to_jsonb(s) ORDER BY s.scope_id), '[]') FROM synchro.scope_state s))::text AS r`,
  );
  return row?.r ?? '';
}

/** How many effects the server holds: a compaction that is let run must have something to delete. */
export async function effectCount(world: SyncWorld): Promise<number> {
  const [row] = await (await inspection(world)).query<{ n: string }>('SELECT count(*)::text AS n FROM synchro.scope_effects');
  return Number(row?.n ?? 0);
}

/** `NULL` or an integer, as the feature writes a SQL argument. */
export function sqlInteger(text: string): number | null {
  if (text === 'NULL') return null;
  if (!/^-?\d+$/.test(text)) throw new Error(`"${text}" is neither NULL nor an integer`);
  return Number(text);
}

export async function compactWithBatchSize(world: SyncWorld, batchSize: number | null): Promise<void> {
  const state = limitsState(world);
  await prepareOperator(world);
  state.retention = await retentionPicture(world);
  state.outcome = await runAs(world, OPERATOR, `SELECT synchro.synchro_compact_scopes(${batchSize === null ? 'NULL' : batchSize}) AS r`);
}

const PROJECTS_SQL = `CREATE TABLE public.projects (id text PRIMARY KEY, owner_id text NOT NULL);
SELECT synchro.synchro_prepare_projection_view('public.projects');
CREATE FUNCTION public.projects_scopes(p_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT 'user:' || r.owner_id FROM synchro_projection.projects r WHERE r.id = p_key;
END;`;

/** Registers table `projects` with `max_scope_fanout` or `max_impact_rows` set to `value`, everything else valid. */
export async function registerProjects(world: SyncWorld, table: string, setting: string, value: number): Promise<void> {
  if (table !== 'projects') throw new Error(`the harness builds the registration of table "projects" only, not "${table}"`);
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability`);
  const provision = server.provision;
  await provision.exec(PROJECTS_SQL);
  const state = limitsState(world);
  const registration = { relation: 'public.projects', membershipFunction: 'public.projects_scopes', composition: 'single_scope' };
  if (setting === 'max_scope_fanout') {
    await rememberGenerationBefore(world);
    state.outcome = await attempt(() => provision.registerTable({ ...registration, maxScopeFanout: value }));
    return;
  }
  if (setting !== 'max_impact_rows') throw new Error(`no registration setting "${setting}"`);
  // An impact bound belongs to a declared read: projects is registered, then declared a read of the tasks membership.
  await provision.registerTable(registration);
  await provision.exec(impactFunctionSql('public.projects_impact', world.wire('H').tableId('tasks'), false));
  await rememberGenerationBefore(world);
  state.outcome = await attemptAsOwner(world, 'SELECT synchro.synchro_register_membership_dependency($1, $2, $3, $4)', ['public.tasks', 'public.projects', 'public.projects_impact', value]);
}

/** Begins a staged backfill of the tasks membership function with `batchSize`. */
export async function beginBackfill(world: SyncWorld, batchSize: number): Promise<void> {
  const server = await world.readyServer();
  const backfill = server.provision?.membershipBackfill?.bind(server.provision);
  if (!backfill) throw new Error(`server adapter "${server.id}" offers no staged membership backfill`);
  const state = limitsState(world);
  state.generation = await activeGeneration(world);
  state.outcome = await attempt(() => backfill('public.tasks', 'public.tasks_scopes', batchSize));
}

/** The assignment function returns a project scope for alice, so a registration would show on her next connect. */
export async function registerAssignment(world: SyncWorld, name: string, bound: number): Promise<void> {
  await createConformingAssignment(world, [['alice', 'p_1']]);
  const state = limitsState(world);
  state.scopeSetVersion = world.wire('H').scopeSetVersion;
  state.outcome = await runAs(world, OPERATOR, `SELECT synchro.synchro_register_assignment_function('${name.replaceAll("'", "''")}', ${bound})`);
}

/** The registration error a refusal carries in its message. */
export function registrationError(outcome: SqlOutcome): { code?: unknown; reason?: unknown } {
  if (outcome.ok) return {};
  try {
    return (JSON.parse(outcome.message) as { error?: { code?: unknown; reason?: unknown } }).error ?? {};
  } catch {
    return {};
  }
}
