/**
 * SQL the scope-function-contract scenarios build on: the operator login that
 * writes and registers the functions, the schema `app` it writes membership
 * functions in, a conforming assignment function over `public.project_members`
 * and its variants that each break exactly one rule, and conforming impact
 * functions. Keeping every variant one edit away from the conforming function
 * means a refusal can only come from the rule the variant breaks.
 */
import type { InspectControl } from '../../../harness/adapters/server.ts';
import type { SyncWorld } from '../world.ts';
import { ident, literal, loginRole, runAs, sourceSql, type SqlOutcome } from './roles.ts';

interface ContractState {
  outcome: SqlOutcome | undefined;
  generations: Map<string, string>;
  manifests: Map<string, { version: number; hash: string }>;
  registrations: Map<string, string>;
  userStates: Map<string, string>;
}

const states = new WeakMap<SyncWorld, ContractState>();

export function contractState(world: SyncWorld): ContractState {
  let state = states.get(world);
  if (!state) {
    state = { outcome: undefined, generations: new Map(), manifests: new Map(), registrations: new Map(), userStates: new Map() };
    states.set(world, state);
  }
  return state;
}

export function recorded<T>(map: Map<string, T>, label: string, what: string): T {
  const value = map.get(label);
  if (value === undefined) throw new Error(`no ${what} was recorded as "${label}" in this scenario`);
  return value;
}

export async function inspection(world: SyncWorld): Promise<InspectControl> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability`);
  return server.inspect;
}

/** A scenario names a table of the model ("tasks") or a qualified relation ("public.notes"). */
export const relationOf = (table: string) => (table.includes('.') ? table : `public.${table}`);

export async function activeGeneration(world: SyncWorld): Promise<string> {
  const [row] = await (await inspection(world)).query<{ g: string | null }>("SELECT max(generation)::text AS g FROM synchro.registry_generations WHERE state = 'active'");
  if (!row?.g) throw new Error('server inspection shows no active registry generation');
  return row.g;
}

export function outcome(world: SyncWorld): SqlOutcome {
  const last = contractState(world).outcome;
  if (!last) throw new Error('no registration was attempted in this scenario');
  return last;
}

export function describe(result: SqlOutcome): string {
  return result.ok ? 'the call succeeded' : `SQLSTATE ${result.code}: ${result.message}`;
}

// A refusal for a reason that only shows the scenario's own SQL is wrong must not pass as the server's refusal.
const SCENARIO_FAULTS = new Set(['42601', '42883', '42P01', '3F000']);

export function assertRefused(world: SyncWorld): Extract<SqlOutcome, { ok: false }> {
  const result = outcome(world);
  if (result.ok) throw new Error('the registration succeeded');
  world.assert.ok(!SCENARIO_FAULTS.has(result.code ?? ''), `the call failed for a reason in the scenario's own SQL: ${describe(result)}`);
  return result;
}

/** The login that writes and registers functions: a member of synchro_operator only, as in the assignment pilot. */
export const OPERATOR = 'app_operator';

/** A login outside every synchro role, able to create functions in `public`. */
export const OUTSIDER = 'app_other';

/** Creates the operator login and schema `app`, where it may create objects. */
export async function prepareOperator(world: SyncWorld): Promise<void> {
  await loginRole(world, OPERATOR, 'synchro_operator');
  const sql = await sourceSql(world);
  await sql.query(`CREATE SCHEMA IF NOT EXISTS app; GRANT USAGE, CREATE ON SCHEMA app TO ${ident(OPERATOR)}`);
}

/** Runs setup SQL as `role`; a failure is a broken scenario, not an observation. */
export async function setupAs(world: SyncWorld, role: string, script: string): Promise<void> {
  const outcome = await runAs(world, role, script);
  if (!outcome.ok) throw new Error(`setup SQL as role ${role} failed (${outcome.code}): ${outcome.message}\n${script}`);
}

/** Runs `text` as the database owner (the provisioning session), keeping a refusal as an outcome. */
export async function attemptAsOwner(world: SyncWorld, text: string, params: readonly unknown[] = []): Promise<SqlOutcome> {
  const sql = await sourceSql(world);
  try {
    return { ok: true, rows: await sql.query(text, params) };
  } catch (error) {
    const e = error as { code?: string; message: string };
    return { ok: false, code: e.code, message: e.message };
  }
}

/** Whether a function named `schema.name` exists, whatever its arguments. */
export async function functionExists(world: SyncWorld, name: string): Promise<boolean> {
  const [schema, fn] = splitName(name);
  const sql = await sourceSql(world);
  const rows = await sql.query(
    'SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = $2',
    [schema, fn],
  );
  return rows.length > 0;
}

export function splitName(name: string): [string, string] {
  const [schema, fn, extra] = name.split('.');
  if (!schema || !fn || extra !== undefined) throw new Error(`"${name}" is not a schema-qualified name`);
  return [schema, fn];
}

/** The one assignment function the scenarios register; the harness knows how to build only this one. */
export const ASSIGNMENT_FUNCTION = 'public.project_scopes';

export function requireAssignmentFunction(name: string): void {
  if (name !== ASSIGNMENT_FUNCTION) throw new Error(`the harness builds the assignment function ${ASSIGNMENT_FUNCTION} only, not ${name}`);
}

const MEMBERS_TABLE = 'CREATE TABLE IF NOT EXISTS public.project_members (user_id text NOT NULL, project_id text NOT NULL, PRIMARY KEY (user_id, project_id));';

const MEMBER_SELECT = "SELECT 'project:' || m.project_id FROM public.project_members AS m WHERE m.user_id = p_user_id";

/** The parts of an assignment function definition a variant may change. */
interface AssignmentDefinition {
  owner: string;
  /** Argument list as written, and the identity types the privilege statements name. */
  args: string;
  identity: string;
  returns: string;
  /** Language, volatility, security, settings and body, in the order CREATE FUNCTION takes them. */
  volatility: string;
  security: string;
  searchPath: string;
  body: string;
  language: string;
  revokePublic: boolean;
  grantOwner: boolean;
  /** Statements the variant needs before the function (a helper it calls). */
  before: string;
}

const CONFORMING: AssignmentDefinition = {
  owner: OPERATOR,
  args: 'p_user_id text',
  identity: 'text',
  returns: 'SETOF text',
  language: 'sql',
  volatility: 'STABLE',
  security: '',
  searchPath: 'SET search_path = pg_catalog, synchro',
  body: `BEGIN ATOMIC ${MEMBER_SELECT}; END`,
  revokePublic: true,
  grantOwner: true,
  before: '',
};

function assignmentSql(d: AssignmentDefinition): string {
  const fn = `${ASSIGNMENT_FUNCTION}(${d.identity})`;
  return [
    MEMBERS_TABLE,
    d.before,
    `CREATE FUNCTION ${ASSIGNMENT_FUNCTION}(${d.args}) RETURNS ${d.returns} LANGUAGE ${d.language} ${d.volatility} ${d.security} ${d.searchPath} ${d.body};`,
    d.revokePublic ? `REVOKE ALL ON FUNCTION ${fn} FROM PUBLIC;` : '',
    d.grantOwner ? `GRANT EXECUTE ON FUNCTION ${fn} TO synchro_owner;` : '',
  ]
    .filter((part) => part !== '')
    .join('\n');
}

/** Creates the conforming assignment function (owned by the operator), with `members` as (user, project) rows. */
export async function createConformingAssignment(world: SyncWorld, members: [string, string][] = []): Promise<void> {
  await prepareOperator(world);
  const rows = members.map(([user, project]) => `(${literal(user)}, ${literal(project)})`);
  await setupAs(world, OPERATOR, `${assignmentSql(CONFORMING)}${rows.length > 0 ? `\nINSERT INTO public.project_members VALUES ${rows.join(', ')};` : ''}`);
}

// Each variant changes one part of the conforming definition.
const VARIANTS: Record<string, (world: SyncWorld) => Promise<Partial<AssignmentDefinition>>> = {
  'is written in plpgsql': async () => ({ language: 'plpgsql', body: `AS $f$ BEGIN RETURN QUERY ${MEMBER_SELECT}; END $f$` }),
  'has a string body instead of BEGIN ATOMIC': async () => ({ body: `AS $f$ ${MEMBER_SELECT} $f$` }),
  'takes two arguments': async () => ({ args: 'p_user_id text, p_other text', identity: 'text, text' }),
  'takes a varchar argument': async () => ({ args: 'p_user_id varchar', identity: 'varchar' }),
  'gives its argument a default': async () => ({ args: "p_user_id text DEFAULT 'alice'" }),
  'is VARIADIC': async () => ({
    args: 'VARIADIC p_user_ids text[]',
    identity: 'text[]',
    body: "BEGIN ATOMIC SELECT 'project:' || m.project_id FROM public.project_members AS m WHERE m.user_id = p_user_ids[1]; END",
  }),
  'returns a single text': async () => ({ returns: 'text' }),
  'is VOLATILE': async () => ({ volatility: 'VOLATILE' }),
  'is SECURITY DEFINER': async () => ({ security: 'SECURITY DEFINER' }),
  'sets no search_path': async () => ({ searchPath: '' }),
  'sets search_path to public': async () => ({ searchPath: 'SET search_path = public' }),
  'is owned by another role than the registering operator': async (world) => {
    await loginRole(world, OUTSIDER, undefined);
    return { owner: OUTSIDER };
  },
  'lacks EXECUTE for synchro_owner': async () => ({ grantOwner: false }),
  'keeps EXECUTE for PUBLIC': async () => ({ revokePublic: false }),
  'calls the function public.helper()': async () => ({
    before: "CREATE FUNCTION public.helper(p_project text) RETURNS text LANGUAGE sql IMMUTABLE BEGIN ATOMIC SELECT 'project:' || p_project; END;",
    body: 'BEGIN ATOMIC SELECT public.helper(m.project_id) FROM public.project_members AS m WHERE m.user_id = p_user_id; END',
  }),
  'reads the table synchro.sync_clients': async (world) => {
    // The reference names its client table differently; any relation in schema synchro breaks the same rule.
    const [row] = await (await sourceSql(world)).query<{ found: string | null }>("SELECT to_regclass('synchro.sync_clients')::text AS found");
    const relation = row?.found ? 'synchro.sync_clients' : '{synchro_relation}';
    return { body: `BEGIN ATOMIC SELECT 'project:x' FROM ${relation} LIMIT 1; END` };
  },
  'reads a table its owner has no SELECT on': async (world) => {
    // The operator may look the table up (schema USAGE), so the function parses, but may not read it.
    await (await sourceSql(world)).query(`CREATE SCHEMA IF NOT EXISTS restricted;
CREATE TABLE IF NOT EXISTS restricted.hidden_members (user_id text, project_id text);
REVOKE ALL ON restricted.hidden_members FROM PUBLIC;
GRANT USAGE ON SCHEMA restricted TO ${ident(OPERATOR)};`);
    return { body: "BEGIN ATOMIC SELECT 'project:' || h.project_id FROM restricted.hidden_members AS h WHERE h.user_id = p_user_id; END" };
  },
};

/** Creates the variant of the assignment function that breaks the rule `breaks`. */
export async function createAssignmentVariant(world: SyncWorld, breaks: string): Promise<void> {
  const variant = VARIANTS[breaks];
  if (!variant) throw new Error(`the harness has no assignment function variant that ${breaks}; known: ${Object.keys(VARIANTS).join('; ')}`);
  await prepareOperator(world);
  const definition = { ...CONFORMING, ...(await variant(world)) };
  // The member table belongs to the operator whoever owns the variant.
  await setupAs(world, OPERATOR, MEMBERS_TABLE);
  await setupAs(world, definition.owner, assignmentSql(definition));
}

/**
 * A conforming impact function for a dependency of `tasks` on another
 * relation: it names the tasks of the changed row's owner, read from the
 * tasks projection. `textArguments` gives it (text, text) instead of
 * (jsonb, jsonb), which breaks only the signature.
 */
export function impactFunctionSql(name: string, tasksTableId: string, textArguments: boolean): string {
  const [schema, fn] = splitName(name);
  const qualified = `${ident(schema)}.${ident(fn)}`;
  const args = textArguments ? 'p_old text, p_new text' : 'p_old jsonb, p_new jsonb';
  const owners = textArguments ? 'p_old, p_new' : "p_old ->> 'owner_id', p_new ->> 'owner_id'";
  return `CREATE FUNCTION ${qualified}(${args}) RETURNS SETOF synchro.synchro_row_ref LANGUAGE sql STABLE
  BEGIN ATOMIC
    SELECT ROW(${literal(tasksTableId)}, 'string', t.id)::synchro.synchro_row_ref FROM synchro_projection.tasks AS t WHERE t.owner_id IN (${owners});
  END;`;
}
