/**
 * Reading what crossed the proxy: the requests a client sent, the answers the
 * server gave (as sent, before any rewrite), the manifests it published, and
 * the number tokens of a body with their exact spelling.
 */
import { isJsonObject, type JsonValue, parseJsonBytes, RawNumber } from '../../../harness/codec/index.ts';
import type { Exchange } from '../../../harness/proxy/records.ts';
import { bodyOf, upstreamOf } from '../exchanges.ts';
import type { SyncWorld } from '../world.ts';

export type Obj = Record<string, unknown>;

export interface ManifestTable {
  table_id: string;
  name: string;
  primary_key_field_id: string;
  fields: { field_id: string; name: string; type: string; nullable?: boolean }[];
}

export async function exchanges(world: SyncWorld): Promise<readonly Exchange[]> {
  return (await world.proxy()).exchanges.filter((e) => e.done);
}

/** Every table of every manifest the server published in the scenario, by table id. */
export async function manifestTables(world: SyncWorld): Promise<Map<string, ManifestTable>> {
  return publishedTables(await exchanges(world));
}

/** Every table of every manifest the server's answers in `log` published, by table id. */
export function publishedTables(log: readonly Exchange[]): Map<string, ManifestTable> {
  const out = new Map<string, ManifestTable>();
  for (const e of log) {
    const answer = upstreamOf(e);
    if (answer?.status !== 200) continue;
    const body = bodyOf(answer.body) as Obj | undefined;
    const manifest = (e.endpoint === 'connect' ? body?.schema_definition : e.endpoint === 'schema' ? body?.manifest : undefined) as { tables?: ManifestTable[] } | undefined;
    for (const table of manifest?.tables ?? []) out.set(table.table_id, table);
  }
  return out;
}

/** The table a name or id designates, from the published manifests. */
export async function tableNamed(world: SyncWorld, nameOrId: string): Promise<ManifestTable> {
  const tables = await manifestTables(world);
  const table = tables.get(nameOrId) ?? [...tables.values()].find((t) => t.name === nameOrId);
  if (table === undefined) throw new Error(`no manifest the server published in this scenario has a table "${nameOrId}"`);
  return table;
}

export function fieldId(table: ManifestTable, column: string): string {
  const field = table.fields.find((f) => f.name === column || f.field_id === column);
  if (field === undefined) throw new Error(`table ${table.name} has no field "${column}"`);
  return field.field_id;
}

/** The single value of a wire `pk` object. */
export function keyValue(pk: unknown): unknown {
  return typeof pk === 'object' && pk !== null ? Object.values(pk)[0] : pk;
}

export interface NumberTokenAt {
  pointer: string;
  text: string;
}

/** Every number token of a JSON body with its pointer and exact text; undefined when the body is not JSON. */
export function numberTokens(body: Uint8Array): NumberTokenAt[] | undefined {
  let tree: JsonValue;
  try {
    tree = parseJsonBytes(body);
  } catch {
    return undefined;
  }
  const out: NumberTokenAt[] = [];
  const walk = (value: JsonValue, pointer: string) => {
    if (value instanceof RawNumber) out.push({ pointer, text: value.raw });
    else if (Array.isArray(value)) value.forEach((item, k) => {
        walk(item, `${pointer}/${k}`);
      });
    else if (isJsonObject(value)) for (const [name, member] of Object.entries(value)) walk(member as JsonValue, `${pointer}/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`);
  };
  walk(tree, '');
  return out;
}
