/**
 * The quarantine record of SYNC-CAP-006 as server inspection shows it, and a
 * membership function broken for one row only, so a transaction writing
 * several rows fails on one of them.
 */
import { onceOnFirstInsert } from '../capture/failure-injection.ts';
import { inspectRows, tableIdOf } from '../capture/inspection.ts';
import type { SyncWorld } from '../world.ts';

/** Every member of the record, as text where the database stores text. */
export type QuarantineRow = Record<string, unknown> & { stream_generation: string; table_id: string | null };

/** The one active quarantine record. */
export async function quarantineAt(world: SyncWorld): Promise<QuarantineRow> {
  const rows = await inspectRows<{ r: QuarantineRow }>(world, "SELECT to_jsonb(q) AS r FROM synchro.wal_poison q WHERE lifecycle = 'active' ORDER BY id");
  if (rows.length !== 1) throw new Error(`server inspection shows ${rows.length} active quarantine records, not one`);
  return (rows[0] as { r: QuarantineRow }).r;
}

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Replaces the table's registered membership function by one answering a NULL scope for `key` and its usual scopes otherwise. */
export async function breakMembershipFunctionFor(world: SyncWorld, table: string, key: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to put the failure in place`);
  const [fn] = await inspectRows<{ name: string; args: string; arg: string; definition: string }>(
    world,
    `SELECT r.membership_function AS name, pg_get_function_arguments(p.oid) AS args, coalesce(p.proargnames[1], '$1') AS arg, pg_get_functiondef(p.oid) AS definition
       FROM synchro.relations r JOIN pg_proc p ON p.oid = r.membership_function::regproc
      WHERE r.active AND r.table_id = $1`,
    [await tableIdOf(world, table)],
  );
  if (fn === undefined) throw new Error(`table "${table}" has no registered membership function to break`);
  // A copy of the original answers for every other row; the registered function keeps its identity (same OID).
  const kept = `${fn.name}_harness_kept`;
  const bare = fn.name.split('.').at(-1) as string;
  // A SQL-standard body names its parameters qualified by the function's name: the copy's by its own.
  const copy = fn.definition.replace(`FUNCTION ${fn.name}(`, `FUNCTION ${kept}(`).replaceAll(`${bare}.`, `${bare}_harness_kept.`);
  if (copy === fn.definition) throw new Error(`the definition of ${fn.name} does not name it as expected: ${fn.definition.slice(0, 200)}`);
  await server.provision.exec(copy);
  await server.provision.exec(`
CREATE OR REPLACE FUNCTION ${fn.name}(${fn.args}) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC
  SELECT NULL::text WHERE ${fn.arg}::text = ${literal(key)}
  UNION ALL SELECT s FROM ${kept}(${fn.arg}) AS s WHERE ${fn.arg}::text <> ${literal(key)};
END;`);
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * Stores a pending registry generation of `table` that nobody validated, and
 * a trigger that, once, puts that generation's activation message
 * (`synchro_registry`) into the next transaction writing the table: the
 * worker meets an activation it must refuse inside an ordinary write, as it
 * would after an operator committed a registry change that skipped validation.
 */
export async function activateUnvalidatedGenerationNext(world: SyncWorld, table: string): Promise<void> {
  const server = await world.readyServer();
  if (!server.sourceSql || !server.provision) throw new Error(`server adapter "${server.id}" needs the sourceSql and provision capabilities to stage an unvalidated registry generation`);
  const [staged] = await server.sourceSql.query<{ g: string }>("SELECT synchro.registry_stage_generation($1, '{}', false)::text AS g", [`public.${ident(table)}`]);
  if (staged?.g === undefined) throw new Error(`no pending generation of table "${table}" was staged`);
  await server.provision.exec(onceOnFirstInsert('harness_unvalidated_activation', `public.${ident(table)}`, `PERFORM pg_logical_emit_message(true, 'synchro_registry', ${literal(staged.g)});`));
}
