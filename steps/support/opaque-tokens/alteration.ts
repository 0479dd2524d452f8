/**
 * Altering a token the way a feature phrase describes it ("with its last
 * character removed", "with \".x\" appended", ...), for the scenarios that
 * present forged tokens to the server.
 */

export interface Altered {
  value: string;
  /** True when the altered value breaks the request schema itself (the empty string), so the request is sent as intentionally invalid. */
  invalid: boolean;
}

/** A character other than `c`, from the same family, so the token keeps its apparent alphabet. */
function otherCharacter(c: string): string {
  if (/[0-9]/.test(c)) return c === '7' ? '3' : '7';
  if (/[A-Z]/.test(c)) return c === 'Q' ? 'K' : 'Q';
  if (/[a-z]/.test(c)) return c === 'q' ? 'k' : 'q';
  return c === '_' ? '-' : '_';
}

function replaceAt(token: string, at: number): string {
  const index = Math.min(Math.max(at, 0), token.length - 1);
  return `${token.slice(0, index)}${otherCharacter(token.charAt(index))}${token.slice(index + 1)}`;
}

/** Applies an alteration phrase of the features ("with its last character removed", ...) to a token. */
export function alterToken(token: string, phrase: string): Altered {
  const text = phrase.trim();
  if (text === 'unchanged') return { value: token, invalid: false };
  if (text === 'with the character at its middle position replaced') return { value: replaceAt(token, Math.floor(token.length / 2)), invalid: false };
  if (text === 'with the character ten positions before its end replaced') return { value: replaceAt(token, token.length - 10), invalid: false };
  if (text === 'with its last character removed') return { value: token.slice(0, -1), invalid: token.length <= 1 };
  const appended = /^with (".*") appended$/.exec(text);
  if (appended) return { value: token + (JSON.parse(appended[1] as string) as string), invalid: false };
  const replaced = /^replaced by (?:the empty string|the JSON string) (".*")$/.exec(text);
  if (replaced) {
    const value = JSON.parse(replaced[1] as string) as string;
    return { value, invalid: value === '' };
  }
  throw new Error(`unknown token alteration "${phrase}"`);
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * Another base64url character than `c`: `c` with its highest bit flipped,
 * which always changes an encoded bit. Swapping for an arbitrary character
 * could change only the padding bits of a segment's last character, which a
 * strict decoder refuses as non-canonical before any MAC is checked, so the
 * alteration would never reach the check the scenario is about (1 time in
 * 16 for a 32-octet MAC). A character outside the alphabet becomes "A".
 */
function otherBase64url(c: string): string {
  const index = BASE64URL.indexOf(c);
  return index < 0 ? 'A' : (BASE64URL[index ^ 32] as string);
}

/**
 * The alterations the cursor-binding and rebuild-continuation features name
 * (a character swapped for another that changes an encoded bit, a cut, a
 * suffix, the empty string),
 * or undefined for another phrase, which the caller may know.
 */
export function alteredBase64url(token: string, phrase: string): string | undefined {
  const middle = Math.floor(token.length / 2);
  switch (phrase) {
    case 'with its last character replaced by another base64url one':
      return token.slice(0, -1) + otherBase64url(token.slice(-1));
    case 'with the character at its middle position replaced':
      return token.slice(0, middle) + otherBase64url(token.charAt(middle)) + token.slice(middle + 1);
    case 'with its last 8 characters removed':
      return token.slice(0, -8);
    case 'with ".x" appended':
      return `${token}.x`;
    case 'replaced by the empty string ""':
      return '';
  }
  return undefined;
}
