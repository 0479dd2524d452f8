/**
 * With the `u` flag a valid surrogate pair is one code point, so the only
 * surrogates this pattern can match are lone ones: strings that have no UTF-8
 * form.
 */
const LONE_SURROGATE = /\p{Surrogate}/u;

export function isWellFormedText(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}
