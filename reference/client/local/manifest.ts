/**
 * The local reading of a verified schema manifest: which SQLite table and
 * column stands for each logical table and field, which fields the
 * application authors (and so travel in mutations), and the digest shape of
 * each table.
 */
import { readTableShape, type TableShape, verifySchemaManifest } from '../../../harness/codec/index.ts';
import type { SchemaManifest, TableSchema } from '../../../harness/wire/generated.ts';
import { validate } from '../../../harness/wire/validate.ts';
import { ClientError } from '../errors.ts';

export type PortableType = TableSchema['fields'][number]['type'];

export interface LocalColumn {
  fieldId: string;
  name: string;
  type: PortableType;
  /** Written by the application and captured into mutations. */
  authored: boolean;
}

export interface LocalTable {
  tableId: string;
  name: string;
  pk: LocalColumn;
  columns: LocalColumn[];
  /** Column holding the soft-delete time, when the table has one. */
  deletedAt: LocalColumn | undefined;
  shape: TableShape;
}

export interface LocalSchema {
  version: number;
  hash: string;
  manifest: SchemaManifest;
  tables: LocalTable[];
  byId: Map<string, LocalTable>;
  byName: Map<string, LocalTable>;
}

/** Schema-validates a manifest and recomputes its hash; a failure is a typed schema error. */
export function verifyManifest(manifest: unknown): SchemaManifest {
  const checked = validate('schema-manifest', manifest);
  if (!checked.ok) {
    throw new ClientError('schema', 'invalid_manifest', `manifest is not schema-valid: ${checked.errors.map((e) => `${e.pointer} ${e.message}`).join('; ')}`, false, 'none');
  }
  try {
    verifySchemaManifest(manifest);
  } catch (e) {
    throw new ClientError('schema', 'invalid_manifest', `manifest hash does not verify: ${(e as Error).message}`, false, 'none');
  }
  return checked.value;
}

export function localSchema(manifest: SchemaManifest): LocalSchema {
  const tables = manifest.tables.map((t): LocalTable => {
    const lifecycle = new Set([t.lifecycle.created_at_field_id, t.lifecycle.updated_at_field_id, t.lifecycle.deleted_at_field_id]);
    const columns = t.fields.map(
      (f): LocalColumn => ({ fieldId: f.field_id, name: f.name, type: f.type, authored: f.writable && f.field_id !== t.primary_key_field_id && !lifecycle.has(f.field_id) }),
    );
    const pk = columns.find((c) => c.fieldId === t.primary_key_field_id);
    if (pk === undefined) throw new ClientError('schema', 'invalid_manifest', `table ${t.table_id} lacks its key field`, false, 'none');
    const deletedAt = columns.find((c) => c.fieldId === t.lifecycle.deleted_at_field_id);
    return { tableId: t.table_id, name: t.name, pk, columns, deletedAt, shape: readTableShape(t) };
  });
  return {
    version: manifest.schema_version,
    hash: manifest.schema_hash,
    manifest,
    tables,
    byId: new Map(tables.map((t) => [t.tableId, t])),
    byName: new Map(tables.map((t) => [t.name.toLowerCase(), t])),
  };
}

/** SQLite storage for each portable type: the wire form where it is text, native storage otherwise. */
export function sqliteType(type: PortableType): string {
  switch (type) {
    case 'int':
    case 'boolean':
      return 'INTEGER';
    case 'float':
      return 'REAL';
    case 'bytes':
      return 'BLOB';
    default:
      return 'TEXT';
  }
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export function quoteText(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
