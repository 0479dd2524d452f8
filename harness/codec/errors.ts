/**
 * Typed failures of the canonical codec.
 *
 * Every rejection carries a stable `code` (so the reference server can map it
 * to a protocol error and vector packs can name the expected failure) and the
 * JSON-pointer-like `path` of the offending value.
 */
export type CodecErrorCode =
  // JSON text
  | 'json_syntax'
  | 'json_duplicate_member'
  | 'json_too_deep'
  | 'json_too_large'
  // portable type names and values
  | 'unknown_type'
  | 'wrong_json_type'
  | 'null_not_allowed'
  | 'invalid_string'
  | 'invalid_int'
  | 'int_out_of_range'
  | 'invalid_int64'
  | 'int64_out_of_range'
  | 'invalid_decimal'
  | 'decimal_precision'
  | 'decimal_scale'
  | 'invalid_float'
  | 'float_nonfinite'
  | 'invalid_datetime'
  | 'invalid_date'
  | 'invalid_time'
  | 'invalid_json'
  | 'json_noncanonical'
  | 'json_unsafe_number'
  | 'invalid_bytes'
  // manifests and rows
  | 'invalid_manifest'
  | 'protected_field_writable'
  | 'invalid_pk_type'
  | 'unknown_field'
  | 'missing_field'
  | 'duplicate_field'
  | 'pk_mismatch'
  | 'invalid_identifier'
  | 'invalid_server_version'
  | 'invalid_schema_hash'
  // digests and checksum objects
  | 'invalid_row_identity'
  | 'invalid_digest'
  | 'duplicate_identity'
  | 'cardinality_mismatch'
  | 'unsorted_identity'
  | 'invalid_checksum_object'
  // push requests and fingerprints
  | 'invalid_mutation'
  | 'invalid_batch'
  | 'invalid_uuid'
  | 'invalid_op'
  | 'invalid_op_shape'
  | 'noncanonical_number'
  | 'duplicate_mutation_id'
  | 'duplicate_row'
  | 'invalid_mutation_count'
  | 'too_many_columns'
  | 'mutation_too_large'
  | 'request_too_large';

export class CodecError extends Error {
  readonly code: CodecErrorCode;
  /** Where the problem is, as a JSON pointer into the value handed to the codec ('' = the value itself). */
  readonly path: string;
  /** For JSON text errors: the UTF-16 offset in the text where reading stopped. */
  readonly offset: number | undefined;

  constructor(code: CodecErrorCode, path: string, message: string, offset?: number) {
    super(`${code} at ${path === '' ? '(root)' : path}: ${message}`);
    this.name = 'CodecError';
    this.code = code;
    this.path = path;
    this.offset = offset;
  }
}

/** Appends one JSON pointer segment, escaping `~` and `/` as RFC 6901 requires. */
export function pointer(base: string, segment: string | number): string {
  const s = String(segment);
  // Most segments (indexes, member names) hold neither character: those are appended as they are.
  return `${base}/${s.includes('~') || s.includes('/') ? s.replaceAll('~', '~0').replaceAll('/', '~1') : s}`;
}
