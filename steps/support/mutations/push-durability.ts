/**
 * Helpers of the push durability steps (SYNC-MUT-012): application triggers
 * on a source table that act when a row's body takes one chosen value (raise
 * an operational SQLSTATE, or wait at a gate the harness opens), so a push
 * meets the fault inside its own transaction at a known mutation.
 */
import type { SourceSqlControl } from '../../../harness/adapters/server.ts';
import type { SyncWorld } from '../world.ts';

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Prefix of every trigger these steps create, so they can be removed again by name. */
const PREFIX = 'harness_fault_';

export async function sourceSqlOf(world: SyncWorld): Promise<SourceSqlControl> {
  const server = await world.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability for a source trigger`);
  return server.sourceSql;
}

/** A BEFORE INSERT OR UPDATE row trigger on `table` running `action` (PL/pgSQL) when the new body equals `body`. */
export async function sourceTrigger(world: SyncWorld, table: string, body: string, action: string): Promise<void> {
  const sql = await sourceSqlOf(world);
  const name = `${PREFIX}${table.replace(/\W/g, '_')}`;
  await sql.query(`
    CREATE FUNCTION public.${name}() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, public AS $fn$
    BEGIN
      IF NEW.body = ${literal(body)} THEN ${action} END IF;
      RETURN NEW;
    END $fn$;
    CREATE TRIGGER ${name} BEFORE INSERT OR UPDATE ON public.${ident(table)} FOR EACH ROW EXECUTE FUNCTION public.${name}();`);
}

export async function dropSourceTriggers(world: SyncWorld, table: string): Promise<void> {
  const sql = await sourceSqlOf(world);
  const name = `${PREFIX}${table.replace(/\W/g, '_')}`;
  const found = await sql.query<{ n: string }>('SELECT count(*)::text AS n FROM pg_trigger WHERE tgname = $1', [name]);
  if (found[0]?.n !== '1') throw new Error(`table ${table} has no fault trigger to remove`);
  await sql.query(`DROP TRIGGER ${name} ON public.${ident(table)}; DROP FUNCTION public.${name}();`);
}
