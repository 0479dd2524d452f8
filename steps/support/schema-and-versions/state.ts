/**
 * What the schema and version steps remember within one scenario: noted
 * manifests, the outcome of provisioning a minimum client version, marks in
 * the proxy's exchange log (where an application call began).
 */
import type { SchemaManifest } from '../../../harness/wire/index.ts';
import type { SyncWorld } from '../world.ts';

export interface VersionProbe {
  version: unknown;
  status: number;
  code: unknown;
}

export interface SchemaStepsState {
  manifests: Map<string, SchemaManifest>;
  /** Set once a step tried to provision a minimum client version. */
  minimum?: { version: string; error?: Error };
  /** Where the last application call a step made began, per client. */
  callMarks: Map<string, number>;
  /** The installed schema and generation a client reported before an explicit reset. */
  beforeReset: Map<string, { schema: { version: number; hash: string } | null; clientGeneration: number | null }>;
  /** The generated-version connects of a property scenario and the failure fast-check reported, if any. */
  property?: { minimum: string; probes: VersionProbe[]; failure?: string };
}

const states = new WeakMap<SyncWorld, SchemaStepsState>();

export function stateOf(world: SyncWorld): SchemaStepsState {
  let state = states.get(world);
  if (state === undefined) {
    state = { manifests: new Map(), callMarks: new Map(), beforeReset: new Map() };
    states.set(world, state);
  }
  return state;
}
