/**
 * Public surface of the wire layer: message kinds and their generated types,
 * schema validation, cross-field rules, the strict JSON reader and push size
 * measurement.
 */
export type * from './generated.ts';
export { type JsonReadFailure, type JsonReadOk, type JsonReadResult, readJson } from './json-reader.ts';
export { manifestHash } from './manifest-hash.ts';
export { keyValueProblem, portableValueProblem } from './portable-values.ts';
export {
  MUTATION_COLUMNS_MAX,
  MUTATION_NORMALIZED_MAX_OCTETS,
  normalizedMutation,
  PUSH_BODY_MAX_OCTETS,
  PUSH_CANONICAL_MAX_OCTETS,
  PUSH_MUTATIONS_MAX,
  pushSizes,
} from './push-limits.ts';
export { type CheckResult, checkBytes, checkMessage, RULE_COVERAGE, RULES, type RowDigestFn, type RuleContext, type Violation } from './rules.ts';
export { isValidRetryAfter, STATUS_BY_CODE } from './rules/errors.ts';
export { isWireKind, type SchemaError, type ValidationResult, validate, WIRE_KINDS, type WireKind, type WireValue } from './validate.ts';
