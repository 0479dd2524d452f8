/**
 * Public surface of the wire layer: message kinds and their generated types,
 * schema validation, cross-field rules and push size measurement. Encodings
 * (the strict body reader, RFC 8785, manifest hash, portable values, the
 * normalized mutation) come from harness/codec, which this layer builds on.
 */
export type * from './generated.ts';
export {
  MUTATION_COLUMNS_MAX,
  PUSH_BODY_MAX_OCTETS,
  PUSH_CANONICAL_MAX_OCTETS,
  PUSH_MUTATIONS_MAX,
  pushSizes,
} from './push-limits.ts';
export { isValidRetryAfter, STATUS_BY_CODE } from './rules/errors.ts';
export { type CheckResult, checkBytes, checkMessage, type RowDigestFn, RULE_COVERAGE, RULES, type RuleContext, type Violation } from './rules.ts';
export { isWireKind, type SchemaError, type ValidationResult, validate, WIRE_KINDS, type WireKind, type WireValue } from './validate.ts';
