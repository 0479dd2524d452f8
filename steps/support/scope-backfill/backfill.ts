/**
 * Staged membership backfill scenarios: the operator's new rule for a table,
 * the backfill the harness holds between batches, and what the harness
 * expects each scope to hold under the old and the new rule, computed from
 * the source rows (never read from the server's own edges).
 */
import type { MembershipBackfill, ServerAdapter } from '../../../harness/adapters/server.ts';
import { sqlType } from '../model.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import { templateSql } from '../scope-generations/rule-changes.ts';
import type { RebuildRun } from '../wire-client.ts';
import { keyValue } from '../wire-values/recorded.ts';
import type { SyncWorld } from '../world.ts';

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** One rebuild the property scenario took, with what it should have held. */
export interface ObservedRebuild {
  holdPoint: number;
  scope: string;
  phase: 'held' | 'activated';
  status: number;
  keys: string[];
}

export interface BackfillState {
  /** The backfill started by the scenario and not yet activated. */
  open: { backfill: MembershipBackfill; batches: number; table: string; templates: string[] } | undefined;
  /** Label → live edges as `pk scope` lines, sorted. */
  edges: Map<string, string[]>;
  observed: ObservedRebuild[];
  /** The rule change the generated runs applied. */
  property: { table: string; templates: string[] } | undefined;
  seed: number | undefined;
}

const states = new WeakMap<SyncWorld, BackfillState>();

export function backfillState(world: SyncWorld): BackfillState {
  let state = states.get(world);
  if (!state) {
    state = { open: undefined, edges: new Map(), observed: [], property: undefined, seed: undefined };
    states.set(world, state);
  }
  return state;
}

/** Scope templates written as `a,b` in one step argument. */
export function templateList(text: string): string[] {
  const templates = text
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (templates.length === 0) throw new Error(`"${text}" names no scope template`);
  return templates;
}

let functionCounter = 0;

/** Creates a membership function of `table` placing each row in every scope of `templates`; returns its name. */
export async function createRule(world: SyncWorld, table: string, templates: string[]): Promise<string> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change a membership rule`);
  const key = world.model.keyColumn(table);
  functionCounter += 1;
  const name = `public.${table}_backfill_rule_${functionCounter}`;
  await server.provision.exec(`CREATE FUNCTION ${name}(p_key ${sqlType(key.type)}) RETURNS SETOF text LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT unnest(ARRAY[${templates.map(templateSql).join(', ')}]) FROM synchro_projection.${quoteIdent(table)} AS p WHERE p.${quoteIdent(key.name)} = p_key;
END;`);
  return name;
}

type BackfillServer = ServerAdapter & { provision: NonNullable<ServerAdapter['provision']> & { membershipBackfill: NonNullable<NonNullable<ServerAdapter['provision']>['membershipBackfill']> } };

/** The server when it offers the optional backfill control; otherwise the step is reported undetermined. */
export async function backfillServer(world: SyncWorld): Promise<BackfillServer | 'skipped'> {
  const server = await world.readyServer();
  if (server.provision?.membershipBackfill === undefined) {
    return undeterminedWithout(world, `server adapter "${server.id}" offers no provision.membershipBackfill control to run a staged membership backfill`);
  }
  return server as BackfillServer;
}

/** Starts a backfill of `table` to `templates`; nothing runs until the harness asks for batches. */
export async function startBackfill(world: SyncWorld, server: BackfillServer, table: string, templates: string[], batchSize: number): Promise<MembershipBackfill> {
  const rule = await createRule(world, table, templates);
  const backfill = await server.provision.membershipBackfill(`public.${table}`, rule, batchSize);
  backfillState(world).open = { backfill, batches: 0, table, templates };
  return backfill;
}

/** Runs batches until `count` have staged rows; a backfill that runs out of rows first cannot be held there. */
export async function holdAfter(world: SyncWorld, count: number): Promise<void> {
  const open = backfillState(world).open;
  if (open === undefined) throw new Error('no membership backfill was started in this scenario');
  while (open.batches < count) {
    const staged = await open.backfill.runBatch();
    if (staged === 0) throw new Error(`the backfill staged every row in ${open.batches} batches: it cannot be held after batch ${count}`);
    open.batches += 1;
  }
}

/** Lets the held backfill stage every remaining row, then activates it. */
export async function release(world: SyncWorld): Promise<void> {
  const state = backfillState(world);
  const open = state.open;
  if (open === undefined) throw new Error('no membership backfill is held in this scenario');
  for (let guard = 0; guard < 100_000; guard += 1) {
    if ((await open.backfill.runBatch()) === 0) break;
    open.batches += 1;
  }
  await open.backfill.activate();
  state.open = undefined;
}

/** The table's source rows, as the scope templates read them. */
export async function sourceRows(world: SyncWorld, table: string): Promise<Record<string, unknown>[]> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to read the rows of "${table}"`);
  return server.sourceSql.query(`SELECT * FROM public.${quoteIdent(table)}`);
}

/** `team:{team}` filled in from one row. */
export function fillTemplate(template: string, row: Record<string, unknown>): string {
  return template.replace(/\{([^}]+)\}/g, (_, column: string) => {
    const value = row[column];
    if (value === null || value === undefined) throw new Error(`template "${template}" reads column "${column}", which the row lacks`);
    return String(value);
  });
}

/** The keys of `table` whose row one of `templates` places in `scope`, sorted. */
export function expectedKeys(rows: Record<string, unknown>[], keyColumn: string, templates: string[], scope: string): string[] {
  return rows
    .filter((row) => templates.some((t) => fillTemplate(t, row) === scope))
    .map((row) => String(row[keyColumn]))
    .sort();
}

/** The keys a whole rebuild delivered, sorted. */
export function rebuiltKeys(run: RebuildRun): string[] {
  return run.records.map((record) => String(keyValue(record.pk))).sort();
}

/** The server's live membership edges, as `pk scope` lines, sorted. */
export async function liveEdges(world: SyncWorld): Promise<string[]> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read membership edges`);
  const rows = await server.inspect.query<{ pk_text: string; scope_id: string }>('SELECT pk_text, scope_id FROM synchro.membership_edges');
  return rows.map((r) => `${r.pk_text} ${r.scope_id}`).sort();
}
