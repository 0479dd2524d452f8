/**
 * What integrity steps share within one scenario: the client ID behind a
 * client name (process or harness wire client), the manifests seen, the
 * message a "that change" / "that outcome" step refers to, and values the
 * scenario noted (C1, V2, claimed digests, the exchange a tamper hit).
 */
import type { Exchange } from '../../../harness/proxy/records.ts';
import type { SyncWorld } from '../world.ts';
import { type Manifest, manifestsSeen, type Obj, type RowMessage } from './oracle.ts';
import { clientIdOf, exchangesIn } from '../exchanges.ts';

export interface IntegrityState {
  /** The row-bearing message the last "the pull response change ..." step found. */
  lastMessage?: RowMessage;
  /** Named values: C1 (a checksum object), V2 (a version), claims. */
  noted: Map<string, unknown>;
  /** Scope states of a process client taken when a tamper was armed, by client name. */
  scopesBefore: Map<string, ScopeState[]>;
  /** Number of exchanges recorded when a tamper was armed, by client name. */
  armedAt: Map<string, number>;
  /** What a tamper or claim step computed, for later assertions. */
  claims: Map<string, string>;
  /** Outcomes of the pushes a scenario made, by mutation ID. */
  pushes: Obj[];
}

export interface ScopeState {
  scopeId: string;
  cursor: string | null;
  checksum: string | null;
  localChecksum: string | null;
  rebuildRequired: boolean;
}

const states = new WeakMap<SyncWorld, IntegrityState>();

export function integrity(world: SyncWorld): IntegrityState {
  let state = states.get(world);
  if (state === undefined) {
    state = { noted: new Map(), scopesBefore: new Map(), armedAt: new Map(), claims: new Map(), pushes: [] };
    states.set(world, state);
  }
  return state;
}

/** The client ID the named client presents on the wire. */
export async function exchanges(world: SyncWorld): Promise<Exchange[]> {
  return (await world.proxy()).exchanges;
}

/** Every manifest seen on the wire; asks GET /sync/schema through the proxy when none was. */
export async function manifests(world: SyncWorld): Promise<Map<string, Manifest>> {
  const proxy = await world.proxy();
  let seen = manifestsSeen(proxy.exchanges);
  if (seen.size === 0) {
    await fetch(`${proxy.url}/sync/schema`, { signal: AbortSignal.timeout(world.deadlineMs) }).then((r) => r.arrayBuffer());
    seen = manifestsSeen(proxy.exchanges);
  }
  return seen;
}

/** The current manifest: the one GET /sync/schema answers now. */
export async function currentManifest(world: SyncWorld): Promise<Manifest> {
  const proxy = await world.proxy();
  const response = await fetch(`${proxy.url}/sync/schema`, { signal: AbortSignal.timeout(world.deadlineMs) });
  const body = (await response.json()) as { manifest?: Manifest };
  if (response.status !== 200 || body.manifest === undefined) throw new Error(`GET /sync/schema answered ${response.status}`);
  return body.manifest;
}

/** The scope states a process client reports. */
export async function scopeStates(world: SyncWorld, name: string): Promise<ScopeState[]> {
  const client = await world.process(name);
  const result = await client.call<{ scopes: ScopeState[] }>('inspectScopes');
  return result.scopes;
}

export async function scopeState(world: SyncWorld, name: string, scopeId: string): Promise<ScopeState | undefined> {
  return (await scopeStates(world, name)).find((s) => s.scopeId === scopeId);
}

/** The exchanges of one endpoint by the named client, recorded after index `from`. */
export async function clientExchanges(world: SyncWorld, name: string, endpoint: Exchange['endpoint'], from = 0): Promise<Exchange[]> {
  const all = await exchanges(world);
  return exchangesIn(all, { from, endpoints: [endpoint], clientId: await clientIdOf(world, name) });
}

/** Remembers where the scenario stood when a tamper for `name` was armed. */
export async function markArmed(world: SyncWorld, name: string): Promise<void> {
  const state = integrity(world);
  state.armedAt.set(name, (await exchanges(world)).length);
  if (world.isProcess(name)) state.scopesBefore.set(name, await scopeStates(world, name));
}
