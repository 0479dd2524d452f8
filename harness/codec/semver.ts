/**
 * Semantic Versioning 2.0.0: the grammar and the precedence order, exactly.
 *
 * Application versions and the minimum client version are gated with this
 * one implementation, so the server's gate and the harness's oracle cannot
 * drift apart. Numbers are compared as unbounded integers (digit strings
 * without leading zeros compare by length first, then lexically), so a core
 * part beyond 2^64 orders correctly. Anything outside the grammar is
 * malformed: no leading `v`, no whitespace, no sign, ASCII only.
 */

export interface SemVer {
  /** MAJOR, MINOR and PATCH as decimal digit strings without leading zeros. */
  core: [string, string, string];
  /** Dot-separated prerelease identifiers; empty for a release. */
  prerelease: string[];
  /** Build identifiers; they never take part in precedence. */
  build: string[];
}

const NUMBER = /^(?:0|[1-9][0-9]*)$/;
const IDENTIFIER = /^[0-9A-Za-z-]+$/;
const DIGITS = /^[0-9]+$/;

/** Parses `text` by the SemVer 2.0.0 grammar; undefined when it is not a well-formed version. */
export function parseSemVer(text: unknown): SemVer | undefined {
  if (typeof text !== 'string') return undefined;
  // Build metadata starts at the first '+'; the prerelease at the first '-' before it.
  const plus = text.indexOf('+');
  const head = plus === -1 ? text : text.slice(0, plus);
  const buildText = plus === -1 ? undefined : text.slice(plus + 1);
  const dash = head.indexOf('-');
  const coreText = dash === -1 ? head : head.slice(0, dash);
  const preText = dash === -1 ? undefined : head.slice(dash + 1);

  const core = coreText.split('.');
  if (core.length !== 3 || !core.every((part) => NUMBER.test(part))) return undefined;

  const prerelease = preText === undefined ? [] : preText.split('.');
  if (preText !== undefined) {
    for (const id of prerelease) {
      if (!IDENTIFIER.test(id)) return undefined;
      // A numeric prerelease identifier has no leading zero; build identifiers may.
      if (DIGITS.test(id) && !NUMBER.test(id)) return undefined;
    }
  }
  const build = buildText === undefined ? [] : buildText.split('.');
  if (buildText !== undefined && !build.every((id) => IDENTIFIER.test(id))) return undefined;
  return { core: core as [string, string, string], prerelease, build };
}

export function isSemVer(text: unknown): text is string {
  return parseSemVer(text) !== undefined;
}

/** Compares two decimal digit strings without leading zeros as unbounded integers. */
function compareNumbers(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Plain code-unit comparison: identifiers are ASCII, so this is ASCII order. */
function compareAscii(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareIdentifiers(a: string, b: string): number {
  const an = DIGITS.test(a);
  const bn = DIGITS.test(b);
  if (an && bn) return compareNumbers(a, b);
  // A numeric identifier ranks below an alphanumeric one.
  if (an !== bn) return an ? -1 : 1;
  return compareAscii(a, b);
}

/** Precedence of two parsed versions: negative, zero (equal precedence) or positive. */
export function compareSemVer(a: SemVer, b: SemVer): number {
  for (let i = 0; i < 3; i++) {
    const c = compareNumbers(a.core[i] as string, b.core[i] as string);
    if (c !== 0) return c;
  }
  const ap = a.prerelease;
  const bp = b.prerelease;
  // A release outranks every prerelease of the same core.
  if (ap.length === 0 || bp.length === 0) return bp.length - ap.length === 0 ? 0 : ap.length === 0 ? 1 : -1;
  for (let i = 0; i < Math.min(ap.length, bp.length); i++) {
    const c = compareIdentifiers(ap[i] as string, bp[i] as string);
    if (c !== 0) return c;
  }
  // Every shared identifier is equal: the shorter list ranks lower.
  return ap.length === bp.length ? 0 : ap.length < bp.length ? -1 : 1;
}

/** Compares two version strings; throws when either is malformed (callers decide how to fail closed). */
export function compareVersions(a: string, b: string): number {
  const pa = parseSemVer(a);
  const pb = parseSemVer(b);
  if (pa === undefined) throw new RangeError(`not a SemVer 2.0.0 version: ${JSON.stringify(a)}`);
  if (pb === undefined) throw new RangeError(`not a SemVer 2.0.0 version: ${JSON.stringify(b)}`);
  return Math.sign(compareSemVer(pa, pb));
}

/**
 * The minimum-client gate: true when `received` is well formed and ranks at or
 * above `minimum`. A malformed value on either side fails closed (false).
 */
export function meetsMinimum(received: unknown, minimum: unknown): boolean {
  const r = parseSemVer(received);
  const m = parseSemVer(minimum);
  if (r === undefined || m === undefined) return false;
  return compareSemVer(r, m) >= 0;
}
