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

/** Key of the advisory lock a gated trigger holds while it waits: the harness's sign that a push is inside its transaction. */
const GATE_KEY = 120007;
const GATE_TABLE = 'harness_push_gate';

/**
 * A trigger that, when the new body equals `body`, marks its transaction
 * with a shared advisory lock and then waits until the harness opens the
 * gate (a row in a table of its own, committed from outside; each loop
 * statement sees the latest commits). It gives up after `deadlineMs`.
 */
export async function gateTrigger(world: SyncWorld, table: string, body: string): Promise<void> {
  const sql = await sourceSqlOf(world);
  await sql.query(`CREATE TABLE public.${GATE_TABLE} (opened_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
  const seconds = Math.ceil(world.deadlineMs / 1000);
  await sourceTrigger(
    world,
    table,
    body,
    `PERFORM pg_advisory_xact_lock_shared(${GATE_KEY});
     FOR attempt IN 1..${seconds * 50} LOOP
       EXIT WHEN EXISTS (SELECT 1 FROM public.${GATE_TABLE});
       PERFORM pg_sleep(0.02);
     END LOOP;`,
  );
  // The trigger reads the gate as the push's role.
  await sql.query(`ALTER FUNCTION public.${PREFIX}${table.replace(/\W/g, '_')}() SECURITY DEFINER`);
}

async function gateHolders(world: SyncWorld): Promise<number> {
  const rows = await (await sourceSqlOf(world)).query<{ n: string }>(
    `SELECT count(*)::text AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 0 AND objid = $1::bigint::oid AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [GATE_KEY],
  );
  return Number(rows[0]?.n);
}

/** Waits, up to the scenario's deadline, until `condition` holds; polls the database, never sleeps blind. */
async function until(world: SyncWorld, what: string, condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + world.deadlineMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${world.deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Resolves once a transaction waits at the gate. */
export async function awaitGateReached(world: SyncWorld): Promise<void> {
  await until(world, 'a push transaction reaching the gate', async () => (await gateHolders(world)) > 0);
}

/** Opens the gate and waits until no transaction holds it any more (the orphaned one ended). */
export async function openGate(world: SyncWorld): Promise<void> {
  await (await sourceSqlOf(world)).query(`INSERT INTO public.${GATE_TABLE} DEFAULT VALUES`);
  await until(world, 'the transaction at the gate ending', async () => (await gateHolders(world)) === 0);
}
