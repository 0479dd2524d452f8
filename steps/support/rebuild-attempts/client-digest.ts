/**
 * The scope digest the harness codec computes from what a client under test
 * holds: the rows its provenance says the scope justifies, the server_version
 * it stored for each, and the row values it has in its local tables. Nothing
 * here comes from the server's answers, so the client's own checksum is
 * compared against an independent recomputation of its state.
 */
import { currentManifest } from '../integrity/context.ts';
import { type ManifestTable, scopeDigestHex } from '../integrity/oracle.ts';
import { provenanceOf } from '../scope-repair/provenance.ts';
import type { SyncWorld } from '../world.ts';

/** A local value in its wire form; only the types these scenarios store are converted, anything else is refused. */
function wireValue(table: ManifestTable, field: ManifestTable['fields'][number], value: unknown): unknown {
  if (value === null) return null;
  if (field.type === 'string' && typeof value === 'string') return value;
  if (field.type === 'int' && typeof value === 'number' && Number.isSafeInteger(value)) return value;
  throw new Error(`column "${field.name}" of "${table.name}" is of type ${field.type} holding ${JSON.stringify(value)}: its wire form is not derived here`);
}

function missing(table: ManifestTable, column: string): never {
  throw new Error(`the local table "${table.name}" has no column "${column}" to read`);
}

/** The codec's digest (lowercase hex) of `scope` as client `name` holds it now. */
export async function clientScopeDigest(world: SyncWorld, name: string, scope: string): Promise<{ digest: string; rows: number }> {
  const manifest = await currentManifest(world);
  const client = await world.process(name);
  const edges = (await provenanceOf(world, name)).filter((edge) => edge.scopeId === scope);
  const { versions } = await client.call<{ versions: { table: string; recordId: string; serverVersion: string }[] }>('inspectRowVersions');
  const rows = [];
  for (const edge of edges) {
    const table = manifest.tables.find((t) => t.table_id === edge.table);
    if (table === undefined) throw new Error(`client "${name}" holds provenance for table ${edge.table}, which the current manifest does not list`);
    const key = table.fields.find((f) => f.field_id === table.primary_key_field_id);
    if (key === undefined) throw new Error(`the manifest names no key field for table ${table.name}`);
    const version = versions.find((v) => v.table === edge.table && v.recordId === edge.recordId)?.serverVersion;
    world.assert.ok(typeof version === 'string', `client "${name}" stores a server_version for ${table.name} ${edge.recordId}, which scope ${scope} justifies`);
    const { rows: found } = await client.call<{ rows: Record<string, unknown>[] }>('query', { sql: `SELECT * FROM "${table.name}" WHERE CAST("${key.name}" AS TEXT) = ?`, params: [edge.recordId] });
    world.assert.equal(found.length, 1, `client "${name}" holds row ${edge.recordId} of ${table.name}, which scope ${scope} justifies`);
    const local = found[0] as Record<string, unknown>;
    const row = Object.fromEntries(table.fields.map((field) => [field.field_id, wireValue(table, field, field.name in local ? local[field.name] : missing(table, field.name))]));
    rows.push({ table: table.table_id, row, serverVersion: version as string });
  }
  return { digest: scopeDigestHex(manifest, scope, rows), rows: rows.length };
}
