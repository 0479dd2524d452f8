/**
 * Public API of the canonical codec: the byte-exact oracle for typed values,
 * row identities, row and scope digests, schema manifest hashes, checksum
 * objects and push fingerprints, and the only implementation of the encodings
 * beneath them (strict JSON reading, RFC 8785, portable value validation).
 * The wire layer builds on this module; this module never imports the wire.
 */
export { blob, compareBytes, domain, fromHex, i32be, i64be, text, toHex, u8, u32be, u64be } from './bytes.ts';
export { type ChecksumObject, checksumNames, checksumObject, readChecksumObject } from './checksum.ts';
export { CodecError, type CodecErrorCode, pointer } from './errors.ts';
export { type FieldIdKey, mutationFromFieldIdForm, pushRequestFromFieldIdForm, readFieldIdKey } from './field-id-form.ts';
export {
  BATCH_FINGERPRINT_DOMAIN,
  batchFingerprint,
  MAX_NORMALIZED_MUTATION_OCTETS,
  MUTATION_FINGERPRINT_DOMAIN,
  mutationFingerprint,
  normalizedMutationOctets,
  normalizeMutation,
  pushFingerprints,
} from './fingerprint.ts';
export { checkIdentifier, checkServerVersion, checkUuid, digestRaw, schemaHashRaw } from './identifiers.ts';
export { type JsonReadFailure, type JsonReadOk, type JsonReadResult, type NumberToken, readJsonBody } from './json-body.ts';
export { checkIJson, IMPL_JSON_LIMITS, type JsonLimits, PROTOCOL_JSON_LIMITS, validateCanonicalJsonText } from './json-value.ts';
export { checkSchemaManifest } from './manifest.ts';
export {
  isKeyType,
  isPortableType,
  KEY_TYPES,
  type KeyType,
  PORTABLE_TYPES,
  type PortableType,
  parsePortableType,
  TYPE_TAGS,
} from './portable-types.ts';
export { checkMutationShape, checkPushRequestShape, PUSH_LIMITS, PUSH_OPS, type PushOp, readPushRequestBody } from './push-shape.ts';
export { canonicalJson, canonicalJsonBytes } from './rfc8785.ts';
export { encodeRowBody, parseRowText, type ReadRow, readRow } from './row.ts';
export { digestRow, ROW_DIGEST_DOMAIN, type RowDigestInput, type RowDigestResult, rowDigest, rowDigestFromParts } from './row-digest.ts';
export { type DecodedRowIdentity, decodeRowIdentity, encodeRowIdentity, ROW_ID_DOMAIN, rowIdentityFromWire } from './row-identity.ts';
export {
  manifestHashBody,
  SCHEMA_MANIFEST_DOMAIN,
  type SchemaHashResult,
  schemaManifestHash,
  schemaManifestHashUnchecked,
  verifySchemaManifest,
} from './schema-hash.ts';
export { SCOPE_DOMAIN, ScopeDigestBuilder, SortedScopeDigest, scopeDigest } from './scope-digest.ts';
export {
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_VALUES,
  isCanonicalNumberText,
  isJsonObject,
  type JsonObject,
  type JsonValue,
  lineAt,
  type ParseOptions,
  parseJson,
  parseJsonBytes,
  RawNumber,
  STACK_GUARD_DEPTH,
  toPlain,
} from './strict-json.ts';
export { readTableShape, type TableShape, utf8Order } from './table-shape.ts';
export { encodeTypedValue, PRESENCE_NULL, PRESENCE_VALUE, typedValueFromWire } from './typed-value.ts';
export { decodeUtf8, firstInvalidUtf8, isWellFormedText } from './unicode.ts';
export {
  type ColumnSpec,
  checkColumnSpec,
  INT_MAX,
  INT_MIN,
  INT64_MAX,
  INT64_MIN,
  isCalendarDate,
  type PortableValue,
  readBoolean,
  readBytes,
  readDate,
  readDatetime,
  readDecimal,
  readFloat,
  readInt,
  readInt64,
  readJson,
  readKeyValue,
  readPortable,
  readString,
  readTime,
} from './wire-values.ts';
