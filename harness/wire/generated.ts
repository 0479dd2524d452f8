/**
 * Generated from schemas/*.schema.json by scripts/generate-wire-types.ts.
 * Do not edit by hand: change the schema and run `npm run generate`.
 */

/**
 * Client identity chosen by the client and bound to the authenticated user.
 */
export type ClientId = string;
export type PositiveInteger = number;
export type NonemptyString = string;
/**
 * Semantic Versioning 2.0.0 version string, without a leading v.
 */
export type SemVer = string;
/**
 * 32 octets written as 64 lowercase hexadecimal digits.
 */
export type Sha256Hex = string;
export type NonnegativeInteger = number;
/**
 * Opaque incremental cursor, returned byte for byte to the endpoint and scope that issued it.
 */
export type IncrementalCursor = string;
/**
 * RFC 3339 UTC time with exactly six fraction digits and an upper-case Z; the calendar date must exist.
 */
export type UtcMicrosecondTimestamp = string;
/**
 * Server-declared scope identifier.
 */
export type ScopeId = string;
/**
 * Immutable logical table identifier from the manifest.
 */
export type TableId = string;
/**
 * Immutable logical field identifier from the manifest.
 */
export type FieldId = string;
export type OptionalFieldId = FieldId | null;
/**
 * The eleven portable types, exact lowercase names; aliases and database type names are invalid.
 */
export type PortableType =
  | 'string'
  | 'int'
  | 'int64'
  | 'decimal'
  | 'float'
  | 'boolean'
  | 'datetime'
  | 'date'
  | 'time'
  | 'json'
  | 'bytes';
/**
 * Canonical lowercase hyphenated UUID other than the nil UUID; version and variant nibbles are not checked.
 */
export type Uuid = string;
/**
 * Wire form of one portable value; which JSON type is valid depends on the field's manifest type.
 */
export type PortableValue = string | number | boolean | null;
/**
 * Opaque server row version: 1 to 64 printable ASCII octets without double quote or backslash, so its JSON string is its length plus two octets.
 */
export type ServerVersion = string;
/**
 * Pull and rebuild page size; never defaulted or clamped.
 */
export type PageLimit = number;
export type ScopeIdList = ScopeId[];
/**
 * Protocol envelope integer: an integer token within the portable range shared by binary64 and int64.
 */
export type SafeInteger = number;
/**
 * RFC 3339 UTC time with exactly three fraction digits and an upper-case Z; the calendar date must exist.
 */
export type UtcMillisecondTimestamp = string;

/**
 * Every wire message kind, keyed by kind name.
 */
export interface WireMessages {
  'connect-request': ConnectRequest;
  'connect-response': ConnectResponse;
  'push-request': PushRequest;
  'push-response': PushResponse;
  'pull-request': PullRequest;
  'pull-response': PullResponse;
  'rebuild-request': RebuildRequest;
  'rebuild-response': RebuildResponse;
  'error-response': ErrorResponse;
  'ready-response': ReadyResponse;
  'schema-response': SchemaResponse;
  'tables-response': TablesResponse;
  'schema-manifest': SchemaManifest;
}
/**
 * POST /sync/connect body: register or resume a client, negotiate protocol 3, present the installed schema and known scopes. Sentinel and reset combinations are checked in code (rules C1-C3).
 */
export interface ConnectRequest {
  client_id: ClientId;
  client_generation?: PositiveInteger;
  platform: NonemptyString;
  app_version: SemVer;
  protocol_version: 3;
  schema_reset?: boolean;
  schema: SchemaRef | FreshSchemaSentinel;
  scope_set_version: NonnegativeInteger;
  known_scopes: ScopeCursorMap;
  seed_receipts?: {
    [k: string]: NonemptyString | undefined;
  };
}
/**
 * Reference to one immutable schema manifest.
 */
export interface SchemaRef {
  version: PositiveInteger;
  hash: Sha256Hex;
}
/**
 * The only zero reference: a client with no installed schema and no prior identity.
 */
export interface FreshSchemaSentinel {
  version: 0;
  hash: '';
}
/**
 * Scope ID to presented incremental state.
 */
export interface ScopeCursorMap {
  [k: string]: ScopeCursorRef | undefined;
}
/**
 * A scope's incremental state as presented by the client; null means no usable state.
 */
export interface ScopeCursorRef {
  cursor: IncrementalCursor | null;
}
/**
 * HTTP 200 body of POST /sync/connect. Which optional members go with which schema action is checked in code (rules CR1, CR2, CR4-CR8).
 */
export interface ConnectResponse {
  server_time: UtcMicrosecondTimestamp;
  protocol_version: 3;
  client_generation: PositiveInteger;
  scope_set_version: NonnegativeInteger;
  schema: SchemaDescriptor | UnsupportedSchemaDescriptor;
  scopes: ScopeAssignmentDelta;
  scope_cursor_updates: {
    [k: string]: IncrementalCursor | null | undefined;
  };
  schema_definition?: SchemaManifest;
  /**
   * @minItems 1
   */
  affected_scopes?: [ScopeId, ...ScopeId[]];
}
/**
 * Current manifest reference with a supported action.
 */
export interface SchemaDescriptor {
  version: PositiveInteger;
  hash: Sha256Hex;
  action: 'none' | 'replace' | 'rebuild_local';
}
/**
 * Current manifest reference when the client's schema cannot be continued; the reason is always given.
 */
export interface UnsupportedSchemaDescriptor {
  version: PositiveInteger;
  hash: Sha256Hex;
  action: 'unsupported';
  reason: 'unknown_schema_lineage' | 'incompatible_schema_transition';
}
/**
 * Assignment transition; both arrays are present even when empty.
 */
export interface ScopeAssignmentDelta {
  add: ScopeAssignment[];
  remove: ScopeId[];
}
export interface ScopeAssignment {
  id: ScopeId;
  cursor: IncrementalCursor | null;
}
/**
 * One immutable published schema manifest: logical tables, fields, keys, lifecycle fields and indexes. Ordering, uniqueness, key and hash rules are checked in code (manifest rules M1-M9).
 */
export interface SchemaManifest {
  schema_version: PositiveInteger;
  schema_hash: Sha256Hex;
  parent_schema: SchemaRef | null;
  transition_class: 'initial' | 'class_2' | 'class_3' | 'class_4';
  compatibility_floor: PositiveInteger;
  tables: TableSchema[];
}
export interface TableSchema {
  table_id: TableId;
  relation_id: NonemptyString;
  name: NonemptyString;
  primary_key_field_id: FieldId;
  lifecycle: LifecycleSchema;
  composition: 'single_scope' | 'multi_scope';
  /**
   * @minItems 1
   */
  fields: [ColumnSchema, ...ColumnSchema[]];
  indexes: IndexSchema[];
}
export interface LifecycleSchema {
  created_at_field_id: OptionalFieldId;
  updated_at_field_id: OptionalFieldId;
  deleted_at_field_id: OptionalFieldId;
}
export interface ColumnSchema {
  field_id: FieldId;
  name: NonemptyString;
  type: PortableType;
  nullable: boolean;
  writable: boolean;
  precision?: PositiveInteger;
  scale?: NonnegativeInteger;
}
export interface IndexSchema {
  index_id: NonemptyString;
  name: NonemptyString;
  /**
   * @minItems 1
   */
  field_ids: [FieldId, ...FieldId[]];
  unique: boolean;
}
/**
 * POST /sync/push body: one sealed, immutable batch of 1 to 1000 mutations in request order. Unique mutation IDs, atomic key uniqueness and octet limits are checked in code (rules P1, P6, P7).
 */
export interface PushRequest {
  client_id: ClientId;
  client_generation: PositiveInteger;
  batch_id: Uuid;
  schema: SchemaRef;
  /**
   * @minItems 1
   * @maxItems 1000
   */
  mutations: [
    InsertMutation | UpdateMutation | DeleteMutation,
    ...(InsertMutation | UpdateMutation | DeleteMutation)[]
  ];
  atomic?: true;
}
/**
 * Create a row that must not exist yet: no base version; columns required, possibly empty.
 */
export interface InsertMutation {
  mutation_id: Uuid;
  table: TableId;
  pk: PrimaryKey;
  authored_schema: SchemaRef;
  op: 'insert';
  client_version: UtcMicrosecondTimestamp;
  columns: Columns;
}
/**
 * Typed one-field key: the member name is the table's primary key field ID; the value is a string (string or int64 key) or a 32-bit integer (int key).
 */
export interface PrimaryKey {
  [k: string]: string | number | undefined;
}
/**
 * Authored field values of one push mutation, keyed by field ID; at most 256 members.
 */
export interface Columns {
  [k: string]: PortableValue | undefined;
}
/**
 * Patch the row at base_version: base version and a nonempty patch required.
 */
export interface UpdateMutation {
  mutation_id: Uuid;
  table: TableId;
  pk: PrimaryKey;
  authored_schema: SchemaRef;
  op: 'update';
  client_version: UtcMicrosecondTimestamp;
  base_version: ServerVersion;
  columns: Columns;
}
/**
 * Delete the row at base_version: base version required, no columns.
 */
export interface DeleteMutation {
  mutation_id: Uuid;
  table: TableId;
  pk: PrimaryKey;
  authored_schema: SchemaRef;
  op: 'delete';
  client_version: UtcMicrosecondTimestamp;
  base_version: ServerVersion;
}
/**
 * HTTP 200 body of POST /sync/push: every requested mutation once, applied ones in accepted, the others in rejected, each array in request order. The partition against the request is checked in code (rules PR1, PR2, PR7-PR10).
 */
export interface PushResponse {
  batch_id: Uuid;
  server_time: UtcMicrosecondTimestamp;
  accepted: AppliedOutcome[];
  rejected: (
    ConflictOutcome | TerminalOutcome | AtomicBatchRejectedOutcome | SchemaIncompatibleOutcome
  )[];
}
/**
 * Accepted mutation: the new version, plus the row after the push unit and its digest when a row exists.
 */
export interface AppliedOutcome {
  mutation_id: Uuid;
  table: TableId;
  pk: PrimaryKey;
  outcome_schema: SchemaRef;
  status: 'applied';
  server_row?: Row;
  row_checksum?: ChecksumObject;
  server_version: ServerVersion;
}
/**
 * Complete authoritative row keyed by field ID; SQL null is JSON null.
 */
export interface Row {
  [k: string]: PortableValue | undefined;
}
/**
 * Row or scope digest: SHA-256, version 1, lowercase hex.
 */
export interface ChecksumObject {
  algorithm: 'sha256';
  version: 1;
  encoding: 'hex';
  digest: Sha256Hex;
}
/**
 * Row-state or version conflict: the current row with its digest and version, the version alone for a fence-only deletion, or nothing for true absence.
 */
export interface ConflictOutcome {
  mutation_id: Uuid;
  table: TableId;
  pk: PrimaryKey;
  outcome_schema: SchemaRef;
  status: 'conflict';
  code: 'version_conflict' | 'row_already_exists' | 'row_deleted' | 'row_not_found';
  message: NonemptyString;
  server_row?: Row;
  row_checksum?: ChecksumObject;
  server_version?: ServerVersion;
}
/**
 * Terminal rejection without row, digest or version.
 */
export interface TerminalOutcome {
  mutation_id: Uuid;
  table: TableId;
  pk: PrimaryKey;
  outcome_schema: SchemaRef;
  status: 'rejected_terminal';
  code: 'table_not_synced' | 'policy_rejected' | 'validation_failed';
  message: NonemptyString;
}
/**
 * A member of a failed atomic group that was not itself the failing mutation.
 */
export interface AtomicBatchRejectedOutcome {
  mutation_id: Uuid;
  table: TableId;
  pk: PrimaryKey;
  outcome_schema: SchemaRef;
  status: 'rejected_terminal';
  code: 'atomic_batch_rejected';
  message: 'atomic batch rejected';
}
/**
 * Retained intent the current schema cannot represent; names the authored and current schemas and the offending field IDs, never values.
 */
export interface SchemaIncompatibleOutcome {
  mutation_id: Uuid;
  table: TableId;
  pk: PrimaryKey;
  outcome_schema: SchemaRef;
  status: 'rejected_terminal';
  code: 'schema_incompatible';
  message: NonemptyString;
  retryable: false;
  authored_schema: SchemaRef;
  current_schema: SchemaRef;
  incompatible_field_ids: FieldId[];
}
/**
 * POST /sync/pull body: read one incremental page across the client's scopes. Checks against server state are in code (rules L2, L3).
 */
export interface PullRequest {
  client_id: ClientId;
  client_generation: PositiveInteger;
  schema: SchemaRef;
  scope_set_version: NonnegativeInteger;
  scopes: ScopeCursorMap;
  limit: PageLimit;
}
/**
 * HTTP 200 body of POST /sync/pull. Terminal checksum maps, assignment deltas, rebuild lists and cursors are related in code (rules LR1-LR10).
 */
export interface PullResponse {
  changes: (UpsertChange | DeleteChange)[];
  scope_set_version: NonnegativeInteger;
  scope_cursors: {
    [k: string]: IncrementalCursor | undefined;
  };
  scope_updates: ScopeAssignmentDelta;
  rebuild: ScopeIdList;
  has_more: boolean;
  checksums?: {
    [k: string]: ChecksumObject | undefined;
  };
}
/**
 * The complete current row of one key for one scope.
 */
export interface UpsertChange {
  scope: ScopeId;
  table: TableId;
  op: 'upsert';
  pk: PrimaryKey;
  row: Row;
  row_checksum: ChecksumObject;
  server_version: ServerVersion;
}
/**
 * Removal of one key from one scope: either row-less, or carrying the source tombstone and its digest.
 */
export interface DeleteChange {
  scope: ScopeId;
  table: TableId;
  op: 'delete';
  pk: PrimaryKey;
  row?: Row;
  row_checksum?: ChecksumObject;
  server_version: ServerVersion;
}
/**
 * POST /sync/rebuild body: one page of an immutable single-scope snapshot. Continuation consistency is checked in code (rules B1, B2).
 */
export interface RebuildRequest {
  client_id: ClientId;
  client_generation: PositiveInteger;
  schema: SchemaRef;
  scope: ScopeId;
  rebuild_id: Uuid;
  cursor: NonemptyString | null;
  limit: PageLimit;
}
/**
 * HTTP 200 body of POST /sync/rebuild. Intermediate and final page shapes are checked in code (rules BR1-BR3).
 */
export interface RebuildResponse {
  scope: ScopeId;
  records: RebuildRecord[];
  cursor: NonemptyString | null;
  has_more: boolean;
  final_scope_cursor?: IncrementalCursor;
  checksum?: ChecksumObject;
}
export interface RebuildRecord {
  table: TableId;
  pk: PrimaryKey;
  row: Row;
  row_checksum: ChecksumObject;
  server_version: ServerVersion;
}
/**
 * Body of every non-200 JSON response except the readiness probe: exactly one member, error. Each code fixes retryable and its exact context members. The HTTP status per code and Retry-After are checked in code (rules E3, E4).
 */
export interface ErrorResponse {
  error:
    | InvalidRequestError
    | InvalidSchemaReferenceError
    | PlainError
    | RetryableError
    | ClientGenerationExpiredError
    | RebuildRestartRequiredError
    | SchemaMismatchError
    | UpgradeRequiredProtocolError
    | UpgradeRequiredRuntimeError
    | TemporaryUnavailableError;
}
/**
 * Malformed or out-of-contract request; a limit failure may name the field and its bounds, all three together.
 */
export interface InvalidRequestError {
  code: 'invalid_request';
  message: NonemptyString;
  retryable: false;
  field?: NonemptyString;
  minimum?: PositiveInteger;
  maximum?: PositiveInteger;
}
/**
 * Connect schema reference that is neither a normal reference nor the exact fresh sentinel, or a misused sentinel; echoes what was received.
 */
export interface InvalidSchemaReferenceError {
  code: 'invalid_schema_reference';
  message: NonemptyString;
  retryable: false;
  received_schema: ReceivedSchemaEcho;
}
/**
 * The reference as the client sent it, which need not be a valid reference.
 */
export interface ReceivedSchemaEcho {
  version: SafeInteger;
  hash: string;
}
/**
 * Non-retryable codes that carry no context members.
 */
export interface PlainError {
  code: 'auth_required' | 'idempotency_conflict' | 'client_retired' | 'sync_integrity_failure';
  message: NonemptyString;
  retryable: false;
}
/**
 * Retryable codes that carry no context members; the response carries Retry-After.
 */
export interface RetryableError {
  code: 'retry_later' | 'capture_pending';
  message: NonemptyString;
  retryable: true;
}
export interface ClientGenerationExpiredError {
  code: 'client_generation_expired';
  message: NonemptyString;
  retryable: false;
  current_client_generation: PositiveInteger;
}
export interface RebuildRestartRequiredError {
  code: 'rebuild_restart_required';
  message: NonemptyString;
  retryable: false;
  scope_id: ScopeId;
}
export interface SchemaMismatchError {
  code: 'schema_mismatch';
  message: NonemptyString;
  retryable: false;
  current_schema: SchemaRef;
  received_schema: SchemaRef;
}
/**
 * The request spoke a protocol version other than 3.
 */
export interface UpgradeRequiredProtocolError {
  code: 'upgrade_required';
  message: NonemptyString;
  retryable: false;
  required_protocol_version: 3;
  received_protocol_version: SafeInteger;
}
/**
 * The client runtime is below the configured minimum version.
 */
export interface UpgradeRequiredRuntimeError {
  code: 'upgrade_required';
  message: NonemptyString;
  retryable: false;
  minimum_client_version: SemVer;
  received_client_version: SemVer;
}
export interface TemporaryUnavailableError {
  code: 'temporary_unavailable';
  message: NonemptyString;
  retryable: true;
  reason?: 'capture_blocked';
}
/**
 * GET /ready body: true with HTTP 200, false with HTTP 503; never any detail.
 */
export interface ReadyResponse {
  ready: boolean;
}
/**
 * GET /sync/schema body (operator network): the current manifest with its version and hash repeated at the top level.
 */
export interface SchemaResponse {
  schema_version: PositiveInteger;
  schema_hash: Sha256Hex;
  server_time: UtcMillisecondTimestamp;
  manifest: SchemaManifest;
}
/**
 * GET /sync/tables body (operator network, not normative): registered table metadata sorted by table_name.
 */
export interface TablesResponse {
  tables: TableMetadata[];
  server_time: UtcMillisecondTimestamp;
  schema_version: PositiveInteger;
  schema_hash: Sha256Hex;
}
export interface TableMetadata {
  table_name: NonemptyString;
  push_policy: NonemptyString;
  dependencies: string[];
  pk_column: NonemptyString;
  updated_at_column: NonemptyString | null;
  deleted_at_column: NonemptyString | null;
  sync_columns: string[];
  exclude_columns: string[];
}
