/**
 * Per-scenario memory of the SYNC-SCHEMA-002 steps (IDs the scenario names
 * by label, what a client held before a refused request) and small readers
 * for the members those steps check.
 */
import { microsecondNow } from '../wire-client.ts';
import type { SyncWorld } from '../world.ts';

export interface DispatchState {
  /** Batch and mutation labels of the feature ("b1", "t9-insert") to the UUIDs sent for them. */
  labels: Map<string, string>;
  /** The authored schema a labelled mutation was first written under; a retry never rewrites it. */
  authored: Map<string, { version: number; hash: string }>;
  /** The scope_set_version a harness client held right before its refused pull. */
  scopeSetVersionBefore: Map<string, number>;
  clientVersion(label: string): string;
}

const states = new WeakMap<SyncWorld, DispatchState>();

export function dispatchState(world: SyncWorld): DispatchState {
  let state = states.get(world);
  if (state === undefined) {
    const versions = new Map<string, string>();
    state = {
      labels: new Map(),
      authored: new Map(),
      scopeSetVersionBefore: new Map(),
      clientVersion(label: string): string {
        const v = versions.get(label) ?? microsecondNow();
        versions.set(label, v);
        return v;
      },
    };
    states.set(world, state);
  }
  return state;
}

/** A member by dotted path (`schema.reason`, `scopes.add`); undefined when any step is absent. */
export function dotted(value: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((v, k) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), value);
}

/** `"name" JSON, "name" JSON` (values are JSON holding no ", " before a quote) as an object. */
export function parseMemberList(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const part of text.split(/, (?=")/)) {
    const m = /^"([^"]+)" (.+)$/.exec(part.trim());
    if (!m) throw new Error(`cannot read "${part}" as "<member>" <JSON value>`);
    out[m[1] as string] = JSON.parse(m[2] as string);
  }
  return out;
}
