/**
 * Registered tables as the push path needs them: logical IDs next to the
 * physical names, each field's portable type and writability, the SQL that
 * reads a row in wire form, and the columns that make a row lock "key" strength.
 */
import type { PoolClient } from 'pg';
import { type PortableType, readTableShape, type TableShape } from '../../../harness/codec/index.ts';
import { fault } from './faults.ts';

export interface FieldDef {
  fieldId: string;
  column: string;
  type: PortableType;
  nullable: boolean;
  writable: boolean;
  precision?: number;
  scale?: number;
  /** SQL type as PostgreSQL prints it, used to cast parameters. */
  sqlType: string;
}

export interface TableDef {
  tableId: string;
  relationId: string;
  name: string;
  qualified: string;
  pkColumn: string;
  pkFieldId: string;
  pkType: 'string' | 'int' | 'int64';
  updatedAtColumn: string | null;
  deletedAtColumn: string | null;
  pushPolicy: 'enabled' | 'disabled';
  composition: 'single_scope' | 'multi_scope';
  fields: FieldDef[];
  byId: Map<string, FieldDef>;
  /** Columns of live, plain unique indexes of the registered relation when the catalog was loaded (push reads the current ones: push/lock-mode.ts). */
  keyColumns: Set<string>;
  shape: TableShape;
  /** Select list producing each synced field in its wire form, aliased by field ID. */
  selectList: string;
}

export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** SQL expression giving the wire text of a column (JSON numbers, booleans and bytea come back natively). */
function wireExpression(f: FieldDef): string {
  const c = quoteIdent(f.column);
  switch (f.type) {
    case 'int':
      return `${c}::int4`;
    case 'float':
      return `${c}::float8`;
    case 'boolean':
    case 'bytes':
      return c;
    case 'datetime':
      if (fault('offset-datetime')) return `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')`; // fault: server:offset-datetime
      return `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
    case 'date':
      return `to_char(${c}, 'YYYY-MM-DD')`;
    case 'time':
      return `to_char(date '2000-01-01' + ${c}, 'HH24:MI:SS.US')`;
    default:
      return `${c}::text`;
  }
}

export function manifestTable(t: TableDef): Record<string, unknown> {
  return {
    table_id: t.tableId,
    relation_id: t.relationId,
    name: t.name,
    primary_key_field_id: t.pkFieldId,
    lifecycle: {
      created_at_field_id: null,
      updated_at_field_id: t.fields.find((f) => f.column === t.updatedAtColumn)?.fieldId ?? null,
      deleted_at_field_id: t.fields.find((f) => f.column === t.deletedAtColumn)?.fieldId ?? null,
    },
    composition: t.composition,
    fields: t.fields.map((f) => ({
      field_id: f.fieldId,
      name: f.column,
      type: f.type,
      nullable: f.nullable,
      writable: f.writable,
      ...(f.type === 'decimal' ? { precision: f.precision, scale: f.scale } : {}),
    })),
    indexes: [],
  };
}

interface Row {
  table_id: string;
  relation_id: string;
  physical_schema: string;
  physical_relation: string;
  pk_column: string;
  pk_field_id: string;
  pk_type: TableDef['pkType'];
  updated_at_column: string | null;
  deleted_at_column: string | null;
  push_policy: TableDef['pushPolicy'];
  composition: TableDef['composition'];
  fields: Array<{ field_id: string; column_name: string; portable_type: PortableType; nullable: boolean; writable: boolean; numeric_precision: number | null; numeric_scale: number | null; sql_type: string }>;
  key_columns: string[];
}

/** The FROM items naming the relations (`r`) and fields (`f`): live, or from the snapshot in parameter `param`. */
export function registrySources(param: string | undefined): [string, string] {
  if (param === undefined) return ['synchro.relations r', 'synchro.fields f'];
  return [`jsonb_populate_recordset(NULL::synchro.relations, ${param}::jsonb -> 'relations') r`, `jsonb_populate_recordset(NULL::synchro.fields, ${param}::jsonb -> 'fields') f`];
}

/**
 * Active registered tables. Every client-facing caller reads synced tables only (the default);
 * the capture worker also loads capture dependencies, whose rows it projects but never publishes,
 * and with `snapshot` (a registry generation's stored relations and fields, 067 SQL) reads the
 * registry as that generation left it rather than as it is now.
 */
export async function loadTables(db: PoolClient, kinds: readonly string[] = ['synced'], snapshot?: unknown): Promise<Map<string, TableDef>> {
  const [relations, fields] = registrySources(snapshot === undefined ? undefined : '$2');
  const { rows } = await db.query<Row>(`
    SELECT r.table_id, r.relation_id, r.physical_schema, r.physical_relation, r.pk_column, r.pk_field_id, r.pk_type,
           r.updated_at_column, r.deleted_at_column, r.push_policy, r.composition,
           (SELECT json_agg(json_build_object('field_id', f.field_id, 'column_name', f.column_name, 'portable_type', f.portable_type,
                     'nullable', f.nullable, 'writable', f.writable, 'numeric_precision', f.numeric_precision,
                     'numeric_scale', f.numeric_scale, 'sql_type', format_type(a.atttypid, a.atttypmod)) ORDER BY f.field_id COLLATE "C")
              FROM ${fields} JOIN pg_attribute a ON a.attrelid = r.physical_relation_oid AND a.attname = f.column_name
             WHERE f.table_id = r.table_id) AS fields,
           ARRAY(SELECT DISTINCT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid
                  AND a.attnum = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1])
                  WHERE i.indrelid = r.physical_relation_oid AND i.indisunique AND i.indislive
                    AND i.indpred IS NULL AND i.indexprs IS NULL) AS key_columns
      FROM ${relations} WHERE r.active AND r.kind = ANY ($1::text[])`, snapshot === undefined ? [kinds] : [kinds, JSON.stringify(snapshot)]);
  const out = new Map<string, TableDef>();
  // Manifest names are unique; a relation name used in two schemas is shown qualified.
  const uses = new Map<string, number>();
  for (const r of rows) uses.set(r.physical_relation, (uses.get(r.physical_relation) ?? 0) + 1);
  for (const r of rows) {
    const fields: FieldDef[] = r.fields.map((f) => ({
      fieldId: f.field_id,
      column: f.column_name,
      type: f.portable_type,
      nullable: f.nullable,
      writable: f.writable,
      ...(f.numeric_precision === null ? {} : { precision: f.numeric_precision }),
      ...(f.numeric_scale === null ? {} : { scale: f.numeric_scale }),
      sqlType: f.sql_type,
    }));
    const def: TableDef = {
      tableId: r.table_id,
      relationId: r.relation_id,
      name: (uses.get(r.physical_relation) ?? 0) > 1 ? `${r.physical_schema}.${r.physical_relation}` : r.physical_relation,
      qualified: `${quoteIdent(r.physical_schema)}.${quoteIdent(r.physical_relation)}`,
      pkColumn: r.pk_column,
      pkFieldId: r.pk_field_id,
      pkType: r.pk_type,
      updatedAtColumn: r.updated_at_column,
      deletedAtColumn: r.deleted_at_column,
      pushPolicy: r.push_policy,
      composition: r.composition,
      fields,
      byId: new Map(fields.map((f) => [f.fieldId, f])),
      keyColumns: new Set(r.key_columns),
      shape: undefined as unknown as TableShape,
      selectList: fields.map((f) => `${wireExpression(f)} AS ${quoteIdent(f.fieldId)}`).join(', '),
    };
    def.shape = readTableShape(manifestTable(def));
    out.set(def.tableId, def);
  }
  return out;
}
