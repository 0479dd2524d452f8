/**
 * The server's clock for protocol decisions (`server_time`, client expiry,
 * anything with a lifetime). It reads the system clock plus an offset; the
 * offset stays zero unless the test controls move it, and those exist only
 * when the server was started with `--test-controls`. Time keeps flowing after
 * a move, so instants the database stamped with its own clock stay comparable.
 */
let offsetMs = 0;

export const serverClock = {
  now(): Date {
    return new Date(Date.now() + offsetMs);
  },
  /** How far the clock is from the system clock, in milliseconds. */
  offsetMs(): number {
    return offsetMs;
  },
};

/** An instant on the wire: UTC with six fractional digits (the clock has milliseconds, so the last three are zero). */
export function serverTime(now = serverClock.now()): string {
  return `${now.toISOString().slice(0, 23)}000Z`;
}

/** Moves the clock forward. Only the test controls call this. */
export function advanceClock(milliseconds: number): void {
  if (!Number.isSafeInteger(milliseconds) || milliseconds < 0) throw new RangeError('the clock only advances by a non-negative whole number of milliseconds');
  offsetMs += milliseconds;
}

/** Puts the clock at an instant (earlier or later). Only the test controls call this. */
export function setClock(instant: Date): void {
  if (Number.isNaN(instant.getTime())) throw new RangeError('not an instant');
  offsetMs = instant.getTime() - Date.now();
}

/** Back to the system clock (in-process tests share one clock per process). */
export function resetClock(): void {
  offsetMs = 0;
}
