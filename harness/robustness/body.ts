/**
 * Writing a request body that JSON.stringify cannot: number tokens spelled
 * exactly as given (`1e3`, `-0`, `1E400`), octets that are not UTF-8 inside
 * a string, a member written twice. Each such piece stands in the value as a
 * private-use marker and is put in place when the body is rendered.
 */

const OPEN = '\ue000';
const CLOSE = '\ue001';

interface Piece {
  marker: string;
  /** JSON text that replaces the quoted marker (a whole value). */
  json?: string;
  /** Octets that replace the marker inside a string. */
  octets?: Buffer;
}

export class BodyWriter {
  readonly #pieces: Piece[] = [];

  #marker(): string {
    return `${OPEN}${this.#pieces.length}${CLOSE}`;
  }

  /** A value written as exactly this JSON text. */
  json(text: string): string {
    const marker = this.#marker();
    this.#pieces.push({ marker, json: text });
    return marker;
  }

  /** Text inside a string written as exactly these octets. */
  octets(octets: Buffer): string {
    const marker = this.#marker();
    this.#pieces.push({ marker, octets });
    return marker;
  }

  render(value: unknown): Buffer {
    let text = JSON.stringify(value);
    for (const piece of this.#pieces) if (piece.json !== undefined) text = text.replaceAll(JSON.stringify(piece.marker), piece.json);
    let parts: (string | Buffer)[] = [text];
    for (const piece of this.#pieces) {
      if (piece.octets === undefined) continue;
      const octets = piece.octets;
      parts = parts.flatMap((part) => (typeof part === 'string' ? part.split(piece.marker).flatMap((s, i) => (i === 0 ? [s] : [octets, s])) : [part]));
    }
    return Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : part)));
  }
}

/** The JSON text of an object with its first member written twice (same value), or undefined for an empty object. */
export function withDuplicateMember(object: Record<string, unknown>): string | undefined {
  const [first] = Object.keys(object);
  if (first === undefined) return undefined;
  const text = JSON.stringify(object);
  return `{${JSON.stringify(first)}:${JSON.stringify(object[first])},${text.slice(1)}`;
}

/** Characters a terminal would not show: controls, line and paragraph separators, lone surrogates, the byte order mark. */
const INVISIBLE = /^(\p{Cc}|\p{Cs}|[\u2028\u2029\ufeff])$/u;

/** A body for a person to read: long strings shortened, non-UTF-8 octets shown as \xNN, cut at `max` characters. */
export function readableBody(body: Buffer, max = 700): string {
  const text = body.toString('utf8');
  const shown = Buffer.from(text, 'utf8').equals(body) ? text : [...body].map((octet) => (octet < 0x80 ? String.fromCharCode(octet) : `\\x${octet.toString(16).padStart(2, '0')}`)).join('');
  const shortened = shown.replace(/"((?:[^"\\]|\\.){81,})"/g, (_all, inner: string) => `"${inner.slice(0, 24)}…<${inner.length} characters>…${inner.slice(-8)}"`);
  const visible = [...shortened].map((c) => (INVISIBLE.test(c) ? `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}` : c)).join('');
  return visible.length > max ? `${visible.slice(0, max)}… (${body.length} octets)` : visible;
}
