/**
 * Validation of the portable `json` type: the wire string must hold exactly one
 * I-JSON value already in RFC 8785 canonical form. Anything else is refused;
 * the codec never rewrites a non-canonical text into canonical form.
 */
import { isCertainlyCanonicalJson } from './canonical-json-scan.ts';
import { CodecError, pointer } from './errors.ts';
import { canonicalJson } from './rfc8785.ts';
import {
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_VALUES,
  isJsonObject,
  type JsonValue,
  parseJson,
  RawNumber,
  STACK_GUARD_DEPTH,
} from './strict-json.ts';
import { isWellFormedText } from './unicode.ts';

/** Depth and size bounds for reading a nested json value. */
export interface JsonLimits {
  maxDepth: number;
  maxValues: number;
}

/**
 * Upstream's own bounds (005 marks them Impl): nesting below 128 and at most
 * one million values and names. The reference applies them at its boundaries.
 */
export const IMPL_JSON_LIMITS: Readonly<JsonLimits> = { maxDepth: DEFAULT_MAX_DEPTH, maxValues: DEFAULT_MAX_VALUES };

/**
 * What the protocol itself asks of a nested json value: no depth or size bound
 * (beyond the stack guard). A harness judging another implementation uses
 * these, since an Impl fact is one conforming shape and not a requirement.
 */
export const PROTOCOL_JSON_LIMITS: Readonly<JsonLimits> = { maxDepth: STACK_GUARD_DEPTH, maxValues: Number.POSITIVE_INFINITY };

/** Unicode noncharacters: U+FDD0..U+FDEF and every code point ending in FFFE or FFFF. */
function hasNoncharacter(s: string): boolean {
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    if ((cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) === 0xfffe) return true;
  }
  return false;
}

function checkIJsonString(s: string, path: string): void {
  if (!isWellFormedText(s)) throw new CodecError('invalid_json', path, 'string contains a lone surrogate');
  if (hasNoncharacter(s)) throw new CodecError('invalid_json', path, 'string contains a Unicode noncharacter');
}

/** Walks a parsed value and applies the I-JSON restrictions (RFC 7493). */
export function checkIJson(v: JsonValue, path = ''): void {
  if (typeof v === 'string') {
    checkIJsonString(v, path);
  } else if (v instanceof RawNumber) {
    const n = Number(v.raw);
    if (!Number.isFinite(n)) throw new CodecError('invalid_json', path, `number ${v.raw} overflows binary64`);
    // An integer beyond 2^53-1 cannot round-trip through binary64; such values travel as strings.
    if (Number.isInteger(n) && Math.abs(n) > Number.MAX_SAFE_INTEGER) {
      throw new CodecError('json_unsafe_number', path, `integer ${v.raw} is outside the exactly representable range`);
    }
  } else if (Array.isArray(v)) {
    v.forEach((x, k) => {
      checkIJson(x, pointer(path, k));
    });
  } else if (isJsonObject(v)) {
    for (const [k, x] of Object.entries(v)) {
      checkIJsonString(k, pointer(path, k));
      checkIJson(x, pointer(path, k));
    }
  }
}

/**
 * Checks a portable `json` wire string and returns its canonical text (equal
 * to the input when accepted). Errors keep the path of the wire value.
 */
export function validateCanonicalJsonText(textValue: string, path = '', limits: Readonly<JsonLimits> = IMPL_JSON_LIMITS): string {
  // Most values are canonical already: one scan says so without a tree. Any doubt takes the full reader.
  if (isCertainlyCanonicalJson(textValue, limits)) return textValue;
  return readCanonicalJsonTextFully(textValue, path, limits);
}

/** validateCanonicalJsonText without the one-pass shortcut: parse, I-JSON checks, RFC 8785 comparison. */
export function readCanonicalJsonTextFully(textValue: string, path = '', limits: Readonly<JsonLimits> = IMPL_JSON_LIMITS): string {
  let tree: JsonValue;
  try {
    tree = parseJson(textValue, { maxDepth: limits.maxDepth, maxValues: limits.maxValues });
  } catch (e) {
    if (e instanceof CodecError) throw new CodecError(e.code, path, `json value: ${e.message}`);
    throw e;
  }
  try {
    checkIJson(tree);
  } catch (e) {
    if (e instanceof CodecError) throw new CodecError(e.code, path, `json value: ${e.message}`);
    throw e;
  }
  const canonical = canonicalJson(tree, path);
  if (canonical !== textValue) {
    throw new CodecError('json_noncanonical', path, `json text is not in RFC 8785 form (canonical form: ${truncate(canonical)})`);
  }
  return canonical;
}

function truncate(s: string): string {
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
