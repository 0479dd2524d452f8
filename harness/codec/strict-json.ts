/**
 * The strict JSON (RFC 8259) reader that protocol bodies, json values and
 * vector packs all go through.
 *
 * `JSON.parse` is not enough for canonical checks: it forgets how a number was
 * written (`42.0` and `42` become the same value), keeps the last of two
 * members with the same name and accepts any nesting depth. This reader keeps
 * every number's exact text in a `RawNumber`, rejects duplicate member names
 * (naming the JSON pointer of the duplicate), trailing data and excessive depth
 * or size, and can record where each object and array starts so callers can
 * report line numbers.
 *
 * Strings are returned as decoded; whether a lone surrogate is acceptable is
 * the caller's choice: message bodies refuse it here (`rejectLoneSurrogates`),
 * portable `json` values judge it with the other I-JSON rules (json-value.ts).
 */
import { CodecError, pointer } from './errors.ts';
import { decodeUtf8, firstInvalidUtf8, isWellFormedText } from './unicode.ts';

/** A JSON number token with its exact source text. */
export class RawNumber {
  readonly raw: string;
  constructor(raw: string) {
    this.raw = raw;
  }
  /** Serializers (JSON.stringify, canonicalize) see the binary64 value. */
  toJSON(): number {
    return Number(this.raw);
  }
  toString(): string {
    return this.raw;
  }
}

export type JsonValue = null | boolean | string | RawNumber | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export interface ParseOptions {
  /** Deepest allowed container nesting (a top-level array is depth 1). */
  maxDepth?: number;
  /** Most values plus member names allowed in the whole text. */
  maxValues?: number;
  /** When given, receives the source offset at which each object and array starts. */
  positions?: WeakMap<object, number>;
  /** Refuse strings and member names holding an unpaired surrogate escape (`invalid_string`): such text has no UTF-8 form. */
  rejectLoneSurrogates?: boolean;
  /** Called with each number token's exact text and JSON pointer, in document order. */
  onNumber?: (raw: string, path: string) => void;
}

/** Container nesting must stay below 128 (upstream's bound for nested json values). */
export const DEFAULT_MAX_DEPTH = 127;
/** At most one million values and member names in one json value. */
export const DEFAULT_MAX_VALUES = 1_000_000;
/**
 * Where no protocol bound applies, nesting is still capped so that a
 * pathological text fails cleanly instead of exhausting the stack.
 */
export const STACK_GUARD_DEPTH = 1000;

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof RawNumber);
}

/**
 * Whether a number token is spelled as the RFC 8785 text of its binary64 value
 * (ECMAScript number-to-string): `1.0`, `1E2`, `-0` and tokens that overflow
 * binary64 are not.
 */
export function isCanonicalNumberText(raw: string): boolean {
  const n = Number(raw);
  return Number.isFinite(n) && String(n) === raw;
}

/** Parses UTF-8 octets, refusing ill-formed UTF-8 rather than replacing it. */
export function parseJsonBytes(bytes: Uint8Array, options: ParseOptions = {}): JsonValue {
  const text = decodeUtf8(bytes);
  if (text === undefined) throw new CodecError('json_syntax', '', `text is not valid UTF-8 (first ill-formed octet at ${firstInvalidUtf8(bytes)})`);
  return parseJson(text, options);
}

export function parseJson(text: string, options: ParseOptions = {}): JsonValue {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  const maxValues = options.maxValues ?? DEFAULT_MAX_VALUES;
  const positions = options.positions;
  const rejectLoneSurrogates = options.rejectLoneSurrogates === true;
  const onNumber = options.onNumber;
  let i = 0;
  let count = 0;

  const fail = (message: string, path: string): never => {
    throw new CodecError('json_syntax', path, `${message} at offset ${i}`, i);
  };
  const skipWs = (): void => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else return;
    }
  };
  const tally = (path: string): void => {
    count++;
    if (count > maxValues) throw new CodecError('json_too_large', path, `more than ${maxValues} values and names`, i);
  };

  const readString = (path: string): string => {
    // Precondition: text[i] === '"'
    const opening = i;
    i++;
    let out = '';
    let start = i;
    for (;;) {
      if (i >= text.length) fail('unterminated string', path);
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        if (rejectLoneSurrogates && !isWellFormedText(out)) {
          throw new CodecError('invalid_string', path, 'string contains an unpaired surrogate escape', opening);
        }
        return out;
      }
      if (c < 0x20) fail('unescaped control character in string', path);
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      const e = text[i + 1];
      i += 2;
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          const hex = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('bad \\u escape', path);
          out += String.fromCharCode(Number.parseInt(hex, 16));
          i += 4;
          break;
        }
        default:
          i -= 1;
          fail('bad escape', path);
      }
      start = i;
    }
  };

  const readValue = (path: string, depth: number): JsonValue => {
    skipWs();
    tally(path);
    const c = text[i];
    if (c === '{') {
      if (depth + 1 > maxDepth) throw new CodecError('json_too_deep', path, `nesting deeper than ${maxDepth}`, i);
      // A null prototype (so a member named __proto__ is an own member like any other), set on a fresh
      // literal rather than made by Object.create(null): V8 keeps such an object in fast mode, so objects
      // with the same members in the same order share one hidden class, and reading them (a row's fields,
      // a for-in over its keys) needs no hash lookup. The members and their order are the same either way.
      const obj: JsonObject = Object.setPrototypeOf({}, null);
      positions?.set(obj, i);
      i++;
      skipWs();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        skipWs();
        if (text[i] !== '"') fail('expected a member name', path);
        const nameStart = i;
        const key = readString(path);
        const childPath = pointer(path, key);
        tally(childPath);
        if (Object.hasOwn(obj, key)) {
          throw new CodecError('json_duplicate_member', childPath, `member ${JSON.stringify(key)} appears twice`, nameStart);
        }
        skipWs();
        if (text[i] !== ':') fail('expected ":"', childPath);
        i++;
        obj[key] = readValue(childPath, depth + 1);
        skipWs();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return obj;
        }
        fail('expected "," or "}"', path);
      }
    }
    if (c === '[') {
      if (depth + 1 > maxDepth) throw new CodecError('json_too_deep', path, `nesting deeper than ${maxDepth}`, i);
      const arr: JsonValue[] = [];
      positions?.set(arr, i);
      i++;
      skipWs();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(readValue(pointer(path, arr.length), depth + 1));
        skipWs();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return arr;
        }
        fail('expected "," or "]"', path);
      }
    }
    if (c === '"') return readString(path);
    if (text.startsWith('true', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('false', i)) {
      i += 5;
      return false;
    }
    if (text.startsWith('null', i)) {
      i += 4;
      return null;
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null) return fail('unexpected character', path);
    i += m[0].length;
    onNumber?.(m[0], path);
    return new RawNumber(m[0]);
  };

  const value = readValue('', 0);
  skipWs();
  if (i !== text.length) fail('trailing data after the JSON value', '');
  return value;
}

/** 1-based line number of a source offset. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let k = 0; k < offset && k < text.length; k++) if (text.charCodeAt(k) === 0x0a) line++;
  return line;
}

/** Plain JS value (numbers as binary64) for consumers such as JSON Schema validators. */
export function toPlain(v: JsonValue): unknown {
  if (v instanceof RawNumber) return Number(v.raw);
  if (Array.isArray(v)) return v.map(toPlain);
  if (isJsonObject(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) Object.defineProperty(out, k, { value: toPlain(x), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return v;
}
