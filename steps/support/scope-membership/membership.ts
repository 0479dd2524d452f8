/**
 * Deterministic scope membership: where a table's rows belong (placements
 * listed with their repeats), the membership edges server inspection shows
 * for a row, and membership functions that fail for one row so that capture
 * must block rather than empty the row's scopes.
 */
import type { SyncWorld } from '../world.ts';

interface MembershipState {
  /** The membership function the scenario last registered, by table name. */
  functions: Map<string, string>;
  /** Edge lists a step recorded under a label. */
  edges: Map<string, string[]>;
}

const states = new WeakMap<SyncWorld, MembershipState>();

export function membershipState(world: SyncWorld): MembershipState {
  let state = states.get(world);
  if (!state) {
    state = { functions: new Map(), edges: new Map() };
    states.set(world, state);
  }
  return state;
}

export const relationOf = (table: string) => `public.${table}`;
