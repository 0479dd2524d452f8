/**
 * The stale-client interval: a required finite positive duration (default 30
 * days). A bad value stops the server at start-up; it is never defaulted or
 * clamped.
 */
export const DEFAULT_STALE_CLIENT_INTERVAL = '30d';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const FORM = /^([1-9][0-9]*)(ms|s|m|h|d)$/;

/** Milliseconds of `<positive integer><ms|s|m|h|d>`, e.g. `30d`, `12h`, `1500ms`. */
export function parseStaleInterval(text: string): number {
  const match = FORM.exec(text.trim());
  const count = match?.[1];
  const unit = match?.[2];
  if (count === undefined || unit === undefined) {
    throw new Error(`--stale-client-interval must be a positive whole number followed by ms, s, m, h or d (e.g. 30d), not ${JSON.stringify(text)}`);
  }
  const ms = Number(count) * (UNIT_MS[unit] as number);
  // Past ~285,000 years the instant arithmetic stops being exact: such a value is not a usable interval.
  if (!Number.isSafeInteger(ms) || ms > 8.64e15) throw new Error(`--stale-client-interval ${JSON.stringify(text)} is too large to be a finite interval`);
  return ms;
}
