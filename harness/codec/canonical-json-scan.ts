/**
 * A one-pass check that a `json` value's text is already canonical I-JSON,
 * without building a tree or serializing it again. It only ever answers
 * "certainly acceptable": anything unusual (an escape other than the short
 * ones RFC 8785 writes, a key with an escape, a lone surrogate, a
 * noncharacter, a number not in ECMAScript form, a bound reached) gets
 * `false`, and the caller then runs the full reader, which accepts or names
 * the exact failure. So accepting here never changes what is refused, or how.
 *
 * What "canonical" means here is what json-value.ts checks: strict JSON
 * within the depth and size bounds, no duplicate members, I-JSON strings and
 * numbers, and the text equal to its RFC 8785 serialization (no whitespace,
 * members in UTF-16 code unit order, minimal escapes, ECMAScript numbers).
 */

export interface ScanLimits {
  maxDepth: number;
  maxValues: number;
}

/** Control characters that RFC 8785 (JSON.stringify) writes with a two-character escape. */
const SHORT_ESCAPES: Readonly<Record<string, number>> = { '"': 0x22, '\\': 0x5c, b: 0x08, f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09 };

function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;
}

function isLowerHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66);
}

class Reject extends Error {}
const REJECT = new Reject();

// The scan's state lives at module level rather than in closures made per call: a json value is
// checked once per row, and making four closures and their context each time cost more than the
// scan of a short value. The scan calls nothing outside this module, so one scan runs at a time.
let text = '';
let i = 0;
let n = 0;
let count = 0;
let maxDepth = 0;
let maxValues = 0;

/** Whether `text` is certainly a canonical I-JSON value within the limits (false means: ask the full reader). */
export function isCertainlyCanonicalJson(value: string, limits: Readonly<ScanLimits>): boolean {
  text = value;
  i = 0;
  n = value.length;
  count = 0;
  maxDepth = limits.maxDepth;
  maxValues = limits.maxValues;
  try {
    if (n === 0) return false;
    scanValue(0);
    return i === n;
  } catch (e) {
    if (e === REJECT) return false;
    // A stack overflow on pathological nesting: let the full reader judge it.
    if (e instanceof RangeError) return false;
    throw e;
  } finally {
    text = '';
  }
}

function tally(): void {
  count++;
  if (count > maxValues) throw REJECT;
}

/** Scans a string at text[i] === '"'; returns whether it held an escape. */
function scanString(): boolean {
  i++;
  let escaped = false;
  for (;;) {
    if (i >= n) throw REJECT;
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i++;
      return escaped;
    }
    if (c < 0x20) throw REJECT;
    if (c === 0x5c) {
      escaped = true;
      const e = text[i + 1] ?? '';
      if (Object.hasOwn(SHORT_ESCAPES, e)) {
        i += 2;
        continue;
      }
      // \u00xx, lowercase, only for a control character without a short escape.
      if (e !== 'u' || text.charCodeAt(i + 2) !== 0x30 || text.charCodeAt(i + 3) !== 0x30) throw REJECT;
      const h1 = text.charCodeAt(i + 4);
      const h2 = text.charCodeAt(i + 5);
      if (!isLowerHex(h1) || !isLowerHex(h2)) throw REJECT;
      const code = Number.parseInt(text.slice(i + 4, i + 6), 16);
      if (code >= 0x20 || code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d) throw REJECT;
      i += 6;
      continue;
    }
    if (c < 0xd800) {
      if (c >= 0xfdd0 && c <= 0xfdef) throw REJECT;
      i++;
      continue;
    }
    if (c <= 0xdbff) {
      const low = text.charCodeAt(i + 1);
      if (!(low >= 0xdc00 && low <= 0xdfff)) throw REJECT;
      const cp = ((c - 0xd800) << 10) + (low - 0xdc00) + 0x10000;
      if ((cp & 0xfffe) === 0xfffe) throw REJECT;
      i += 2;
      continue;
    }
    // A lone low surrogate, or a BMP noncharacter at the top of the plane.
    if (c <= 0xdfff || (c >= 0xfdd0 && c <= 0xfdef) || c >= 0xfffe) throw REJECT;
    i++;
  }
}

/** Longest run of digits whose integer is certainly a safe integer (below 2^53) and so prints as itself. */
const SAFE_INTEGER_DIGITS = 15;

function scanNumber(): void {
  const start = i;
  while (i < n && isNumberChar(text.charCodeAt(i))) i++;
  // An integer token of 1 to 15 digits, without a leading zero (a lone 0 aside) and not -0, is its own
  // ECMAScript spelling and a safe integer: accepted without converting it twice.
  const first = text.charCodeAt(start) === 0x2d ? start + 1 : start;
  const digits = i - first;
  if (digits >= 1 && digits <= SAFE_INTEGER_DIGITS && (text.charCodeAt(first) !== 0x30 ? true : digits === 1 && first === start)) {
    let allDigits = true;
    for (let k = first; k < i; k++) {
      const c = text.charCodeAt(k);
      if (c < 0x30 || c > 0x39) {
        allDigits = false;
        break;
      }
    }
    if (allDigits) return;
  }
  const token = text.slice(start, i);
  const value = Number(token);
  // The ECMAScript spelling of a finite binary64 value is always a valid JSON number token.
  if (!Number.isFinite(value) || String(value) !== token) throw REJECT;
  if (Number.isInteger(value) && Math.abs(value) > Number.MAX_SAFE_INTEGER) throw REJECT;
}

function scanValue(depth: number): void {
  tally();
  const c = text.charCodeAt(i);
  if (c === 0x7b) {
    if (depth + 1 > maxDepth) throw REJECT;
    i++;
    if (text.charCodeAt(i) === 0x7d) {
      i++;
      return;
    }
    let previous: string | undefined;
    for (;;) {
      if (text.charCodeAt(i) !== 0x22) throw REJECT;
      const nameStart = i + 1;
      if (scanString()) throw REJECT;
      const name = text.slice(nameStart, i - 1);
      if (previous !== undefined && !(previous < name)) throw REJECT;
      previous = name;
      tally();
      if (text.charCodeAt(i) !== 0x3a) throw REJECT;
      i++;
      scanValue(depth + 1);
      const next = text.charCodeAt(i);
      i++;
      if (next === 0x2c) continue;
      if (next === 0x7d) return;
      throw REJECT;
    }
  }
  if (c === 0x5b) {
    if (depth + 1 > maxDepth) throw REJECT;
    i++;
    if (text.charCodeAt(i) === 0x5d) {
      i++;
      return;
    }
    for (;;) {
      scanValue(depth + 1);
      const next = text.charCodeAt(i);
      i++;
      if (next === 0x2c) continue;
      if (next === 0x5d) return;
      throw REJECT;
    }
  }
  if (c === 0x22) {
    scanString();
    return;
  }
  if (text.startsWith('true', i)) i += 4;
  else if (text.startsWith('false', i)) i += 5;
  else if (text.startsWith('null', i)) i += 4;
  else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) scanNumber();
  else throw REJECT;
}
