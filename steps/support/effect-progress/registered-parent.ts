/**
 * A dependent table whose rows take their scope from a row of another table
 * the scenario registers for sync (not a capture-only relation): tasks in the
 * team of their project, where projects are synced rows themselves. The
 * parent is installed first (with the scenario's other declared tables), then
 * the dependent in one transaction (scope-dependencies/install.ts), as the
 * capture-only path does.
 */
import { installDependent } from '../scope-dependencies/install.ts';
import { claim } from '../scope-dependencies/registration.ts';
import { type Impact, type Placement, templateColumns } from '../scope-dependencies/rules.ts';
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
  await installDependent(world, sql, target, relation, impact);
}
