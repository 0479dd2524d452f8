/**
 * A dependent table whose rows take their scope from a row of another table
 * the scenario registers for sync (not a capture-only relation): tasks in the
 * team of their project, where projects are synced rows themselves. The
 * parent is installed first (with the scenario's other declared tables), then
 * the dependent in one transaction: table, projection, membership function
 * over projections, registration, impact function and dependency, as the
 * capture-only path does (scope-dependencies/registration.ts says why it must
 * be one transaction).
 */
import { sqlType } from '../model.ts';
import { claim } from '../scope-dependencies/registration.ts';
import { type Impact, ident, impactFunctionName, impactSql, literal, membershipSql, type Placement, templateColumns } from '../scope-dependencies/rules.ts';
import { dependencyState } from '../scope-dependencies/state.ts';
import type { SyncWorld } from '../world.ts';

export async function placeUnderRegisteredTable(world: SyncWorld, target: string, template: string, parentName: string, key: string, reference: string): Promise<void> {
  const parent = world.model.table(parentName);
  const unknown = templateColumns(template).filter((c) => !parent.columns.some((column) => column.name === c));
  if (unknown.length > 0) throw new Error(`scope template ${template} names columns ${unknown.join(', ')} that table "${parentName}" does not have`);
  if (!parent.columns.some((column) => column.name === key)) throw new Error(`table "${parentName}" has no column "${key}"`);
  const relation = `public.${parentName}`;
  const placement: Placement = { kind: 'parent', template, relation, key, reference };
  const impact: Impact = { kind: 'referencing', relation, reference, key };
  claim(world, target);
  dependencyState(world).placements.set(target, placement);
  // Installs the parent (and every other table declared so far) before the dependent that reads its projection.
  const server = await world.readyServer();
  const sql = server.sourceSql;
  if (!sql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to install table "${target}"`);
  const table = world.model.table(target);
  const pk = world.model.keyColumn(target);
  await sql.query('BEGIN');
  try {
    const columns = table.columns.map((c) => `${ident(c.name)} ${sqlType(c.type)}${c.key ? ' PRIMARY KEY' : c.nullable ? '' : ' NOT NULL'}`);
    await sql.query(`CREATE TABLE public.${ident(target)} (${columns.join(', ')})`);
    await sql.query('SELECT synchro.synchro_prepare_projection_view($1)', [`public.${target}`]);
    await sql.query(membershipSql(table, pk, placement));
    const [row] = await sql.query<{ table_id: string | null }>('SELECT synchro.synchro_register_table(relation => $1, membership_fn => $2) AS table_id', [`public.${target}`, `public.${target}_dependent_scopes`]);
    if (!row?.table_id) throw new Error(`registering public.${target} returned no table ID`);
    await sql.query(impactSql(table, pk, row.table_id, relation, impact, 'conforming'));
    await sql.query(`SELECT synchro.synchro_register_membership_dependency(${literal(`public.${target}`)}, ${literal(relation)}, ${literal(impactFunctionName(target, relation))})`);
    await sql.query('COMMIT');
    dependencyState(world).declared.set(target, { dependency: relation, impact, tableId: row.table_id });
  } catch (error) {
    await sql.query('ROLLBACK');
    throw error;
  }
}
