/**
 * Unicode and UTF-8 checks shared by the codec's readers and encoders.
 */

/**
 * With the `u` flag a valid surrogate pair is one code point, so the only
 * surrogates this pattern can match are lone ones: strings that have no UTF-8
 * form.
 */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** String.prototype.isWellFormed (ES2024; Node 20+), declared here because the project's lib is es2023. */
const nativeIsWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

export function isWellFormedText(s: string): boolean {
  // The native check answers the same question without running the regular expression over the string.
  return nativeIsWellFormed === undefined ? !LONE_SURROGATE.test(s) : nativeIsWellFormed.call(s);
}

// fatal: ill-formed input is refused, never replaced by U+FFFD. ignoreBOM keeps
// a leading U+FEFF in the text, so a JSON reader refuses it as a stray character.
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The text of well-formed UTF-8 octets, or undefined when they are ill-formed. */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Octet offset of the first octet that starts an ill-formed UTF-8 sequence
 * (RFC 3629 ranges), or the length when every sequence is well formed.
 */
export function firstInvalidUtf8(bytes: Uint8Array): number {
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
