/**
 * What the scope-repair scenarios remember beside the World: where in the
 * proxy's log a tampered terminal checksum was armed for each client (the
 * repair it causes starts there), and pictures of one scope's state on a
 * client, taken under a label before the repair, to compare with after it.
 */
import type { SyncWorld } from '../world.ts';

export interface ScopePicture {
  /** The client's own report of the scope: cursor, checksums, rebuild flag. */
  scope: Record<string, unknown> | undefined;
  /** The scope's provenance edges, as `table/record`, sorted. */
  provenance: string[];
}

/** A picture under a label, with where the proxy's log stood when it was taken. */
export interface RecordedPicture {
  picture: ScopePicture;
  logIndex: number;
}

interface RepairState {
  armedAt: Map<string, number>;
  pictures: Map<string, RecordedPicture>;
}

const states = new WeakMap<SyncWorld, RepairState>();

export function repairState(world: SyncWorld): RepairState {
  let state = states.get(world);
  if (state === undefined) {
    state = { armedAt: new Map(), pictures: new Map() };
    states.set(world, state);
  }
  return state;
}

/** Reads what client `name` reports about `scopeId`: its scope entry and its provenance edges. */
export async function pictureOf(world: SyncWorld, name: string, scopeId: string): Promise<ScopePicture> {
  const client = await world.process(name);
  const { scopes } = await client.call<{ scopes: Record<string, unknown>[] }>('inspectScopes');
  const { provenance } = await client.call<{ provenance: { scopeId: string; table: string; recordId: string }[] }>('inspectProvenance');
  return {
    scope: scopes.find((s) => s.scopeId === scopeId),
    provenance: provenance
      .filter((edge) => edge.scopeId === scopeId)
      .map((edge) => `${edge.table}/${edge.recordId}`)
      .sort(),
  };
}
