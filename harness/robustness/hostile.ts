/**
 * The values the profile puts where a request expects text or an integer:
 * what a database, a parser or an index is likely to choke on. Long strings
 * are pseudo-random letters and digits from a seed, so they do not compress
 * (a repeated letter would fit an index entry after compression and hide a
 * length limit), and a length shrinks like any integer, towards the shortest
 * that still fails.
 */

/** A string whose UTF-8 form is not what it spells: these octets replace the marker in the body. */
export interface RawOctets {
  octets: Buffer;
}

export type HostileText = { text: string; label: string } | { raw: RawOctets; label: string };

/** Lengths around the limits an implementation is likely to have (identifiers, index entries, pages). */
export const LENGTHS = [64, 65, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 2048, 2704, 2800, 4096, 8000, 8193, 16_384, 65_536] as const;
export const MAX_LENGTH = 70_000;

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const WIDE = ['é', '€', '𝄞', 'ß', '中'];

/** `length` characters from a small seeded generator (xorshift), so the text does not compress. */
export function incompressible(length: number, seed: number, wide = false): string {
  let x = (seed | 0) || 0x9e3779b9;
  let out = '';
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out += wide ? (WIDE[(x >>> 0) % WIDE.length] as string) : (ALPHABET[(x >>> 0) % ALPHABET.length] as string);
  }
  return out;
}

/** Fixed hostile strings, by family; `base` is the value being replaced (kept around the hostile part where that matters). */
export function hostileTexts(base: string): HostileText[] {
  const around = (inner: string) => (base === '' ? inner : `${base.slice(0, 1)}${inner}${base.slice(1)}`);
  return [
    { text: '\u0000', label: 'U+0000' },
    { text: around('\u0000'), label: 'U+0000 inside' },
    { text: `${base}\u0000`, label: 'trailing U+0000' },
    { text: 'X\ud800', label: 'lone high surrogate' },
    { text: 'X\udfff', label: 'lone low surrogate' },
    { text: '\udc00\ud800', label: 'surrogates in reverse order' },
    { raw: { octets: Buffer.from([0xff, 0xfe]) }, label: 'octets FF FE (not UTF-8)' },
    { raw: { octets: Buffer.from([0xc0, 0xaf]) }, label: 'overlong UTF-8' },
    { raw: { octets: Buffer.from([0xed, 0xa0, 0x80]) }, label: 'UTF-8 of a surrogate' },
    { text: '', label: 'empty' },
    { text: ' ', label: 'one space' },
    { text: around('\u0001\u001f\u007f'), label: 'control characters' },
    { text: around('\u2028\u2029'), label: 'line and paragraph separators' },
    { text: '\ufeff', label: 'byte order mark' },
    { text: '\ufffd', label: 'U+FFFD' },
    { text: '\uffff\u{10ffff}', label: 'noncharacters' },
    { text: "'; DROP TABLE x; --", label: 'SQL text' },
    { text: '%_\\$1', label: 'pattern and placeholder characters' },
    { text: '{"a":', label: 'JSON text' },
    { text: 'e\u0301', label: 'combining sequence' },
  ];
}

/** Number tokens that are not a valid integer of [minimum, maximum] (either bound may be absent). */
export function badIntegerTokens(minimum: number | undefined, maximum: number | undefined, only?: number): string[] {
  const tokens = new Set<string>(['1.5', '1e3', '1.0', '-0', '1E400', '9007199254740992', '18446744073709551616', '-9223372036854775809']);
  if (minimum !== undefined) tokens.add(String(minimum - 1));
  if (maximum !== undefined) {
    tokens.add(String(maximum + 1));
    tokens.add(`${maximum}.0`);
  }
  if (only !== undefined) {
    for (const t of [only - 1, only + 1, 0, -only]) tokens.add(String(t));
    tokens.add(`${only}.0`);
    tokens.add(`${only}e0`);
  }
  return [...tokens].filter((t) => {
    const value = Number(t);
    const integerToken = /^-?(0|[1-9][0-9]*)$/.test(t) && t !== '-0';
    const inRange = (minimum === undefined || value >= minimum) && (maximum === undefined || value <= maximum) && (only === undefined || value === only);
    return !(integerToken && inRange && Number.isSafeInteger(value));
  });
}

/** JSON values of every type, as text, for a member whose schema allows none of some of them. */
export const TYPED_VALUES: readonly { json: string; type: 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object' }[] = [
  { json: 'null', type: 'null' },
  { json: 'true', type: 'boolean' },
  { json: 'false', type: 'boolean' },
  { json: '0', type: 'integer' },
  { json: '-1', type: 'integer' },
  { json: '1.5', type: 'number' },
  { json: '""', type: 'string' },
  { json: '"x"', type: 'string' },
  { json: '[]', type: 'array' },
  { json: '[1,"a"]', type: 'array' },
  { json: '{}', type: 'object' },
  { json: '{"a":1}', type: 'object' },
];

/** Member names a closed object must refuse. */
export const EXTRA_NAMES = ['extra', '__proto__', 'constructor', '', ' ', 'Client_Id', '\u0000', 'x'.repeat(300)];

/** Bodies that are not one JSON object, as octets. */
export function rawBodies(valid: Buffer): { body: Buffer; label: string }[] {
  const text = valid.toString('utf8');
  return [
    { body: Buffer.alloc(0), label: 'empty body' },
    { body: Buffer.from('null'), label: 'body null' },
    { body: Buffer.from('[]'), label: 'body []' },
    { body: Buffer.from('"x"'), label: 'body a string' },
    { body: Buffer.from('42'), label: 'body a number' },
    { body: Buffer.from('{'), label: 'unterminated object' },
    { body: Buffer.from('{}'), label: 'empty object' },
    { body: Buffer.from(`${text} {}`), label: 'a second value after the object' },
    { body: Buffer.from(`${text}x`), label: 'trailing garbage' },
    { body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), valid]), label: 'byte order mark before the object' },
    { body: Buffer.from(text.replace(/}$/, ',}')), label: 'trailing comma' },
    { body: Buffer.from(text.replaceAll('"', "'")), label: 'single quotes' },
    { body: Buffer.from(`/* c */${text}`), label: 'a comment' },
    { body: Buffer.from(text, 'utf16le'), label: 'UTF-16 body' },
    { body: Buffer.concat([valid.subarray(0, Math.floor(valid.length / 2)), Buffer.from([0xff]), valid.subarray(Math.floor(valid.length / 2))]), label: 'an octet FF in the middle' },
    { body: valid.subarray(0, Math.max(1, valid.length - 1)), label: 'truncated by one octet' },
  ];
}
