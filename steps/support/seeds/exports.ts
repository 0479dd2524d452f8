/**
 * The portable seed export a scenario made and the codec's view of it: the
 * manifest entry of a scope, the records of its pages in arrival order, and
 * the manifest the export's schema hash names.
 */
import type { SeedControl, SeedExport } from '../../../harness/adapters/server.ts';
import { currentManifest, manifests } from '../integrity/context.ts';
import type { Manifest, Obj } from '../integrity/oracle.ts';
import type { SyncWorld } from '../world.ts';

interface ScenarioExport {
  /** The scope the scenario asked for. */
  scope: string;
  pageLimit: number | undefined;
  result: SeedExport;
}

const exports = new WeakMap<SyncWorld, ScenarioExport>();

export async function seedControl(world: SyncWorld): Promise<SeedControl> {
  const server = await world.readyServer();
  if (!server.seed) throw new Error(`server adapter "${server.id}" has no seed capability`);
  return server.seed;
}

export function remember(world: SyncWorld, done: ScenarioExport): void {
  exports.set(world, done);
}

export function lastExport(world: SyncWorld): ScenarioExport {
  const done = exports.get(world);
  if (done === undefined) throw new Error('no portable seed export was made in this scenario');
  return done;
}

export function manifestOf(done: ScenarioExport): Obj {
  const m = done.result.manifest;
  if (typeof m !== 'object' || m === null || Array.isArray(m)) throw new Error(`the seed manifest is not a JSON object: ${JSON.stringify(m)}`);
  return m as Obj;
}

/** The manifest entry of `scope`, or undefined when the export does not list it. */
export function entryOf(done: ScenarioExport, scope: string): Obj | undefined {
  const list = manifestOf(done).portable_scopes;
  return Array.isArray(list) ? (list as Obj[]).find((s) => s.id === scope) : undefined;
}

export function pagesOf(done: ScenarioExport, scope: string): Obj[] {
  return (done.result.pages[scope] ?? []) as Obj[];
}

export function recordsOf(done: ScenarioExport, scope: string): Obj[] {
  return pagesOf(done, scope).flatMap((p) => (Array.isArray(p.records) ? (p.records as Obj[]) : []));
}

/** The published manifest whose hash the export names, or undefined when the server never published it. */
export async function exportSchema(world: SyncWorld, done: ScenarioExport): Promise<Manifest | undefined> {
  const hash = manifestOf(done).schema_hash;
  const current = await currentManifest(world);
  if (current.schema_hash === hash) return current;
  return (await manifests(world)).get(String(hash));
}
