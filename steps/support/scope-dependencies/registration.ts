/**
 * Declaring membership that depends on other rows. A capture-only relation
 * is created and registered at once. A dependent table is taken out of the
 * scenario model's installation as soon as its placement is declared (the
 * model would register it without a membership function before the next
 * step) and installed in the step that declares its impact, in one
 * transaction: table, projection, membership function, registration (which
 * returns the table ID), impact function and dependency. It has
 * to be one transaction because a membership function reading another
 * relation's projection is legal only with its dependency declared, and the
 * impact function needs the table ID the registration gives.
 */
import type { SyncWorld } from '../world.ts';
import { dependencyState } from './state.ts';

/** Marks `target` as installed for the scenario model: its dependency declaration installs it. */
export function claim(world: SyncWorld, target: string): void {
  const table = world.model.table(target);
  if (table.installed) throw new Error(`table "${target}" is already on the server; declare where its rows belong before anything reaches the server`);
  table.installed = true;
  dependencyState(world).claimed.add(target);
}
