/**
 * Installs a dependent table whose placement was declared (and claimed from
 * the scenario model) before: table, projection, membership function,
 * registration, impact function and dependency in one transaction of the
 * given connection (registration.ts says why it must be one transaction).
 * Used by the dependency steps of the scope section and by the placement
 * under a registered parent of the pull section.
 */
import type { SourceSqlControl } from '../../../harness/adapters/server.ts';
import { sqlType } from '../model.ts';
import type { SyncWorld } from '../world.ts';
import { type Impact, ident, impactFunctionName, impactSql, literal, membershipFunctionName, membershipSql } from './rules.ts';
import { dependencyState, placementOf } from './state.ts';

/** Runs `work` in one transaction of the scenario connection; a failure rolls it all back. */
export async function inOneTransaction(sql: SourceSqlControl, work: () => Promise<void>): Promise<void> {
  await sql.query('BEGIN');
  try {
    await work();
    await sql.query('COMMIT');
  } catch (error) {
    await sql.query('ROLLBACK');
    throw error;
  }
}

/** Creates and registers `target` with its declared placement and its one dependency on `dependency`. */
export async function installDependent(world: SyncWorld, sql: SourceSqlControl, target: string, dependency: string, impact: Impact): Promise<void> {
  const table = world.model.table(target);
  const claimed = dependencyState(world).claimed;
  if (!claimed.has(target)) throw new Error(`table "${target}" is already on the server; its dependency is declared together with its registration`);
  const key = world.model.keyColumn(target);
  const placement = placementOf(world, target);
  const relation = `public.${target}`;
  let tableId = '';
  await inOneTransaction(sql, async () => {
    const columns = table.columns.map((c) => `${ident(c.name)} ${sqlType(c.type)}${c.key ? ' PRIMARY KEY' : c.nullable ? '' : ' NOT NULL'}`);
    await sql.query(`CREATE TABLE public.${ident(target)} (${columns.join(', ')})`);
    await sql.query('SELECT synchro.synchro_prepare_projection_view($1)', [relation]);
    await sql.query(membershipSql(table, key, placement));
    // The impact function names target rows by table ID, which the registration returns.
    const [row] = await sql.query<{ table_id: string | null }>('SELECT synchro.synchro_register_table(relation => $1, membership_fn => $2) AS table_id', [relation, membershipFunctionName(target)]);
    if (!row?.table_id) throw new Error(`registering ${relation} returned no table ID`);
    tableId = row.table_id;
    await sql.query(impactSql(table, key, tableId, dependency, impact, 'conforming'));
    const bound = impact.maxImpactRows === undefined ? '' : `, ${impact.maxImpactRows}`;
    await sql.query(`SELECT synchro.synchro_register_membership_dependency(${literal(relation)}, ${literal(dependency)}, ${literal(impactFunctionName(target, dependency))}${bound})`);
  });
  claimed.delete(target);
  dependencyState(world).declared.set(target, { dependency, impact, tableId });
}
