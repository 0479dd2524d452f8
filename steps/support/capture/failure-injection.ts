/**
 * Failures the harness injects into the next source transaction of a table,
 * each made with real database objects so the capture worker meets it as it
 * would meet a broken deployment: a membership function replaced by one that
 * answers NULL, a trigger that adds a fence message no decoder can read, a
 * check constraint that refuses the worker's projection record. The WAL
 * position before the injection is kept, so later checks can tell the
 * poisoned transaction from anything committed earlier.
 */
import type { ServerAdapter } from '../../../harness/adapters/server.ts';
import type { SyncWorld } from '../world.ts';
import { inspectRows, tableIdOf } from './inspection.ts';

interface Injection {
  /** The WAL insert position read just before the failure was put in place. */
  walBefore: string;
  /** The membership function's definition before it was broken, to restore it. */
  brokenFunction?: { name: string; definition: string };
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

const injections = new WeakMap<SyncWorld, Injection>();

export function injectionOf(world: SyncWorld): Injection {
  const injection = injections.get(world);
  if (injection === undefined) throw new Error('no failure was injected earlier in this scenario');
  return injection;
}

function provisionOf(server: ServerAdapter) {
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to put the failure in place`);
  return server.provision;
}

async function startInjection(world: SyncWorld): Promise<Injection> {
  const [at] = await inspectRows<{ l: string }>(world, 'SELECT pg_current_wal_insert_lsn()::text AS l');
  const injection: Injection = { walBefore: at?.l as string };
  injections.set(world, injection);
  return injection;
}

/** Replaces the table's registered membership function (same name and arguments) by one returning a NULL scope. */
export async function breakMembershipFunction(world: SyncWorld, table: string): Promise<void> {
  const server = await world.readyServer();
  const injection = await startInjection(world);
  const [fn] = await inspectRows<{ name: string; args: string; definition: string }>(
    world,
    `SELECT r.membership_function AS name, pg_get_function_arguments(p.oid) AS args, pg_get_functiondef(p.oid) AS definition
       FROM synchro.relations r JOIN pg_proc p ON p.oid = r.membership_function::regproc
      WHERE r.active AND r.table_id = $1`,
    [await tableIdOf(world, table)],
  );
  if (fn === undefined) throw new Error(`table "${table}" has no registered membership function to break`);
  injection.brokenFunction = { name: fn.name, definition: fn.definition };
  await provisionOf(server).exec(`CREATE OR REPLACE FUNCTION ${fn.name}(${fn.args}) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT NULL::text; END;`);
}

/** Puts the membership function broken by breakMembershipFunction back as it was. */
export async function repairMembershipFunction(world: SyncWorld): Promise<void> {
  const broken = injectionOf(world).brokenFunction;
  if (broken === undefined) throw new Error('no membership function was broken earlier in this scenario');
  await provisionOf(await world.readyServer()).exec(broken.definition);
}

/**
 * A trigger on the source table that, once, adds to the writing transaction
 * a fence message whose bytes are not UTF-8 text (two invalid bytes before a
 * note naming the table and key): a message the worker cannot decode at all,
 * as opposed to a decodable fence that fails correlation (SYNC-CAP-012).
 */
export async function injectUndecodableFence(world: SyncWorld, table: string): Promise<void> {
  const server = await world.readyServer();
  await startInjection(world);
  const tableId = await tableIdOf(world, table);
  const key = world.model.keyColumn(table).name;
  const relation = `public.${ident(table)}`;
  await provisionOf(server).exec(
    onceOnFirstInsert('harness_undecodable_fence', relation, `PERFORM pg_logical_emit_message(true, 'synchro_fence', '\\xfffe'::bytea || convert_to(json_build_object('t', ${literal(tableId)}, 'k', NEW.${ident(key)}::text)::text, 'UTF8'));`),
  );
}

/**
 * SQL for a trigger named `name` on `relation` that runs `statement` inside
 * the first transaction inserting a row, and never again (a one-row table is
 * the arm, taken by the first firing): a way to put something into exactly
 * one writing transaction, as a broken server or operator would.
 */
export function onceOnFirstInsert(name: string, relation: string, statement: string): string {
  return `
CREATE TABLE public.${name}_once (armed boolean PRIMARY KEY);
INSERT INTO public.${name}_once VALUES (true);
CREATE FUNCTION public.${name}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  fired boolean;
BEGIN
  WITH taken AS (DELETE FROM public.${name}_once RETURNING 1) SELECT count(*) > 0 INTO fired FROM taken;
  IF fired THEN
    ${statement}
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER ${name} AFTER INSERT ON ${relation} FOR EACH ROW EXECUTE FUNCTION public.${name}();`;
}

/** A constraint on the worker's projection records that refuses every new record of the table. */
export async function rejectProjectionWrites(world: SyncWorld, table: string): Promise<void> {
  const server = await world.readyServer();
  await startInjection(world);
  const tableId = await tableIdOf(world, table);
  await provisionOf(server).exec(`ALTER TABLE synchro.projections ADD CONSTRAINT harness_rejects_projection CHECK (table_id <> ${literal(tableId)}) NOT VALID`);
}
