/**
 * Validating readers for portable values in their wire JSON form.
 *
 * Each reader accepts only the one canonical wire text of a value and throws a
 * CodecError otherwise. Numbers should arrive as `RawNumber` (from
 * strict-json.ts) so that spellings such as `42.0`, `4.2e1` or `-0` can be
 * told apart from `42` and `0`; a plain JS number is accepted too, but then the
 * original spelling is already lost and only the value can be checked.
 */
import { CodecError } from './errors.ts';
import { IMPL_JSON_LIMITS, type JsonLimits, validateCanonicalJsonText } from './json-value.ts';
import { isKeyType, type PortableType } from './portable-types.ts';
import { RawNumber } from './strict-json.ts';
import { isWellFormedText } from './unicode.ts';

export interface ColumnSpec {
  type: PortableType;
  /** Whether SQL null is allowed (default: true for a lone value; manifests state it per field). */
  nullable?: boolean;
  /** Decimal only: total significant digits allowed. */
  precision?: number;
  /** Decimal only: fraction digits allowed. */
  scale?: number;
}

/** A validated value, ready to encode. `value === null` is SQL null. */
export type PortableValue =
  | { type: 'string'; value: string | null }
  | { type: 'int'; value: number | null }
  | { type: 'int64'; value: bigint | null }
  | { type: 'decimal'; value: string | null }
  | { type: 'float'; value: number | null }
  | { type: 'boolean'; value: boolean | null }
  | { type: 'datetime'; value: string | null }
  | { type: 'date'; value: string | null }
  | { type: 'time'; value: string | null }
  | { type: 'json'; value: string | null }
  | { type: 'bytes'; value: Uint8Array | null };

export const INT_MIN = -2147483648;
export const INT_MAX = 2147483647;
export const INT64_MIN = -9223372036854775808n;
export const INT64_MAX = 9223372036854775807n;

const INTEGER_TEXT = /^(?:0|-?[1-9][0-9]*)$/;
const DECIMAL_TEXT = /^(?:0|-?(?:0\.[0-9]*[1-9]|[1-9][0-9]*(?:\.[0-9]*[1-9])?))$/;
const BASE64URL_TEXT = /^[A-Za-z0-9_-]*$/;

function describe(v: unknown): string {
  if (v instanceof RawNumber) return `number ${v.raw}`;
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function wrongType(expected: string, v: unknown, path: string): never {
  throw new CodecError('wrong_json_type', path, `expected ${expected}, got ${describe(v)}`);
}

/** Proleptic Gregorian calendar check for a four-digit year (0000..9999). */
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

export function isCalendarDate(year: number, month: number, day: number): boolean {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
  return day >= 1 && day <= days;
}

/** The digits at s[from, from + count) as a number; the caller has checked they are digits (hasDateShape). */
function digitsAt(s: string, from: number, count: number): number {
  let n = 0;
  for (let k = from; k < from + count; k++) n = n * 10 + (s.charCodeAt(k) - 0x30);
  return n;
}

/** Whether the YYYY-MM-DD at the start of s (its shape checked by hasDateShape) names a day of the calendar. */
function isCalendarDateText(s: string): boolean {
  return isCalendarDate(digitsAt(s, 0, 4), digitsAt(s, 5, 2), digitsAt(s, 8, 2));
}

/** The two ASCII digits at s[at], s[at + 1] as 0..99, or -1 when either is not a digit. */
function twoDigitsAt(s: string, at: number): number {
  const hi = s.charCodeAt(at) - 0x30;
  const lo = s.charCodeAt(at + 1) - 0x30;
  return hi >= 0 && hi <= 9 && lo >= 0 && lo <= 9 ? hi * 10 + lo : -1;
}

/**
 * Whether s[0, 10) has the shape of YYYY-MM-DD (four digits, month 01-12, day
 * 01-31). The date and time texts have fixed positions, so they are checked
 * position by position rather than with a regular expression run per value
 * (test/codec/row-digest-fast-paths.test.ts pins them to the patterns).
 */
function hasDateShape(s: string): boolean {
  const month = twoDigitsAt(s, 5);
  const day = twoDigitsAt(s, 8);
  return (
    twoDigitsAt(s, 0) >= 0 &&
    twoDigitsAt(s, 2) >= 0 &&
    s.charCodeAt(4) === 0x2d &&
    month >= 1 &&
    month <= 12 &&
    s.charCodeAt(7) === 0x2d &&
    day >= 1 &&
    day <= 31
  );
}

/** Whether s[at, at + 15) has the shape of HH:MM:SS.ffffff: HH (00-23), MM and SS (00-59), six fraction digits. */
function hasTimeShapeAt(s: string, at: number): boolean {
  const hour = twoDigitsAt(s, at);
  const minute = twoDigitsAt(s, at + 3);
  const second = twoDigitsAt(s, at + 6);
  if (hour < 0 || hour > 23 || s.charCodeAt(at + 2) !== 0x3a || minute < 0 || minute > 59) return false;
  if (s.charCodeAt(at + 5) !== 0x3a || second < 0 || second > 59 || s.charCodeAt(at + 8) !== 0x2e) return false;
  return twoDigitsAt(s, at + 9) >= 0 && twoDigitsAt(s, at + 11) >= 0 && twoDigitsAt(s, at + 13) >= 0;
}

/** Whether s is YYYY-MM-DD with month 01-12 and day 01-31 (the calendar is checked apart). */
export function isDateText(s: string): boolean {
  return s.length === 10 && hasDateShape(s);
}

/** Whether s is YYYY-MM-DDTHH:MM:SS.ffffffZ with the ranges of isDateText and isTimeText. */
export function isDatetimeText(s: string): boolean {
  return s.length === 27 && hasDateShape(s) && s.charCodeAt(10) === 0x54 && hasTimeShapeAt(s, 11) && s.charCodeAt(26) === 0x5a;
}

/** Whether s is HH:MM:SS.ffffff with hours 00-23, minutes and seconds 00-59. */
export function isTimeText(s: string): boolean {
  return s.length === 15 && hasTimeShapeAt(s, 0);
}

export function readString(v: unknown, path = ''): string {
  if (typeof v !== 'string') wrongType('a JSON string', v, path);
  if (!isWellFormedText(v)) throw new CodecError('invalid_string', path, 'string contains a lone surrogate');
  return v;
}

export function readInt(v: unknown, path = ''): number {
  if (v instanceof RawNumber) {
    if (!INTEGER_TEXT.test(v.raw)) {
      throw new CodecError('invalid_int', path, `int must be written as a plain integer, got ${v.raw}`);
    }
    // Plain integer text converts exactly up to 2^53, and anything longer is far outside int32 either way.
    const n = Number(v.raw);
    if (n < INT_MIN || n > INT_MAX) throw new CodecError('int_out_of_range', path, `${v.raw} is outside int32`);
    return n;
  }
  if (typeof v !== 'number') wrongType('a JSON number', v, path);
  if (!Number.isInteger(v) || Object.is(v, -0)) throw new CodecError('invalid_int', path, `int must be an integer other than -0, got ${v}`);
  if (v < INT_MIN || v > INT_MAX) throw new CodecError('int_out_of_range', path, `${v} is outside int32`);
  return v;
}

export function readInt64(v: unknown, path = ''): bigint {
  if (typeof v !== 'string') wrongType('a JSON string (int64 travels as decimal text)', v, path);
  if (!INTEGER_TEXT.test(v)) throw new CodecError('invalid_int64', path, `int64 text ${JSON.stringify(v)} is not canonical base 10`);
  const n = BigInt(v);
  if (n < INT64_MIN || n > INT64_MAX) throw new CodecError('int64_out_of_range', path, `${v} is outside int64`);
  return n;
}

/**
 * An int64 text of at most 15 digits, as a number: exact in binary64 and far
 * inside int64, so a writer needs no BigInt. Undefined for anything else,
 * which readInt64 then reads (or refuses) as always.
 */
export function shortInt64(v: unknown): number | undefined {
  if (typeof v !== 'string' || v.length > (v.charCodeAt(0) === 0x2d ? 16 : 15) || !INTEGER_TEXT.test(v)) return undefined;
  return Number(v);
}

export function readDecimal(v: unknown, spec: { precision?: number; scale?: number }, path = ''): string {
  if (typeof v !== 'string') wrongType('a JSON string (decimal travels as text)', v, path);
  if (!DECIMAL_TEXT.test(v)) throw new CodecError('invalid_decimal', path, `${JSON.stringify(v)} is not a canonical decimal`);
  const { precision, scale } = spec;
  if (precision !== undefined && scale !== undefined) {
    // Counted in place (the pattern above fixed the shape): digits before the point, a lone 0 counting none, and after it.
    const first = v.charCodeAt(0) === 0x2d ? 1 : 0;
    const point = v.indexOf('.');
    const wholeEnd = point === -1 ? v.length : point;
    const fractionDigits = point === -1 ? 0 : v.length - point - 1;
    const integerDigits = wholeEnd - first === 1 && v.charCodeAt(first) === 0x30 ? 0 : wholeEnd - first;
    if (fractionDigits > scale) {
      throw new CodecError('decimal_scale', path, `${v} has ${fractionDigits} fraction digits, scale allows ${scale}`);
    }
    if (integerDigits > precision - scale) {
      throw new CodecError('decimal_precision', path, `${v} has ${integerDigits} integer digits, precision ${precision} scale ${scale} allows ${precision - scale}`);
    }
  }
  return v;
}

export function readFloat(v: unknown, path = ''): number {
  if (v instanceof RawNumber) {
    const n = Number(v.raw);
    if (!Number.isFinite(n)) throw new CodecError('float_nonfinite', path, `${v.raw} is not a finite binary64 value`);
    // The canonical spelling is the ECMAScript/RFC 8785 text of the binary64 value (isCanonicalNumberText, without parsing the text again).
    if (String(n) !== v.raw) throw new CodecError('invalid_float', path, `float must be written ${String(n)}, got ${v.raw}`);
    return n;
  }
  if (typeof v !== 'number') wrongType('a JSON number', v, path);
  if (!Number.isFinite(v)) throw new CodecError('float_nonfinite', path, `${v} is not finite`);
  if (Object.is(v, -0)) throw new CodecError('invalid_float', path, '-0 is not a canonical float');
  return v;
}

export function readBoolean(v: unknown, path = ''): boolean {
  if (typeof v !== 'boolean') wrongType('true or false', v, path);
  return v;
}

export function readDatetime(v: unknown, path = ''): string {
  if (typeof v !== 'string') wrongType('a JSON string', v, path);
  if (!isDatetimeText(v)) throw new CodecError('invalid_datetime', path, `${JSON.stringify(v)} is not YYYY-MM-DDTHH:MM:SS.ffffffZ`);
  if (!isCalendarDateText(v)) throw new CodecError('invalid_datetime', path, `${JSON.stringify(v)} is not a calendar date`);
  return v;
}

export function readDate(v: unknown, path = ''): string {
  if (typeof v !== 'string') wrongType('a JSON string', v, path);
  if (!isDateText(v)) throw new CodecError('invalid_date', path, `${JSON.stringify(v)} is not YYYY-MM-DD`);
  if (!isCalendarDateText(v)) throw new CodecError('invalid_date', path, `${JSON.stringify(v)} is not a calendar date`);
  return v;
}

export function readTime(v: unknown, path = ''): string {
  if (typeof v !== 'string') wrongType('a JSON string', v, path);
  if (!isTimeText(v)) throw new CodecError('invalid_time', path, `${JSON.stringify(v)} is not HH:MM:SS.ffffff`);
  return v;
}

export function readJson(v: unknown, path = '', limits: Readonly<JsonLimits> = IMPL_JSON_LIMITS): string {
  if (typeof v !== 'string') wrongType('a JSON string holding canonical JSON text', v, path);
  return validateCanonicalJsonText(v, path, limits);
}

/** The 6-bit value of one base64url character (the caller has checked the alphabet). */
function base64urlValue(c: number): number {
  if (c >= 0x41 && c <= 0x5a) return c - 0x41;
  if (c >= 0x61 && c <= 0x7a) return c - 0x61 + 26;
  if (c >= 0x30 && c <= 0x39) return c - 0x30 + 52;
  return c === 0x2d ? 62 : 63;
}

export function readBytes(v: unknown, path = ''): Uint8Array {
  return new Uint8Array(Buffer.from(checkBytesText(v, path), 'base64url'));
}

/** Checks that a wire value is canonical unpadded base64url and returns the text (readBytes without decoding it). */
export function checkBytesText(v: unknown, path = ''): string {
  if (typeof v !== 'string') wrongType('a base64url JSON string', v, path);
  if (!BASE64URL_TEXT.test(v) || v.length % 4 === 1) {
    throw new CodecError('invalid_bytes', path, 'bytes must be unpadded base64url (A-Z a-z 0-9 - _)');
  }
  // Nonzero unused bits in the last character would give a second spelling of the same octets:
  // two characters left over carry 4 unused bits, three carry 2.
  const unusedBits = v.length % 4 === 2 ? 0x0f : v.length % 4 === 3 ? 0x03 : 0;
  if (unusedBits !== 0 && (base64urlValue(v.charCodeAt(v.length - 1)) & unusedBits) !== 0) {
    throw new CodecError('invalid_bytes', path, 'base64url text has nonzero unused trailing bits');
  }
  return v;
}

/** Validates precision/scale of a column spec itself. */
export function checkColumnSpec(spec: ColumnSpec, path = ''): void {
  const hasP = spec.precision !== undefined;
  const hasS = spec.scale !== undefined;
  if (spec.type === 'decimal') {
    if (hasP !== hasS) throw new CodecError('invalid_manifest', path, 'decimal needs both precision and scale');
    if (hasP && (!Number.isSafeInteger(spec.precision) || (spec.precision ?? 0) < 1)) {
      throw new CodecError('invalid_manifest', path, 'decimal precision must be a positive integer');
    }
    if (hasS && (!Number.isSafeInteger(spec.scale) || (spec.scale ?? -1) < 0 || (spec.scale ?? 0) > (spec.precision ?? 0))) {
      throw new CodecError('invalid_manifest', path, 'decimal scale must be between 0 and precision');
    }
  } else if (hasP || hasS) {
    throw new CodecError('invalid_manifest', path, `precision and scale belong to decimal fields only, not ${spec.type}`);
  }
}

/**
 * Reads one wire value of a column. Null is allowed unless the spec says
 * `nullable: false` (primary keys and non-nullable manifest fields). `limits`
 * bound nested `json` values only.
 */
export function readPortable(spec: ColumnSpec, v: unknown, path = '', limits: Readonly<JsonLimits> = IMPL_JSON_LIMITS): PortableValue {
  checkColumnSpec(spec, path);
  return readPortableOfCheckedSpec(spec, v, path, limits);
}

/** readPortable for a column spec already known to pass checkColumnSpec (e.g. one of a TableShape read once). */
export function readPortableOfCheckedSpec(spec: ColumnSpec, v: unknown, path = '', limits: Readonly<JsonLimits> = IMPL_JSON_LIMITS): PortableValue {
  if (v === null) {
    if (spec.nullable === false) throw new CodecError('null_not_allowed', path, `null is not allowed for this ${spec.type} field`);
    return { type: spec.type, value: null } as PortableValue;
  }
  switch (spec.type) {
    case 'string':
      return { type: 'string', value: readString(v, path) };
    case 'int':
      return { type: 'int', value: readInt(v, path) };
    case 'int64':
      return { type: 'int64', value: readInt64(v, path) };
    case 'decimal':
      return { type: 'decimal', value: readDecimal(v, spec, path) };
    case 'float':
      return { type: 'float', value: readFloat(v, path) };
    case 'boolean':
      return { type: 'boolean', value: readBoolean(v, path) };
    case 'datetime':
      return { type: 'datetime', value: readDatetime(v, path) };
    case 'date':
      return { type: 'date', value: readDate(v, path) };
    case 'time':
      return { type: 'time', value: readTime(v, path) };
    case 'json':
      return { type: 'json', value: readJson(v, path, limits) };
    case 'bytes':
      return { type: 'bytes', value: readBytes(v, path) };
  }
}

/** Reads a primary key value: only string, int and int64 may type a key, and a key is never null. */
export function readKeyValue(type: PortableType, v: unknown, path = ''): PortableValue {
  if (!isKeyType(type)) throw new CodecError('invalid_pk_type', path, `a key must be string, int or int64, not ${type}`);
  return readPortable({ type, nullable: false }, v, path);
}
