/**
 * Checks one row or key value against its manifest field type, in the exact
 * canonical wire form of each portable type. Non-canonical text is reported,
 * never normalised: the wire accepts only one spelling of each value.
 * (Number token spelling, e.g. `1.0` for a float, is visible only in the raw
 * bytes; see the canonical-number rule fed by the JSON reader.)
 */
import canonicalize from 'canonicalize';
import type { ColumnSchema, PortableType } from './generated.ts';

const INT64 = /^(0|-?[1-9][0-9]*)$/;
const DECIMAL = /^(0|-?(0\.[0-9]*[1-9]|[1-9][0-9]*(\.[0-9]*[1-9])?))$/;
const DATETIME = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}Z$/;
const DATE = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/;
const TIME = /^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Returns why `value` is not a valid wire value for `field`, or undefined when it is. */
export function portableValueProblem(field: Pick<ColumnSchema, 'type' | 'nullable' | 'precision' | 'scale'>, value: unknown): string | undefined {
  if (value === null) return field.nullable ? undefined : 'null in a non-nullable field';
  return typeProblem(field.type, value, field);
}

/** Returns why `value` is not a valid key value of the given key type. */
export function keyValueProblem(type: PortableType, value: unknown): string | undefined {
  if (type !== 'string' && type !== 'int' && type !== 'int64') return `type ${type} cannot be a primary key`;
  if (value === null) return 'a primary key value is never null';
  return typeProblem(type, value, {});
}

function typeProblem(type: PortableType, value: unknown, field: { precision?: number; scale?: number }): string | undefined {
  switch (type) {
    case 'string':
      if (typeof value !== 'string') return 'string field needs a JSON string';
      return /\p{Cs}/u.test(value) ? 'string holds an unpaired surrogate' : undefined;
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value)) return 'int field needs a JSON integer';
      if (Object.is(value, -0)) return 'int is -0';
      return value < -2147483648 || value > 2147483647 ? 'int outside -2147483648..2147483647' : undefined;
    case 'int64':
      if (typeof value !== 'string' || !INT64.test(value)) return 'int64 needs a canonical base-10 string';
      return BigInt(value) < INT64_MIN || BigInt(value) > INT64_MAX ? 'int64 out of range' : undefined;
    case 'decimal':
      return decimalProblem(value, field);
    case 'float':
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'float needs a finite JSON number';
      return Object.is(value, -0) ? 'float is -0' : undefined;
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'boolean needs true or false';
    case 'datetime': {
      const m = typeof value === 'string' ? DATETIME.exec(value) : null;
      return m !== null && dateExists(m[1], m[2], m[3]) ? undefined : 'datetime needs YYYY-MM-DDTHH:MM:SS.ffffffZ on a real date';
    }
    case 'date': {
      const m = typeof value === 'string' ? DATE.exec(value) : null;
      return m !== null && dateExists(m[1], m[2], m[3]) ? undefined : 'date needs YYYY-MM-DD on a real date';
    }
    case 'time':
      return typeof value === 'string' && TIME.test(value) ? undefined : 'time needs HH:MM:SS.ffffff';
    case 'json':
      return jsonProblem(value);
    case 'bytes':
      if (typeof value !== 'string' || !BASE64URL.test(value) || value.length % 4 === 1) return 'bytes needs unpadded base64url';
      return Buffer.from(value, 'base64url').toString('base64url') === value ? undefined : 'bytes is not canonical base64url';
  }
}

function decimalProblem(value: unknown, field: { precision?: number; scale?: number }): string | undefined {
  if (typeof value !== 'string' || !DECIMAL.test(value)) return 'decimal needs canonical decimal text';
  const [integer = '', fraction = ''] = value.replace('-', '').split('.');
  const integerDigits = integer === '0' ? 0 : integer.length;
  if (field.precision !== undefined && field.scale !== undefined) {
    if (fraction.length > field.scale) return `decimal has more than ${field.scale} fraction digits`;
    if (integerDigits > field.precision - field.scale) return `decimal has more than ${field.precision - field.scale} integer digits`;
  }
  return undefined;
}

function jsonProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'json field needs a JSON string holding canonical JSON';
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return 'json field does not hold one complete JSON value';
  }
  if (hasUnsafeInteger(parsed)) return 'json field holds an integer beyond ±9007199254740991';
  // Duplicate names, member order, spacing and number spelling all change the canonical text.
  return canonicalize(parsed) === value ? undefined : 'json field is not in RFC 8785 canonical form';
}

function hasUnsafeInteger(value: unknown): boolean {
  if (typeof value === 'number') return Number.isInteger(value) && !Number.isSafeInteger(value);
  if (Array.isArray(value)) return value.some(hasUnsafeInteger);
  if (value !== null && typeof value === 'object') return Object.values(value).some(hasUnsafeInteger);
  return false;
}

function dateExists(year: string | undefined, month: string | undefined, day: string | undefined): boolean {
  const y = Number(year);
  const m = Number(month);
  const d = Number(day);
  if (m < 1 || m > 12 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1] ?? 0;
  return d <= days;
}
