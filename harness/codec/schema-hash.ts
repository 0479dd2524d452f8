/**
 * schema_hash = SHA-256(ASCII("synchro:v3:schema-manifest:v1") || 0x00 ||
 *   RFC8785_UTF8(manifest without schema_hash)), as 64 lowercase hex.
 *
 * Before canonicalization every unordered collection is put in the order of
 * its immutable logical ID (unsigned UTF-8 bytes): tables by `table_id`,
 * fields by `field_id`, indexes by `index_id`. An index's `field_ids` list is
 * ordered by meaning (column order of the index) and is left as it is.
 */
import { createHash } from 'node:crypto';
import { domain, toHex } from './bytes.ts';
import { CodecError, pointer } from './errors.ts';
import { checkSchemaManifest } from './manifest.ts';
import { canonicalJson } from './rfc8785.ts';
import { RawNumber } from './strict-json.ts';
import { utf8Order } from './table-shape.ts';

export const SCHEMA_MANIFEST_DOMAIN = domain('synchro:v3:schema-manifest:v1');

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof RawNumber);
}

function sortById(list: unknown, idKey: string, path: string): unknown[] {
  if (!Array.isArray(list)) throw new CodecError('invalid_manifest', path, 'expected an array');
  const seen = new Set<string>();
  list.forEach((item: unknown, k: number) => {
    const id = isObj(item) ? item[idKey] : undefined;
    if (typeof id !== 'string') throw new CodecError('invalid_manifest', pointer(pointer(path, k), idKey), `${idKey} must be a string`);
    if (seen.has(id)) throw new CodecError('invalid_manifest', pointer(pointer(path, k), idKey), `${idKey} ${id} appears twice`);
    seen.add(id);
  });
  return [...list].sort((a, b) => utf8Order(String((a as Obj)[idKey]), String((b as Obj)[idKey])));
}

function copyWith(o: Obj, key: string, value: unknown): Obj {
  const out: Obj = {};
  for (const k of Object.keys(o)) Object.defineProperty(out, k, { value: o[k], enumerable: true, writable: true, configurable: true });
  out[key] = value;
  return out;
}

/** The manifest body that is hashed: no `schema_hash`, unordered lists sorted. */
export function manifestHashBody(manifest: unknown): Obj {
  if (!isObj(manifest)) throw new CodecError('invalid_manifest', '', 'a manifest is a JSON object');
  const body: Obj = {};
  for (const k of Object.keys(manifest)) {
    if (k !== 'schema_hash') Object.defineProperty(body, k, { value: manifest[k], enumerable: true, writable: true, configurable: true });
  }
  if (!Object.hasOwn(body, 'tables')) throw new CodecError('invalid_manifest', '/tables', 'manifest has no tables member');
  const tables = sortById(body.tables, 'table_id', '/tables').map((t, k) => {
    const table = t as Obj;
    const tp = pointer('/tables', k);
    let out = copyWith(table, 'fields', sortById(table.fields, 'field_id', pointer(tp, 'fields')));
    if (Object.hasOwn(table, 'indexes')) out = copyWith(out, 'indexes', sortById(table.indexes, 'index_id', pointer(tp, 'indexes')));
    return out;
  });
  body.tables = tables;
  return body;
}

export interface SchemaHashResult {
  /** 64 lowercase hex. */
  hash: string;
  /** The RFC 8785 text that was hashed (after the domain prefix). */
  canonicalBody: string;
}

/**
 * The schema hash of a manifest the protocol accepts. Refuses, with the rule
 * it breaks, any manifest that breaks wire rules M1-M8, an exact member set,
 * a portable type name or a "never writable" field (manifest.ts).
 */
export function schemaManifestHash(manifest: unknown): SchemaHashResult {
  checkSchemaManifest(manifest);
  return schemaManifestHashUnchecked(manifest);
}

/**
 * The same formula over any manifest-shaped body whose IDs are unique, valid
 * or not. Only for tests and fault injection that forge a manifest on purpose
 * (e.g. a proxy that rewrites a type and must keep the hash consistent); never
 * for publishing, judging or accepting a manifest.
 */
export function schemaManifestHashUnchecked(manifest: unknown): SchemaHashResult {
  const canonicalBody = canonicalJson(manifestHashBody(manifest));
  const h = createHash('sha256');
  h.update(SCHEMA_MANIFEST_DOMAIN);
  h.update(Buffer.from(canonicalBody, 'utf8'));
  return { hash: toHex(h.digest()), canonicalBody };
}

/** Checks a received manifest, recomputes its hash and refuses a missing or mismatching claim. */
export function verifySchemaManifest(manifest: unknown): string {
  const claimed = isObj(manifest) ? manifest.schema_hash : undefined;
  if (typeof claimed !== 'string' || !/^[0-9a-f]{64}$/.test(claimed)) {
    throw new CodecError('invalid_schema_hash', '/schema_hash', 'schema_hash must be 64 lowercase hex characters');
  }
  const { hash } = schemaManifestHash(manifest);
  if (claimed !== hash) throw new CodecError('invalid_schema_hash', '/schema_hash', `schema_hash does not match the body (recomputed ${hash})`);
  return hash;
}
