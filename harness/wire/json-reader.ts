/**
 * Reads one JSON request or response body from raw octets.
 *
 * JSON.parse cannot serve the protocol: it silently keeps the last of two
 * equal member names, accepts lone surrogate escapes, and forgets how a number
 * was written (`1.0` and `1` look the same afterwards). This scanner rejects
 * invalid UTF-8, anything but exactly one JSON value, and duplicate member
 * names at any depth (naming the JSON pointer of the duplicate), and reports
 * the octet size and every number token whose text is not its RFC 8785 form.
 */

export interface NumberToken {
  pointer: string;
  text: string;
}

export interface JsonReadOk {
  ok: true;
  value: unknown;
  /** Octets of the whole body as received. */
  bodyOctets: number;
  /** Deepest nesting of arrays and objects (the top-level value is depth 1). */
  maxDepth: number;
  /** Number tokens not written as the RFC 8785 text of their value (`1.0`, `1e2`, `-0`, `01` is a syntax error). */
  nonCanonicalNumbers: NumberToken[];
}

export type JsonReadProblem = 'invalid-utf8' | 'syntax' | 'duplicate-member' | 'lone-surrogate' | 'too-deep';

export interface JsonReadFailure {
  ok: false;
  problem: JsonReadProblem;
  /** JSON pointer of the offending member or value, when one is known. */
  pointer: string | undefined;
  /** Octet offset into the body where the problem was found. */
  offset: number;
  message: string;
}

export type JsonReadResult = JsonReadOk | JsonReadFailure;

/** Guard against stack exhaustion; far above any depth a protocol message needs. */
export const MAX_SCAN_DEPTH = 1000;

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function readJson(body: Uint8Array | string): JsonReadResult {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  let text: string;
  try {
    // ignoreBOM keeps a leading U+FEFF in the text, so the scanner rejects it as non-JSON.
    text = decoder.decode(bytes);
  } catch {
    return { ok: false, problem: 'invalid-utf8', pointer: undefined, offset: firstInvalidUtf8(bytes), message: 'body is not valid UTF-8' };
  }
  const scanner = new Scanner(text);
  try {
    scanner.skipWhitespace();
    const value = scanner.value('', 1);
    scanner.skipWhitespace();
    if (!scanner.atEnd()) scanner.fail('syntax', undefined, 'unexpected data after the JSON value');
    return { ok: true, value, bodyOctets: bytes.length, maxDepth: scanner.maxDepth, nonCanonicalNumbers: scanner.numbers };
  } catch (error) {
    if (error instanceof ScanError) {
      return {
        ok: false,
        problem: error.problem,
        pointer: error.pointer,
        offset: new TextEncoder().encode(text.slice(0, error.index)).length,
        message: error.message,
      };
    }
    throw error;
  }
}

/** Appends one reference token to a JSON pointer, escaping `~` and `/`. */
export function childPointer(pointer: string, token: string | number): string {
  return `${pointer}/${String(token).replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

class ScanError extends Error {
  readonly problem: JsonReadProblem;
  readonly pointer: string | undefined;
  readonly index: number;
  constructor(problem: JsonReadProblem, pointer: string | undefined, index: number, message: string) {
    super(message);
    this.problem = problem;
    this.pointer = pointer;
    this.index = index;
  }
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

class Scanner {
  readonly text: string;
  index = 0;
  maxDepth = 0;
  readonly numbers: NumberToken[] = [];

  constructor(text: string) {
    this.text = text;
  }

  atEnd(): boolean {
    return this.index >= this.text.length;
  }

  fail(problem: JsonReadProblem, pointer: string | undefined, message: string, index = this.index): never {
    throw new ScanError(problem, pointer, index, message);
  }

  skipWhitespace(): void {
    while (!this.atEnd()) {
      const c = this.text.charCodeAt(this.index);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.index++;
    }
  }

  value(pointer: string, depth: number): unknown {
    const c = this.text[this.index];
    if (c === '{') return this.object(pointer, depth);
    if (c === '[') return this.array(pointer, depth);
    if (c === '"') return this.string(pointer);
    if (c === 't') return this.literal('true', true, pointer);
    if (c === 'f') return this.literal('false', false, pointer);
    if (c === 'n') return this.literal('null', null, pointer);
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number(pointer);
    return this.fail('syntax', pointer, c === undefined ? 'unexpected end of input' : `unexpected character ${JSON.stringify(c)}`);
  }

  enter(pointer: string, depth: number): void {
    if (depth > MAX_SCAN_DEPTH) this.fail('too-deep', pointer, `nesting deeper than ${MAX_SCAN_DEPTH}`);
    if (depth > this.maxDepth) this.maxDepth = depth;
  }

  object(pointer: string, depth: number): Record<string, unknown> {
    this.enter(pointer, depth);
    this.index++;
    const result: Record<string, unknown> = {};
    const seen = new Set<string>();
    this.skipWhitespace();
    if (this.text[this.index] === '}') {
      this.index++;
      return result;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text[this.index] !== '"') this.fail('syntax', pointer, 'expected a member name');
      const nameStart = this.index;
      const name = this.string(pointer);
      const member = childPointer(pointer, name);
      if (seen.has(name)) this.fail('duplicate-member', member, `duplicate member name ${JSON.stringify(name)}`, nameStart);
      seen.add(name);
      this.skipWhitespace();
      if (this.text[this.index] !== ':') this.fail('syntax', member, 'expected ":" after a member name');
      this.index++;
      this.skipWhitespace();
      // defineProperty keeps a member named "__proto__" an ordinary own member, as JSON.parse does.
      Object.defineProperty(result, name, { value: this.value(member, depth + 1), enumerable: true, writable: true, configurable: true });
      this.skipWhitespace();
      const next = this.text[this.index];
      this.index++;
      if (next === '}') return result;
      if (next !== ',') this.fail('syntax', pointer, 'expected "," or "}" in an object', this.index - 1);
    }
  }

  array(pointer: string, depth: number): unknown[] {
    this.enter(pointer, depth);
    this.index++;
    const result: unknown[] = [];
    this.skipWhitespace();
    if (this.text[this.index] === ']') {
      this.index++;
      return result;
    }
    for (;;) {
      this.skipWhitespace();
      result.push(this.value(childPointer(pointer, result.length), depth + 1));
      this.skipWhitespace();
      const next = this.text[this.index];
      this.index++;
      if (next === ']') return result;
      if (next !== ',') this.fail('syntax', pointer, 'expected "," or "]" in an array', this.index - 1);
    }
  }

  string(pointer: string): string {
    const start = this.index;
    this.index++;
    let out = '';
    for (;;) {
      if (this.atEnd()) this.fail('syntax', pointer, 'unterminated string', start);
      const c = this.text.charCodeAt(this.index);
      if (c === 0x22) {
        this.index++;
        break;
      }
      if (c < 0x20) this.fail('syntax', pointer, 'control character inside a string');
      if (c !== 0x5c) {
        out += this.text[this.index];
        this.index++;
        continue;
      }
      const escaped = this.text[this.index + 1];
      this.index += 2;
      const simple = SIMPLE_ESCAPES[escaped ?? ''];
      if (simple !== undefined) {
        out += simple;
        continue;
      }
      if (escaped !== 'u') this.fail('syntax', pointer, 'invalid escape sequence', this.index - 2);
      const hex = this.text.slice(this.index, this.index + 4);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('syntax', pointer, 'invalid \\u escape', this.index - 2);
      out += String.fromCharCode(Number.parseInt(hex, 16));
      this.index += 4;
    }
    // Escapes may produce unpaired surrogates; such a string is not Unicode text (I-JSON).
    if (/\p{Cs}/u.test(out)) this.fail('lone-surrogate', pointer, 'string contains an unpaired surrogate', start);
    return out;
  }

  number(pointer: string): number {
    NUMBER.lastIndex = this.index;
    const match = NUMBER.exec(this.text);
    if (match === null) return this.fail('syntax', pointer, 'invalid number');
    const text = match[0];
    this.index += text.length;
    const next = this.text[this.index];
    if (next !== undefined && /[0-9.eE+-]/.test(next)) this.fail('syntax', pointer, 'invalid number');
    const value = Number(text);
    // ECMAScript number-to-string is the RFC 8785 number form (and prints -0 as 0).
    if (!Number.isFinite(value) || String(value) !== text) this.numbers.push({ pointer, text });
    return value;
  }

  literal<T>(word: string, value: T, pointer: string): T {
    if (this.text.startsWith(word, this.index)) {
      this.index += word.length;
      return value;
    }
    return this.fail('syntax', pointer, 'invalid literal');
  }
}

const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/** Octet offset of the first byte that starts an ill-formed UTF-8 sequence (RFC 3629 ranges). */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i] ?? 0;
    if (lead < 0x80) {
      i++;
      continue;
    }
    const trailing = lead >= 0xc2 && lead <= 0xdf ? 1 : lead >= 0xe0 && lead <= 0xef ? 2 : lead >= 0xf0 && lead <= 0xf4 ? 3 : 0;
    if (trailing === 0) return i;
    // The second octet is narrower after E0, ED, F0 and F4 (no overlongs, surrogates or > U+10FFFF).
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
    const second = bytes[i + 1];
    if (second === undefined || second < low || second > high) return i;
    for (let k = 2; k <= trailing; k++) {
      const next = bytes[i + k];
      if (next === undefined || next < 0x80 || next > 0xbf) return i;
    }
    i += trailing + 1;
  }
  return bytes.length;
}
