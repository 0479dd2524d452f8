/**
 * RFC 8785 (JSON Canonicalization Scheme) serialization.
 *
 * The `canonicalize` package implements the scheme: member names sorted by
 * UTF-16 code units, ECMAScript number serialization, minimal string escaping.
 * This wrapper turns its plain `Error`s into CodecErrors and works directly on
 * strict-json trees (a RawNumber serializes as its binary64 value).
 *
 * Fast path: `JSON.stringify` writes the scheme's number and string forms
 * (they are ECMAScript's) and members in each object's own key order. So a
 * tree of plain JSON values is copied with every object's members inserted
 * in code-unit order (an object already in that order is reused, not
 * copied) and stringified once: one flat string, where the package builds
 * it by concatenating many pieces. Anything the copy cannot order or does
 * not know (a member name that is an array index, which objects always list
 * first; `__proto__`; a RawNumber or other toJSON; a lone surrogate; a
 * non-finite number; a boxed value; a cycle or a very deep tree) goes to the
 * package as before.
 */
import canonicalize from 'canonicalize';
import { CodecError } from './errors.ts';
import { isWellFormedText } from './unicode.ts';

/** Deeper trees are left to the package, which also detects cycles. */
const FAST_PATH_DEPTH = 64;

/** Returned by `inCanonicalOrder` for a tree the fast path leaves to the package. */
const NOT_PLAIN: unique symbol = Symbol('not plain JSON');

/** Canonical decimal spelling of an array index (0 to 2^32 - 2), which objects list before all other names. */
function isArrayIndex(key: string): boolean {
  const first = key.charCodeAt(0);
  if (first < 48 || first > 57 || (first === 48 && key.length > 1) || key.length > 10) return false;
  for (let i = 1; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return Number(key) < 4294967295;
}

/** `value` (or a copy) whose objects list their members in code-unit order, or NOT_PLAIN. */
function inCanonicalOrder(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
      return isWellFormedText(value) ? value : NOT_PLAIN;
    case 'number':
      return Number.isFinite(value) ? value : NOT_PLAIN;
    case 'boolean':
      return value;
    case 'object': {
      if (value === null) return null;
      if (depth >= FAST_PATH_DEPTH) return NOT_PLAIN;
      if (Array.isArray(value)) {
        let copy: unknown[] | undefined;
        for (let i = 0; i < value.length; i++) {
          const item = inCanonicalOrder(value[i], depth + 1);
          if (item === NOT_PLAIN) return NOT_PLAIN;
          if (item !== value[i]) copy ??= value.slice(0, i);
          copy?.push(item);
        }
        return copy ?? value;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return NOT_PLAIN;
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record);
      let sorted = true;
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i] as string;
        if (isArrayIndex(key) || key === '__proto__' || !isWellFormedText(key)) return NOT_PLAIN;
        if (i > 0 && !((keys[i - 1] as string) < key)) sorted = false;
      }
      if (!sorted) keys.sort();
      let copy: Record<string, unknown> | undefined = sorted ? undefined : {};
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i] as string;
        const original = record[key];
        const member = inCanonicalOrder(original, depth + 1);
        if (member === NOT_PLAIN) return NOT_PLAIN;
        if (copy === undefined && member !== original) {
          copy = {};
          for (let j = 0; j < i; j++) copy[keys[j] as string] = record[keys[j] as string];
        }
        if (copy !== undefined) copy[key] = member;
      }
      return copy ?? value;
    }
    default:
      return NOT_PLAIN;
  }
}

export function canonicalJson(value: unknown, path = ''): string {
  const ordered = inCanonicalOrder(value, 0);
  if (ordered !== NOT_PLAIN) return JSON.stringify(ordered);
  let out: string | undefined;
  try {
    out = canonicalize(value);
  } catch (e) {
    throw new CodecError('invalid_json', path, `not representable in canonical JSON: ${(e as Error).message}`);
  }
  if (out === undefined) throw new CodecError('invalid_json', path, 'value has no JSON representation');
  return out;
}

export function canonicalJsonBytes(value: unknown, path = ''): Uint8Array {
  return Buffer.from(canonicalJson(value, path), 'utf8');
}
