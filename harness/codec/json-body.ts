/**
 * Reads one protocol message body (a request or response) from its octets,
 * with the strict reader of strict-json.ts.
 *
 * A body must be well-formed UTF-8 (a leading byte order mark is refused) and
 * hold exactly one JSON value with no duplicate member name at any depth and
 * no string that lacks a UTF-8 form. Besides the value, the result reports
 * what the protocol's checks need and a plain parse forgets: the octet size of
 * the body, how deep it nests, and every number token not spelled as the
 * RFC 8785 text of its value (`1.0`, `1e2`, `-0`). Failures name the JSON
 * pointer and the octet offset where reading stopped.
 */
import { CodecError, type CodecErrorCode } from './errors.ts';
import { isCanonicalNumberText, isJsonObject, type JsonValue, parseJson, STACK_GUARD_DEPTH, toPlain } from './strict-json.ts';
import { decodeUtf8, firstInvalidUtf8 } from './unicode.ts';

export interface NumberToken {
  pointer: string;
  text: string;
}

export interface JsonReadOk {
  ok: true;
  /** The value with numbers as binary64 and ordinary objects, ready for a JSON Schema validator. */
  value: unknown;
  /** Octets of the whole body as received. */
  bodyOctets: number;
  /** Deepest nesting of arrays and objects (a top-level container is depth 1). */
  maxDepth: number;
  /** Number tokens not written as the RFC 8785 text of their value, in document order. */
  nonCanonicalNumbers: NumberToken[];
}

export interface JsonReadFailure {
  ok: false;
  /** `json_syntax` (also for ill-formed UTF-8), `json_duplicate_member`, `invalid_string` (unpaired surrogate) or `json_too_deep`. */
  code: CodecErrorCode;
  /** JSON pointer of the offending member or value ('' = the body itself). */
  pointer: string;
  /** Octet offset into the body where the problem was found. */
  offset: number;
  message: string;
}

export type JsonReadResult = JsonReadOk | JsonReadFailure;

/** Reads a message body; a string is taken as the text of a UTF-8 body. */
export function readJsonBody(body: Uint8Array | string): JsonReadResult {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const text = decodeUtf8(bytes);
  if (text === undefined) {
    const offset = firstInvalidUtf8(bytes);
    return { ok: false, code: 'json_syntax', pointer: '', offset, message: `body is not valid UTF-8 (first ill-formed octet at ${offset})` };
  }
  const nonCanonicalNumbers: NumberToken[] = [];
  let tree: JsonValue;
  try {
    tree = parseJson(text, {
      // The protocol bounds neither nesting nor value count of a body (128 levels is one adapter's extra).
      maxDepth: STACK_GUARD_DEPTH,
      maxValues: Number.POSITIVE_INFINITY,
      rejectLoneSurrogates: true,
      onNumber: (raw, pointer) => {
        if (!isCanonicalNumberText(raw)) nonCanonicalNumbers.push({ pointer, text: raw });
      },
    });
  } catch (e) {
    if (!(e instanceof CodecError)) throw e;
    const offset = new TextEncoder().encode(text.slice(0, e.offset ?? 0)).length;
    return { ok: false, code: e.code, pointer: e.path, offset, message: e.message };
  }
  return { ok: true, value: toPlain(tree), bodyOctets: bytes.length, maxDepth: depthOf(tree), nonCanonicalNumbers };
}

/** Nesting depth of containers: 0 for a scalar, 1 for a flat array or object. */
function depthOf(v: JsonValue): number {
  const children = Array.isArray(v) ? v : isJsonObject(v) ? Object.values(v) : undefined;
  if (children === undefined) return 0;
  let deepest = 0;
  for (const child of children) deepest = Math.max(deepest, depthOf(child));
  return deepest + 1;
}
