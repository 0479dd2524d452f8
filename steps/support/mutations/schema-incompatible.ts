/**
 * Helpers of the schema-incompatible intent steps (SYNC-MUT-020): the
 * manifests a scenario named (S1, S2) and the field IDs their columns had,
 * a removed field included, and the whole intent a client showed for one
 * record, noted so that later inspections can be compared with it.
 */
import type { SchemaManifest } from '../../../harness/wire/index.ts';
import { bodyOf, deliveredOf } from '../exchanges.ts';
import { stateOf } from '../schema-and-versions/state.ts';
import type { SyncWorld } from '../world.ts';
import type { QueueRecord } from './state.ts';

export interface SchemaRef {
  version: number;
  hash: string;
}

/** Every manifest the scenario saw: noted ones and every schema_definition a connect answer delivered. */
async function knownManifests(world: SyncWorld): Promise<SchemaManifest[]> {
  const out = [...stateOf(world).manifests.values()];
  for (const e of (await world.proxy()).exchanges) {
    if (e.endpoint !== 'connect') continue;
    const definition = (bodyOf(deliveredOf(e)?.body) as { schema_definition?: SchemaManifest } | undefined)?.schema_definition;
    if (definition !== undefined) out.push(definition);
  }
  return out;
}

/** The manifest noted under `label` (S1, S2) by the "schema is remembered as" step. */
export function labelledManifest(world: SyncWorld, label: string): SchemaManifest {
  const manifest = stateOf(world).manifests.get(label);
  if (manifest === undefined) throw new Error(`no schema was remembered as "${label}" earlier in this scenario`);
  return manifest;
}

export function refOf(manifest: SchemaManifest): SchemaRef {
  return { version: manifest.schema_version, hash: manifest.schema_hash };
}

/** The field ID `column` of `table` had in any manifest the scenario saw (a removed field keeps its ID). */
export async function fieldIdOf(world: SyncWorld, table: string, column: string): Promise<string> {
  const ids = new Set<string>();
  for (const manifest of await knownManifests(world)) {
    for (const t of manifest.tables.filter((x) => x.name === table)) for (const f of t.fields) if (f.name === column) ids.add(f.field_id);
  }
  if (ids.size !== 1) throw new Error(`the manifests of this scenario give ${ids.size} field IDs for column "${column}" of table "${table}": ${[...ids].join(', ')}`);
  return [...ids][0] as string;
}

/** Field IDs in increasing byte order of their UTF-8 form. */
export function byteOrder(ids: readonly string[]): string[] {
  return [...ids].sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

const noted = new WeakMap<SyncWorld, Map<string, QueueRecord>>();

/** Notes a record as the client showed it, under `label`. */
export function noteIntent(world: SyncWorld, label: string, record: QueueRecord): void {
  const map = noted.get(world) ?? new Map<string, QueueRecord>();
  map.set(label, structuredClone(record));
  noted.set(world, map);
}

export function notedIntent(world: SyncWorld, label: string): QueueRecord {
  const record = noted.get(world)?.get(label);
  if (record === undefined) throw new Error(`no mutation record was remembered as "${label}" earlier in this scenario`);
  return record;
}
