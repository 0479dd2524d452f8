/**
 * Manifest rules M1-M9: lineage fields, ordering and uniqueness of IDs, key
 * and lifecycle fields, decimal parameters, indexes, and the schema hash.
 * Each takes the manifest and the pointer where it sits in its message.
 */
import { CodecError, type ColumnSpec, checkColumnSpec, isKeyType, schemaManifestHashUnchecked, utf8Order } from '../../codec/index.ts';
import type { ColumnSchema, SchemaManifest, TableSchema } from '../generated.ts';
import { duplicates, type Violation, violation } from './context.ts';

export type ManifestRule = (manifest: SchemaManifest, at: string) => Violation[];

/** M1: only the initial manifest has no parent. */
export const initialManifestHasNoParent: ManifestRule = (m, at) =>
  (m.transition_class === 'initial') === (m.parent_schema === null)
    ? []
    : [violation('M1', `${at}/parent_schema`, 'parent_schema must be null exactly when transition_class is "initial"')];

/** M2: a parent is older than its child. */
export const parentPrecedesChild: ManifestRule = (m, at) =>
  m.parent_schema !== null && m.parent_schema.version >= m.schema_version
    ? [violation('M2', `${at}/parent_schema/version`, 'parent schema version must be lower than schema_version')]
    : [];

/** M3: the compatibility floor lies in 1..version and equals the version outside Class 2. */
export const compatibilityFloorInRange: ManifestRule = (m, at) => {
  if (m.compatibility_floor > m.schema_version)
    return [violation('M3', `${at}/compatibility_floor`, 'compatibility_floor must not exceed schema_version')];
  if (m.transition_class !== 'class_2' && m.compatibility_floor !== m.schema_version)
    return [violation('M3', `${at}/compatibility_floor`, 'outside Class 2 the compatibility_floor equals schema_version')];
  return [];
};

/** M4: table IDs, relation IDs and names unique; field IDs and names unique per table; both lists sorted by ID octets. */
export const idsUniqueAndSorted: ManifestRule = (m, at) => {
  const out: Violation[] = [];
  for (const key of ['table_id', 'relation_id', 'name'] as const) {
    for (const i of duplicates(m.tables.map((t) => t[key]))) out.push(violation('M4', `${at}/tables/${i}/${key}`, `duplicate table ${key}`));
  }
  out.push(...unsorted(m.tables.map((t) => t.table_id), `${at}/tables`, 'table_id'));
  m.tables.forEach((t, ti) => {
    for (const key of ['field_id', 'name'] as const) {
      for (const i of duplicates(t.fields.map((f) => f[key]))) out.push(violation('M4', `${at}/tables/${ti}/fields/${i}/${key}`, `duplicate field ${key}`));
    }
    out.push(...unsorted(t.fields.map((f) => f.field_id), `${at}/tables/${ti}/fields`, 'field_id'));
  });
  return out;
};

function unsorted(ids: string[], pointer: string, key: string): Violation[] {
  const out: Violation[] = [];
  for (let i = 1; i < ids.length; i++) {
    if (utf8Order(ids[i - 1] ?? '', ids[i] ?? '') > 0) out.push(violation('M4', `${pointer}/${i}/${key}`, `entries must be sorted by ${key} octets`));
  }
  return out;
}

/** M5: the key field exists, is non-nullable, non-writable, and of a key type. */
export const primaryKeyFieldValid: ManifestRule = (m, at) =>
  m.tables.flatMap((t, ti) => {
    const pointer = `${at}/tables/${ti}/primary_key_field_id`;
    const field = t.fields.find((f) => f.field_id === t.primary_key_field_id);
    if (field === undefined) return [violation('M5', pointer, 'primary key names no field of the table')];
    if (field.nullable || field.writable || !isKeyType(field.type))
      return [violation('M5', pointer, 'key field must be non-nullable, non-writable, of type string, int or int64')];
    return [];
  });

/** M6: each lifecycle field is a non-writable datetime field of the table. */
export const lifecycleFieldsValid: ManifestRule = (m, at) =>
  m.tables.flatMap((t, ti) =>
    (['created_at_field_id', 'updated_at_field_id', 'deleted_at_field_id'] as const).flatMap((key) => {
      const id = t.lifecycle[key];
      if (id === null) return [];
      const field = t.fields.find((f) => f.field_id === id);
      return field !== undefined && field.type === 'datetime' && !field.writable
        ? []
        : [violation('M6', `${at}/tables/${ti}/lifecycle/${key}`, 'lifecycle field must be a non-writable datetime field of the table')];
    }),
  );

/** The codec's view of a field declaration. */
function columnSpec(f: ColumnSchema): ColumnSpec {
  const spec: ColumnSpec = { type: f.type, nullable: f.nullable };
  if (f.precision !== undefined) spec.precision = f.precision;
  if (f.scale !== undefined) spec.scale = f.scale;
  return spec;
}

/** M7: precision and scale appear exactly on decimal fields, with scale at most precision (the codec's column rule). */
export const decimalParametersValid: ManifestRule = (m, at) =>
  m.tables.flatMap((t, ti) =>
    t.fields.flatMap((f, fi) => {
      const pointer = `${at}/tables/${ti}/fields/${fi}`;
      // The codec also accepts a decimal without parameters as a lone value's spec; a manifest field must declare both.
      if (f.type === 'decimal' && (f.precision === undefined || f.scale === undefined)) return [violation('M7', pointer, 'decimal field needs precision and scale')];
      try {
        checkColumnSpec(columnSpec(f), pointer);
        return [];
      } catch (e) {
        if (e instanceof CodecError) return [violation('M7', pointer, e.message)];
        throw e;
      }
    }),
  );

/** M8: index IDs and names unique per table; every indexed field exists. */
export const indexesValid: ManifestRule = (m, at) =>
  m.tables.flatMap((t: TableSchema, ti) => {
    const out: Violation[] = [];
    for (const key of ['index_id', 'name'] as const) {
      for (const i of duplicates(t.indexes.map((x) => x[key]))) out.push(violation('M8', `${at}/tables/${ti}/indexes/${i}/${key}`, `duplicate index ${key}`));
    }
    const fields = new Set(t.fields.map((f) => f.field_id));
    t.indexes.forEach((x, xi) => {
      x.field_ids.forEach((id, k) => {
        if (!fields.has(id)) out.push(violation('M8', `${at}/tables/${ti}/indexes/${xi}/field_ids/${k}`, 'index names a field the table does not have'));
      });
    });
    return out;
  });

/**
 * M9: schema_hash is the domain-separated SHA-256 of the canonical body (computed by the codec).
 * The unchecked form keeps M9 about the arithmetic alone: breaks of M1-M8 are reported by their own rules.
 */
export const schemaHashMatchesBody: ManifestRule = (m, at) => {
  let recomputed: string;
  try {
    recomputed = schemaManifestHashUnchecked(m).hash;
  } catch (e) {
    // A body whose IDs repeat has no canonical order, so no hash can match it.
    if (e instanceof CodecError) return [violation('M9', `${at}/schema_hash`, `schema_hash cannot be recomputed: ${e.message}`)];
    throw e;
  }
  return recomputed === m.schema_hash ? [] : [violation('M9', `${at}/schema_hash`, 'schema_hash does not match the manifest body')];
};

export const MANIFEST_RULES: ReadonlyArray<{ id: string; check: ManifestRule }> = [
  { id: 'M1', check: initialManifestHasNoParent },
  { id: 'M2', check: parentPrecedesChild },
  { id: 'M3', check: compatibilityFloorInRange },
  { id: 'M4', check: idsUniqueAndSorted },
  { id: 'M5', check: primaryKeyFieldValid },
  { id: 'M6', check: lifecycleFieldsValid },
  { id: 'M7', check: decimalParametersValid },
  { id: 'M8', check: indexesValid },
  { id: 'M9', check: schemaHashMatchesBody },
];
