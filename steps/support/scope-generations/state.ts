/**
 * What the membership-generation scenarios remember beside the World: the
 * cursors a client held under a label, the membership generation of each
 * scope under a label, the rebuild sessions a client left open part-way, and
 * the last whole rebuild a step fetched.
 */
import type { InspectControl } from '../../../harness/adapters/server.ts';
import type { RebuildRun } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

/** A rebuild attempt stopped after its first page: what continuing it sends. */
export interface OpenRebuild {
  rebuildId: string;
  cursor: string;
  limit: number;
}

export interface GenerationsState {
  /** Label → scope → cursor (null when the client held none). */
  cursors: Map<string, Map<string, string | null>>;
  /** Label → scope → membership generation. */
  generations: Map<string, Map<string, bigint>>;
  /** `client/scope` → the open rebuild of that scope. */
  openRebuilds: Map<string, OpenRebuild>;
  lastRebuild: { scope: string; run: RebuildRun } | undefined;
}

const states = new WeakMap<SyncWorld, GenerationsState>();

export function generationsState(world: SyncWorld): GenerationsState {
  let state = states.get(world);
  if (!state) {
    state = { cursors: new Map(), generations: new Map(), openRebuilds: new Map(), lastRebuild: undefined };
    states.set(world, state);
  }
  return state;
}

export function labelled<T>(map: ReadonlyMap<string, T>, label: string, what: string): T {
  const value = map.get(label);
  if (value === undefined) throw new Error(`no ${what} was recorded as "${label}" earlier in this scenario`);
  return value;
}

/** Scope IDs written as `a, b, c` in one quoted step argument. */
export function scopeList(text: string): string[] {
  return text
    .split(',')
    .map((scope) => scope.trim())
    .filter((scope) => scope !== '');
}

async function inspection(world: SyncWorld): Promise<InspectControl> {
  const server = await world.readyServer();
  if (!server.inspect) throw new Error(`server adapter "${server.id}" has no inspect capability to read membership generations`);
  return server.inspect;
}

/**
 * The membership generation of every scope the server keeps lineage for. A
 * scope without a lineage row has never had its rule changed, so it is at the
 * first generation: the 004 sheet makes generations positive and monotonic,
 * and no bump has happened yet.
 */
export async function membershipGenerations(world: SyncWorld): Promise<Map<string, bigint>> {
  const rows = await (await inspection(world)).query<{ scope_id: string; g: string }>('SELECT scope_id, membership_generation::text AS g FROM synchro.scope_state');
  return new Map(rows.map((row) => [row.scope_id, BigInt(row.g)]));
}

export const FIRST_GENERATION = 1n;

export function generationOf(generations: ReadonlyMap<string, bigint>, scope: string): bigint {
  return generations.get(scope) ?? FIRST_GENERATION;
}
