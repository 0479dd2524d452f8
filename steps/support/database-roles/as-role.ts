/**
 * Acting as a database role (SYNC-OPS-001, SYNC-OPS-002). A privilege is
 * proven by what a login of the role is refused, not only by what the catalog
 * says: `sourceSql.asRole` (optional, docs/adapters.md) runs a statement on a
 * connection of its own as a login of one Synchro group, or of none
 * (`public`). Without it the scenario is undetermined, with the reason.
 */
import { DATABASE_ROLES, type DatabaseRole, type RoleStatementOutcome } from '../../../harness/adapters/server.ts';
import { undeterminedWithout } from '../optional-controls.ts';
import type { SyncWorld } from '../world.ts';

export function databaseRole(name: string): DatabaseRole {
  if (!(DATABASE_ROLES as readonly string[]).includes(name)) throw new Error(`"${name}" is not a Synchro group role nor "public" (one of ${DATABASE_ROLES.join(', ')})`);
  return name as DatabaseRole;
}

/** Runs `sql` as a login of `role`, or answers 'skipped' (undetermined) when the adapter cannot act as that role. */
export async function runAsRole(world: SyncWorld, role: DatabaseRole, sql: string): Promise<RoleStatementOutcome | 'skipped'> {
  const server = await world.readyServer();
  const control = server.sourceSql;
  if (control?.asRole === undefined || !(control.roles ?? []).includes(role)) {
    return undeterminedWithout(world, `server adapter "${server.id}" cannot run a statement as a login of role "${role}" (optional sourceSql.asRole / "roleDatabaseUrls", docs/adapters.md)`);
  }
  return control.asRole(role, sql);
}

/** The Synchro groups the login a role outcome ran as belongs to, read as that login. */
export const MEMBERSHIPS_SQL = `SELECT coalesce(array_agg(g.rolname::text ORDER BY g.rolname), '{}') AS groups
  FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
 WHERE m.member = (SELECT oid FROM pg_roles WHERE rolname = session_user) AND g.rolname LIKE 'synchro\\_%'`;

/** Logins named by a scenario ("nobody", "seed_login") and the role each one acts as. */
const aliases = new WeakMap<SyncWorld, Map<string, DatabaseRole>>();

export function nameLogin(world: SyncWorld, alias: string, role: DatabaseRole): void {
  const known = aliases.get(world) ?? new Map<string, DatabaseRole>();
  known.set(alias, role);
  aliases.set(world, known);
}

export function loginNamed(world: SyncWorld, alias: string): DatabaseRole {
  const role = aliases.get(world)?.get(alias);
  if (role === undefined) throw new Error(`no login "${alias}" was set up in this scenario`);
  return role;
}

/** The outcome of the last statement a scenario ran as a role. */
const lastOutcome = new WeakMap<SyncWorld, RoleStatementOutcome>();

export function rememberOutcome(world: SyncWorld, outcome: RoleStatementOutcome): void {
  lastOutcome.set(world, outcome);
}

export function lastRoleOutcome(world: SyncWorld): RoleStatementOutcome {
  const outcome = lastOutcome.get(world);
  if (outcome === undefined) throw new Error('no statement was run as a role in this scenario');
  return outcome;
}

/**
 * One statement that, run as a role, tries SELECT, INSERT, UPDATE and DELETE
 * on every table and view of schema "synchro" and SELECT, USAGE and UPDATE on
 * every sequence, each in a subtransaction that is always rolled back, and
 * answers the attempts that were NOT refused with 42501 as
 * `<object> <privilege>` lines. The table writes touch no row (`WHERE
 * false`); a sequence advances only for a role that may already advance it.
 */
export const DIRECT_ACCESS_PROBE = `DO $probe$
DECLARE
  o record;
  attempt text;
  held text[] := '{}';
BEGIN
  FOR o IN
    SELECT c.oid::regclass::text AS name, c.relkind, (SELECT quote_ident(a.attname) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attidentity = '' AND a.attgenerated = '' ORDER BY a.attnum LIMIT 1) AS col
      FROM pg_class c WHERE c.relnamespace = 'synchro'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
  LOOP
    FOREACH attempt IN ARRAY CASE WHEN o.relkind = 'S' THEN ARRAY['SELECT', 'USAGE', 'UPDATE'] ELSE ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE'] END LOOP
      BEGIN
        EXECUTE CASE
          WHEN o.relkind = 'S' AND attempt = 'SELECT' THEN format('SELECT last_value FROM %s', o.name)
          WHEN o.relkind = 'S' AND attempt = 'USAGE' THEN format('SELECT currval(%L)', o.name)
          WHEN o.relkind = 'S' THEN format('SELECT nextval(%L)', o.name)
          WHEN attempt = 'SELECT' THEN format('SELECT 1 FROM %s WHERE false', o.name)
          WHEN attempt = 'INSERT' THEN format('INSERT INTO %s OVERRIDING SYSTEM VALUE SELECT (NULL::%s).* WHERE false', o.name, o.name)
          WHEN attempt = 'UPDATE' THEN format('UPDATE %s SET %s = NULL WHERE false', o.name, o.col)
          ELSE format('DELETE FROM %s WHERE false', o.name)
        END;
        held := held || (o.name || ' ' || attempt);
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'roll back the attempt';
      EXCEPTION
        WHEN insufficient_privilege THEN NULL;
        WHEN raise_exception THEN NULL;
        WHEN OTHERS THEN held := held || (o.name || ' ' || attempt || ' (' || SQLSTATE || ')');
      END;
    END LOOP;
  END LOOP;
  PERFORM set_config('synchro_conformance.held', array_to_string(held, E'\\n'), false);
END
$probe$;
SELECT current_setting('synchro_conformance.held') AS held, (SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'synchro'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')) AS objects`;
