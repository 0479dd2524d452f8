/**
 * Login roles for the registration scenarios, and SQL run as one of them.
 *
 * Roles are cluster-wide in PostgreSQL, so a role is created once and only
 * its memberships are reset per scenario; its privileges on schema `public`
 * belong to the scenario's own database. SQL runs "as" a role by switching
 * the session authorization of the source SQL connection, so `session_user`
 * (the registration actor) is that role, and switching back afterwards.
 */
import type { SourceSqlControl } from '../../../harness/adapters/server.ts';
import type { SyncWorld } from '../world.ts';

/** The protocol's group roles; a login role "member of X only" is in none of the others. */
export const SYNCHRO_ROLES = ['synchro_owner', 'synchro_adapter', 'synchro_seed', 'synchro_monitor', 'synchro_operator', 'synchro_worker'] as const;

export const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

export const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

export async function sourceSql(world: SyncWorld): Promise<SourceSqlControl> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability`);
  return server.sourceSql;
}

/** Creates login role `role` if the cluster lacks it, in exactly the group `group` (none when undefined), able to create objects in `public`. */
export async function loginRole(world: SyncWorld, role: string, group: (typeof SYNCHRO_ROLES)[number] | undefined): Promise<void> {
  const sql = await sourceSql(world);
  await sql.query(`DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ${literal(role)}) THEN
    CREATE ROLE ${ident(role)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
  END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
  NULL; -- a concurrent scenario of the run created it
END
$$`);
  for (const other of SYNCHRO_ROLES) if (other !== group) await sql.query(`REVOKE ${ident(other)} FROM ${ident(role)}`);
  if (group !== undefined) await sql.query(`GRANT ${ident(group)} TO ${ident(role)}`);
  // Scenarios create their application tables and candidate functions as this role.
  await sql.query(`GRANT USAGE, CREATE ON SCHEMA public TO ${ident(role)}`);
}

export type SqlOutcome = { ok: true; rows: Record<string, unknown>[] } | { ok: false; code: string | undefined; message: string };

/** Runs `script` (one or more statements, one implicit transaction) with `role` as session user. */
export async function runAs(world: SyncWorld, role: string, script: string): Promise<SqlOutcome> {
  const sql = await sourceSql(world);
  const text = await expandPlaceholders(sql, script);
  await sql.query(`SET SESSION AUTHORIZATION ${ident(role)}`);
  try {
    const rows = await sql.query(text);
    return { ok: true, rows: Array.isArray(rows) ? rows : [] };
  } catch (error) {
    const e = error as { code?: string; message: string };
    return { ok: false, code: e.code, message: e.message };
  } finally {
    await sql.query('RESET SESSION AUTHORIZATION');
  }
}

/** `{synchro_relation}` in a function body: some relation in schema synchro, read from the catalog at run time. */
async function expandPlaceholders(sql: SourceSqlControl, script: string): Promise<string> {
  if (!script.includes('{synchro_relation}')) return script;
  const [row] = await sql.query<{ name: string }>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'synchro' AND c.relkind IN ('r', 'v', 'p') ORDER BY c.relname LIMIT 1`,
  );
  if (!row) throw new Error('the server has no relation in schema synchro to stand for {synchro_relation}');
  return script.replaceAll('{synchro_relation}', row.name);
}
