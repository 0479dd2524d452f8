/**
 * server_version as an opaque, server-minted equality token: its shape and
 * raw JSON form on the wire, the refusal of base versions outside that
 * shape, freshness on every write, independence from client data, and (with
 * the alias relay renaming versions) a client that sends back exactly the
 * latest version it was given.
 */
import type { SyncWorld } from '../world.ts';

interface VersionState {
  /** Row id → table and the version the client was given when it inserted the row. */
  held: Map<string, { table: string; version: string }>;
  /** Versions reported for a row by the generated writes, each with the base it was written over. */
  writes: Map<string, { version: string; base: string; kind: string }[]>;
}

const states = new WeakMap<SyncWorld, VersionState>();

export function state(world: SyncWorld): VersionState {
  let s = states.get(world);
  if (!s) {
    s = { held: new Map(), writes: new Map() };
    states.set(world, s);
  }
  return s;
}
