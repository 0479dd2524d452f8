/**
 * The rules a schema manifest must meet before it has a schema hash at all
 * (wire §2.7 and rules M1-M8; 005 "Portable type system"; 002 "never
 * writable" fields). schemaManifestHash and verifySchemaManifest run them, so
 * neither hashes nor accepts a manifest the protocol refuses.
 *
 * Collections may arrive in any order: the hash sorts tables, fields and
 * indexes by their IDs (005), so order cannot make a manifest invalid here.
 */
import { CodecError, pointer } from './errors.ts';
import { checkIdentifier } from './identifiers.ts';
import { exactMembers, type Obj, readEnvelopeInteger, readObject, readSchemaRef } from './json-shape.ts';
import { isKeyType, parsePortableType } from './portable-types.ts';
import { type ColumnSpec, checkColumnSpec } from './wire-values.ts';

const MANIFEST_REQUIRED = ['schema_version', 'parent_schema', 'transition_class', 'compatibility_floor', 'tables'] as const;
const TABLE_MEMBERS = ['table_id', 'relation_id', 'name', 'primary_key_field_id', 'lifecycle', 'composition', 'fields', 'indexes'] as const;
const FIELD_REQUIRED = ['field_id', 'name', 'type', 'nullable', 'writable'] as const;
const LIFECYCLE_MEMBERS = ['created_at_field_id', 'updated_at_field_id', 'deleted_at_field_id'] as const;
const INDEX_MEMBERS = ['index_id', 'name', 'field_ids', 'unique'] as const;
const TRANSITION_CLASSES = ['initial', 'class_2', 'class_3', 'class_4'];
const COMPOSITIONS = ['single_scope', 'multi_scope'];
const HASH_HEX = /^[0-9a-f]{64}$/;

const bad = (path: string, why: string): never => {
  throw new CodecError('invalid_manifest', path, why);
};

function readArray(v: unknown, path: string, what: string): unknown[] {
  if (!Array.isArray(v)) bad(path, `${what} must be an array`);
  return v as unknown[];
}

function readBoolean(v: unknown, path: string, what: string): boolean {
  if (typeof v !== 'boolean') bad(path, `${what} must be true or false`);
  return v as boolean;
}

function readEnum(v: unknown, allowed: readonly string[], path: string, what: string): string {
  if (typeof v !== 'string' || !allowed.includes(v)) bad(path, `${what} must be one of ${allowed.join(', ')}`);
  return v as string;
}

/** Remembers values per kind and refuses the second occurrence of one. */
function uniqueIn(seen: Map<string, string>, value: string, path: string, what: string): void {
  const first = seen.get(value);
  if (first !== undefined) bad(path, `${what} ${JSON.stringify(value)} appears twice (first at ${first})`);
  seen.set(value, path);
}

interface FieldFacts {
  type: string;
  writable: boolean;
  nullable: boolean;
}

function checkField(v: unknown, path: string): { id: string; name: string; facts: FieldFacts } {
  const f = readObject(v, 'invalid_manifest', path, 'a field');
  exactMembers(f, FIELD_REQUIRED, ['precision', 'scale'], 'invalid_manifest', path, 'a field');
  const id = checkIdentifier(f.field_id, pointer(path, 'field_id'), 'field_id');
  const name = checkIdentifier(f.name, pointer(path, 'name'), 'a field name');
  const type = parsePortableType(f.type, pointer(path, 'type'));
  const nullable = readBoolean(f.nullable, pointer(path, 'nullable'), 'nullable');
  const writable = readBoolean(f.writable, pointer(path, 'writable'), 'writable');
  const spec: ColumnSpec = { type, nullable };
  if (Object.hasOwn(f, 'precision')) spec.precision = Number(readEnvelopeInteger(f.precision, 1, 'invalid_manifest', pointer(path, 'precision'), 'precision'));
  if (Object.hasOwn(f, 'scale')) spec.scale = Number(readEnvelopeInteger(f.scale, 0, 'invalid_manifest', pointer(path, 'scale'), 'scale'));
  checkColumnSpec(spec, path);
  if (type === 'decimal' && spec.precision === undefined) bad(path, 'a decimal field declares precision and scale');
  return { id, name, facts: { type, writable, nullable } };
}

function checkIndexes(v: unknown, fields: ReadonlyMap<string, FieldFacts>, path: string): void {
  const ids = new Map<string, string>();
  const names = new Map<string, string>();
  readArray(v, path, 'indexes').forEach((item, k) => {
    const ip = pointer(path, k);
    const index = readObject(item, 'invalid_manifest', ip, 'an index');
    exactMembers(index, INDEX_MEMBERS, [], 'invalid_manifest', ip, 'an index');
    uniqueIn(ids, checkIdentifier(index.index_id, pointer(ip, 'index_id'), 'index_id'), pointer(ip, 'index_id'), 'index_id');
    uniqueIn(names, checkIdentifier(index.name, pointer(ip, 'name'), 'an index name'), pointer(ip, 'name'), 'index name');
    const columns = readArray(index.field_ids, pointer(ip, 'field_ids'), 'field_ids');
    if (columns.length === 0) bad(pointer(ip, 'field_ids'), 'an index covers at least one field');
    const listed = new Map<string, string>();
    columns.forEach((id, j) => {
      const fp = pointer(pointer(ip, 'field_ids'), j);
      const fieldId = checkIdentifier(id, fp, 'an indexed field ID');
      uniqueIn(listed, fieldId, fp, 'indexed field');
      if (!fields.has(fieldId)) throw new CodecError('unknown_field', fp, `the index names ${fieldId}, which the table does not have`);
    });
    readBoolean(index.unique, pointer(ip, 'unique'), 'unique');
  });
}

/** M5 and M6: the key and the lifecycle fields exist, have the right types and are never writable (002). */
function checkKeyAndLifecycle(t: Obj, fields: ReadonlyMap<string, FieldFacts>, path: string): void {
  const keyPath = pointer(path, 'primary_key_field_id');
  const keyId = checkIdentifier(t.primary_key_field_id, keyPath, 'primary_key_field_id');
  const key = fields.get(keyId);
  if (key === undefined) throw new CodecError('unknown_field', keyPath, `the key names ${keyId}, which the table does not have`);
  if (!isKeyType(key.type)) throw new CodecError('invalid_pk_type', keyPath, `a key is string, int or int64, not ${key.type}`);
  if (key.nullable) throw new CodecError('invalid_pk_type', keyPath, 'a key field is never nullable');
  if (key.writable) throw new CodecError('protected_field_writable', keyPath, `key field ${keyId} is declared writable; a key is never writable`);
  const lp = pointer(path, 'lifecycle');
  const lifecycle = readObject(t.lifecycle, 'invalid_manifest', lp, 'lifecycle');
  exactMembers(lifecycle, LIFECYCLE_MEMBERS, [], 'invalid_manifest', lp, 'lifecycle');
  for (const member of LIFECYCLE_MEMBERS) {
    const v = lifecycle[member];
    if (v === null) continue;
    const mp = pointer(lp, member);
    const id = checkIdentifier(v, mp, member);
    const field = fields.get(id);
    if (field === undefined) throw new CodecError('unknown_field', mp, `${member} names ${id}, which the table does not have`);
    if (field.type !== 'datetime') bad(mp, `${member} names a ${field.type} field; lifecycle fields are datetime`);
    if (field.writable) throw new CodecError('protected_field_writable', mp, `${member} ${id} is declared writable; lifecycle fields are server-owned`);
  }
}

function checkTable(v: unknown, path: string): { tableId: string; relationId: string; name: string } {
  const t = readObject(v, 'invalid_manifest', path, 'a table');
  exactMembers(t, TABLE_MEMBERS, [], 'invalid_manifest', path, 'a table');
  const tableId = checkIdentifier(t.table_id, pointer(path, 'table_id'), 'table_id');
  const relationId = checkIdentifier(t.relation_id, pointer(path, 'relation_id'), 'relation_id');
  const name = checkIdentifier(t.name, pointer(path, 'name'), 'a table name');
  readEnum(t.composition, COMPOSITIONS, pointer(path, 'composition'), 'composition');
  const fp = pointer(path, 'fields');
  const list = readArray(t.fields, fp, 'fields');
  if (list.length === 0) bad(fp, 'a table has at least one field (its key)');
  const fields = new Map<string, FieldFacts>();
  const ids = new Map<string, string>();
  const names = new Map<string, string>();
  list.forEach((item, k) => {
    const at = pointer(fp, k);
    const { id, name: fieldName, facts } = checkField(item, at);
    uniqueIn(ids, id, pointer(at, 'field_id'), 'field_id');
    uniqueIn(names, fieldName, pointer(at, 'name'), 'field name');
    fields.set(id, facts);
  });
  checkKeyAndLifecycle(t, fields, path);
  checkIndexes(t.indexes, fields, pointer(path, 'indexes'));
  return { tableId, relationId, name };
}

/**
 * Throws the first rule the manifest breaks. A `schema_hash` member is
 * optional here (a body being published has none yet) but must be 64
 * lowercase hex when present; verifySchemaManifest requires it.
 */
export function checkSchemaManifest(manifest: unknown): void {
  const m = readObject(manifest, 'invalid_manifest', '', 'a manifest');
  exactMembers(m, MANIFEST_REQUIRED, ['schema_hash'], 'invalid_manifest', '', 'a manifest');
  if (Object.hasOwn(m, 'schema_hash') && (typeof m.schema_hash !== 'string' || !HASH_HEX.test(m.schema_hash))) {
    throw new CodecError('invalid_schema_hash', '/schema_hash', 'schema_hash must be 64 lowercase hex characters');
  }
  const version = Number(readEnvelopeInteger(m.schema_version, 1, 'invalid_manifest', '/schema_version', 'schema_version'));
  const transition = readEnum(m.transition_class, TRANSITION_CLASSES, '/transition_class', 'transition_class');
  const floor = Number(readEnvelopeInteger(m.compatibility_floor, 1, 'invalid_manifest', '/compatibility_floor', 'compatibility_floor'));
  if (m.parent_schema === null) {
    if (transition !== 'initial') bad('/parent_schema', 'only the initial manifest has no parent (M1)');
  } else {
    const [parentVersion] = readSchemaRef(m.parent_schema, 'invalid_manifest', '/parent_schema');
    if (transition === 'initial') bad('/transition_class', 'an initial manifest has parent_schema null (M1)');
    if (Number(parentVersion) >= version) bad('/parent_schema/version', 'the parent version precedes schema_version (M2)');
  }
  if (floor > version) bad('/compatibility_floor', 'compatibility_floor is at most schema_version (M3)');
  if (transition !== 'class_2' && floor !== version) bad('/compatibility_floor', `a ${transition} manifest has compatibility_floor = schema_version (M3)`);
  const tableIds = new Map<string, string>();
  const relationIds = new Map<string, string>();
  const names = new Map<string, string>();
  readArray(m.tables, '/tables', 'tables').forEach((table, k) => {
    const at = pointer('/tables', k);
    const { tableId, relationId, name } = checkTable(table, at);
    uniqueIn(tableIds, tableId, pointer(at, 'table_id'), 'table_id');
    uniqueIn(relationIds, relationId, pointer(at, 'relation_id'), 'relation_id');
    uniqueIn(names, name, pointer(at, 'name'), 'table name');
  });
}
