/**
 * Runs one vector of an upstream-format pack through the codec. Inputs are JSON
 * text, read with the codec's strict reader, so malformed text, repeated
 * members and oversized texts reach the codec exactly as written; keys,
 * mutations and requests in the normalized field-ID representation are turned
 * into wire form by the codec (field-id-form.ts) before the same checks and
 * fingerprints the reference uses run on them.
 *
 * For a valid vector the codec yields the kind's canonical octets and its
 * protocol digest, and all three expectations are compared:
 *   canonical_bytes_hex    the octets the digest is taken over, after the domain prefix
 *   expected_bytes_sha256  SHA-256 of those octets
 *   expected_sha256        the protocol digest: SHA-256(domain prefix || octets),
 *                          with no prefix for typed_value and row_identity
 */
import { createHash } from 'node:crypto';
import {
  BATCH_FINGERPRINT_DOMAIN,
  batchFingerprint,
  blob,
  CodecError,
  type ColumnSpec,
  digestRow,
  fromHex,
  isJsonObject,
  isKeyType,
  type JsonObject,
  type JsonValue,
  MUTATION_FINGERPRINT_DOMAIN,
  mutationFingerprint,
  mutationFromFieldIdForm,
  parseJson,
  parsePortableType,
  parseRowText,
  pushRequestFromFieldIdForm,
  RawNumber,
  ROW_DIGEST_DOMAIN,
  readFieldIdKey,
  readTableShape,
  rowIdentityFromWire,
  SCHEMA_MANIFEST_DOMAIN,
  SCOPE_DOMAIN,
  ScopeDigestBuilder,
  SortedScopeDigest,
  STACK_GUARD_DEPTH,
  schemaHashRaw,
  schemaManifestHash,
  text,
  toHex,
  typedValueFromWire,
  u64be,
  verifySchemaManifest,
} from '../codec/index.ts';
import { judge, type VectorOutcome } from './check-vector.ts';

interface Computed {
  /** The octets the digest is taken over, after the domain prefix. */
  canonical: Uint8Array;
  /** The domain prefix of the kind's digest (empty when the protocol defines no digest for the kind). */
  prefix: Uint8Array;
  /** The digest the codec computed. */
  digest: Uint8Array;
}

const NO_PREFIX = new Uint8Array();
const sha256 = (...parts: Uint8Array[]): Uint8Array => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
};
const num = (v: unknown): number | undefined => (v instanceof RawNumber ? Number(v.raw) : typeof v === 'number' ? v : undefined);

/** Reads an input text strictly; nesting and size bounds are left to the codec function that judges the value. */
function readText(input: JsonObject, member: string): JsonValue {
  try {
    return parseJson(String(input[member]), { maxDepth: STACK_GUARD_DEPTH, maxValues: Number.POSITIVE_INFINITY });
  } catch (e) {
    if (e instanceof CodecError) throw new CodecError(e.code, `/${member}${e.path}`, `${member}: ${e.message}`, e.offset);
    throw e;
  }
}

function undigested(canonical: Uint8Array): Computed {
  return { canonical, prefix: NO_PREFIX, digest: sha256(canonical) };
}

function typedValue(input: JsonObject): Computed {
  const spec: ColumnSpec = { type: parsePortableType(input.type, '/type') };
  if (typeof input.nullable === 'boolean') spec.nullable = input.nullable;
  const precision = num(input.precision);
  const scale = num(input.scale);
  if (precision !== undefined) spec.precision = precision;
  if (scale !== undefined) spec.scale = scale;
  return undigested(typedValueFromWire(spec, readText(input, 'raw_json'), '/raw_json'));
}

function rowIdentity(input: JsonObject): Computed {
  const type = parsePortableType(input.pk_type, '/pk_type');
  if (!isKeyType(type)) throw new CodecError('invalid_pk_type', '/pk_type', `${type} cannot type a key`);
  const key = readFieldIdKey(readText(input, 'pk_json'), '/pk_json');
  return undigested(rowIdentityFromWire(String(input.table_id), key.fieldId, type, key.value, '/pk_json/value'));
}

function rowDigest(input: JsonObject): Computed {
  const table = readTableShape(input.table, '/table');
  const request: Parameters<typeof digestRow>[0] = {
    schemaHash: String(input.schema_hash),
    table,
    row: parseRowText(String(input.row_json), '/row_json'),
    serverVersion: String(input.server_version),
  };
  if (Object.hasOwn(input, 'pk_json')) {
    const key = readFieldIdKey(readText(input, 'pk_json'), '/pk_json');
    if (key.fieldId !== table.pkFieldId) throw new CodecError('pk_mismatch', '/pk_json/field_id', `the key names ${key.fieldId}, the table's key field is ${table.pkFieldId}`);
    request.pk = key.value;
  }
  const r = digestRow(request);
  const canonical = Buffer.concat([schemaHashRaw(input.schema_hash), blob(r.identity), blob(r.body), text(request.serverVersion)]);
  return { canonical, prefix: ROW_DIGEST_DOMAIN, digest: r.digest };
}

function scopeDigest(input: JsonObject): Computed {
  const hash = schemaHashRaw(input.schema_hash, '/schema_hash');
  const scopeId = String(input.scope_id);
  const entries = (input.entries as JsonObject[]).map((e, k) => ({
    identity: fromHex(String(e.identity_hex), `/entries/${k}/identity_hex`, 'invalid_row_identity'),
    digest: fromHex(String(e.digest_hex), `/entries/${k}/digest_hex`, 'invalid_digest'),
  }));
  const cardinality = num(input.cardinality);
  let digest: Uint8Array;
  if (cardinality === undefined) {
    const b = new ScopeDigestBuilder(hash, scopeId);
    for (const e of entries) b.add(e.identity, e.digest);
    digest = b.finish();
    // The builder hashed the entries in identity order; the canonical octets list them the same way.
    entries.sort((a, b2) => Buffer.compare(a.identity, b2.identity));
  } else {
    const s = new SortedScopeDigest(hash, scopeId, cardinality);
    for (const e of entries) s.add(e.identity, e.digest);
    digest = s.finish();
  }
  const canonical = Buffer.concat([hash, text(scopeId), u64be(entries.length), ...entries.flatMap((e) => [blob(e.identity), e.digest])]);
  return { canonical, prefix: SCOPE_DOMAIN, digest };
}

function manifest(input: JsonObject): Computed {
  const m = readText(input, 'manifest_json');
  const r = schemaManifestHash(m);
  if (isJsonObject(m) && Object.hasOwn(m, 'schema_hash')) verifySchemaManifest(m);
  return { canonical: Buffer.from(r.canonicalBody, 'utf8'), prefix: SCHEMA_MANIFEST_DOMAIN, digest: fromHex(r.hash) };
}

function mutation(input: JsonObject): Computed {
  const wire = mutationFromFieldIdForm(readText(input, 'mutation_json'));
  const r = mutationFingerprint(String(input.authenticated_user_id), String(input.client_id), wire);
  return { canonical: Buffer.from(r.canonical, 'utf8'), prefix: MUTATION_FINGERPRINT_DOMAIN, digest: r.digest };
}

function batch(input: JsonObject): Computed {
  const wire = pushRequestFromFieldIdForm(readText(input, 'batch_json'));
  const r = batchFingerprint(String(input.authenticated_user_id), wire);
  return { canonical: Buffer.from(r.canonical, 'utf8'), prefix: BATCH_FINGERPRINT_DOMAIN, digest: r.digest };
}

const KINDS: Record<string, (input: JsonObject) => Computed> = {
  typed_value: typedValue,
  row_identity: rowIdentity,
  row_digest: rowDigest,
  scope_digest: scopeDigest,
  schema_manifest: manifest,
  mutation_fingerprint: mutation,
  batch_fingerprint: batch,
};

const short = (s: string): string => (s.length > 24 ? `${s.slice(0, 16)}…` : s);

export function checkUpstreamVector(vector: JsonObject): VectorOutcome {
  const kind = KINDS[String(vector.kind)];
  if (kind === undefined) return { ok: false, reason: `unknown vector kind ${String(vector.kind)}` };
  const result = judge(vector, () => kind(vector.input as JsonObject));
  if ('outcome' in result) return result.outcome;
  const { canonical, prefix, digest } = result.actual;
  // The codec's digest must be the formula over the octets it reports; anything else is a codec defect, not a vector mismatch.
  if (toHex(sha256(prefix, canonical)) !== toHex(digest)) return { ok: false, reason: 'crashed: the codec digest is not SHA-256 of its prefix and canonical octets' };
  const expected = vector.expected as JsonObject;
  const actual: Record<string, string> = {
    canonical_bytes_hex: toHex(canonical),
    expected_bytes_sha256: toHex(sha256(canonical)),
    expected_sha256: toHex(digest),
  };
  for (const [key, got] of Object.entries(actual)) {
    if (got !== expected[key]) return { ok: false, reason: `${key} differs: got ${short(got)}, expected ${short(String(expected[key]))}` };
  }
  return { ok: true, reason: 'matches canonical_bytes_hex, expected_bytes_sha256, expected_sha256' };
}
