/**
 * Runs one vector of a project-format pack through the codec's own validating
 * entry points (the ones the reference uses at its boundaries) and compares the
 * outcome with the vector's expectation.
 */

import { createHash } from 'node:crypto';
import {
  batchFingerprint,
  CodecError,
  type ColumnSpec,
  digestRow,
  fromHex,
  isJsonObject,
  isKeyType,
  type JsonObject,
  mutationFingerprint,
  parseJson,
  parsePortableType,
  parseRowText,
  RawNumber,
  readTableShape,
  readPushRequestBody,
  rowIdentityFromWire,
  ScopeDigestBuilder,
  SortedScopeDigest,
  schemaHashRaw,
  schemaManifestHash,
  toHex,
  typedValueFromWire,
  verifySchemaManifest,
} from '../codec/index.ts';

export interface VectorOutcome {
  ok: boolean;
  /** Short reason, always set (also for passes, e.g. "rejected with invalid_int"). */
  reason: string;
}

type Actual = Record<string, string | number>;

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const num = (v: unknown): number | undefined => (v instanceof RawNumber ? Number(v.raw) : typeof v === 'number' ? v : undefined);

function typedValue(input: JsonObject): Actual {
  const spec: ColumnSpec = { type: parsePortableType(input.type, '/type') };
  if (typeof input.nullable === 'boolean') spec.nullable = input.nullable;
  const precision = num(input.precision);
  const scale = num(input.scale);
  if (precision !== undefined) spec.precision = precision;
  if (scale !== undefined) spec.scale = scale;
  const bytes = typedValueFromWire(spec, input.value, '/value');
  return { bytes_hex: toHex(bytes), sha256: sha(bytes) };
}

function rowIdentity(input: JsonObject): Actual {
  const type = parsePortableType(input.pk_type, '/pk_type');
  if (!isKeyType(type)) throw new CodecError('invalid_pk_type', '/pk_type', `${type} cannot type a key`);
  const bytes = rowIdentityFromWire(String(input.table_id), String(input.pk_field_id), type, input.pk, '/pk');
  return { bytes_hex: toHex(bytes), sha256: sha(bytes) };
}

function rowDigest(input: JsonObject): Actual {
  const table = readTableShape(input.table, '/table');
  const row = typeof input.row === 'string' ? parseRowText(input.row, '/row') : input.row;
  const request: Parameters<typeof digestRow>[0] = {
    schemaHash: String(input.schema_hash),
    table,
    row,
    serverVersion: String(input.server_version),
  };
  if (Object.hasOwn(input, 'pk')) request.pk = input.pk;
  const r = digestRow(request);
  return { identity_hex: toHex(r.identity), body_hex: toHex(r.body), sha256: toHex(r.digest) };
}

function scope(input: JsonObject): Actual {
  const hash = schemaHashRaw(input.schema_hash, '/schema_hash');
  const entries = (input.entries as JsonObject[]).map((e, k) => ({
    identity: fromHex(String(e.identity_hex), `/entries/${k}/identity_hex`, 'invalid_row_identity'),
    digest: fromHex(String(e.digest_hex), `/entries/${k}/digest_hex`, 'invalid_digest'),
  }));
  const cardinality = num(input.cardinality);
  let digest: Uint8Array;
  if (cardinality === undefined) {
    const b = new ScopeDigestBuilder(hash, String(input.scope_id));
    for (const e of entries) b.add(e.identity, e.digest);
    digest = b.finish();
  } else {
    const s = new SortedScopeDigest(hash, String(input.scope_id), cardinality);
    for (const e of entries) s.add(e.identity, e.digest);
    digest = s.finish();
  }
  return { sha256: toHex(digest), cardinality: entries.length };
}

function manifest(input: JsonObject): Actual {
  const r = schemaManifestHash(input.manifest);
  if (isJsonObject(input.manifest) && Object.hasOwn(input.manifest, 'schema_hash')) verifySchemaManifest(input.manifest);
  return { sha256: r.hash, canonical_json: r.canonicalBody };
}

function compute(kind: string, input: JsonObject): Actual {
  switch (kind) {
    case 'typed_value':
      return typedValue(input);
    case 'row_identity':
      return rowIdentity(input);
    case 'row_digest':
      return rowDigest(input);
    case 'scope_digest':
      return scope(input);
    case 'schema_manifest':
      return manifest(input);
    case 'mutation_fingerprint': {
      // A mutation given as text is read strictly, so a repeated member reaches the codec as an error.
      const mutation = typeof input.mutation === 'string' ? parseJson(input.mutation) : input.mutation;
      const r = mutationFingerprint(String(input.user_id), String(input.client_id), mutation);
      return { sha256: toHex(r.digest), canonical_json: r.canonical };
    }
    case 'batch_fingerprint': {
      // A request given as text is the body: read with the body octet limit and the strict reader.
      const request = typeof input.request === 'string' ? readPushRequestBody(input.request) : input.request;
      const r = batchFingerprint(String(input.user_id), request);
      return { sha256: toHex(r.digest), canonical_json: r.canonical };
    }
    default:
      throw new Error(`unknown vector kind ${kind}`);
  }
}

const short = (s: string): string => (s.length > 24 ? `${s.slice(0, 16)}…` : s);

/**
 * Runs `compute` and judges a refusal: a valid vector must not be refused; an
 * invalid one must be refused by the codec (a CodecError, not a crash) and,
 * when the vector names an error code, with that code. Returns the computed
 * values when nothing was thrown and the vector is valid.
 */
export function judge<T>(vector: JsonObject, compute: () => T): { outcome: VectorOutcome } | { actual: T } {
  const expected = vector.expected as JsonObject;
  const wanted = typeof expected.error === 'string' ? expected.error : undefined;
  let actual: T;
  try {
    actual = compute();
  } catch (e) {
    if (!(e instanceof CodecError)) return { outcome: { ok: false, reason: `crashed: ${(e as Error).message}` } };
    if (vector.valid === true) return { outcome: { ok: false, reason: `rejected with ${e.code} (${e.message})` } };
    if (wanted !== undefined && e.code !== wanted) return { outcome: { ok: false, reason: `rejected with ${e.code}, expected ${wanted} (${e.message})` } };
    return { outcome: { ok: true, reason: `rejected with ${e.code}` } };
  }
  if (vector.valid === false) return { outcome: { ok: false, reason: `accepted, expected rejection${wanted === undefined ? '' : ` with ${wanted}`}` } };
  return { actual };
}

export function checkVector(vector: JsonObject): VectorOutcome {
  const expected = vector.expected as JsonObject;
  const result = judge(vector, () => compute(String(vector.kind), vector.input as JsonObject));
  if ('outcome' in result) return result.outcome;
  const actual = result.actual;
  for (const [key, want] of Object.entries(expected)) {
    const got = actual[key];
    const wantValue = want instanceof RawNumber ? Number(want.raw) : want;
    if (got !== wantValue) {
      return { ok: false, reason: `${key} differs: got ${short(String(got))}, expected ${short(String(wantValue))}` };
    }
  }
  return { ok: true, reason: `matches ${Object.keys(expected).join(', ')}` };
}
