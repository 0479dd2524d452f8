/**
 * The server's clock for protocol decisions (`server_time`, client expiry,
 * anything with a lifetime). It reads the system clock plus an offset; the
 * offset stays zero unless the test controls move it, and those exist only
 * when the server was started with `--test-controls`. Time keeps flowing after
 * a move, so instants the database stamped with its own clock stay comparable.
 *
 * Each server instance has a clock of its own: the router runs every request
 * inside its instance's clock (`withClock`), so several instances in one
 * process (the conformance harness's server host, the in-process tests) never
 * see each other's moves. Code outside any request reads the process clock.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** One instance's clock: how far it is from the system clock. */
export interface ClockState {
  offsetMs: number;
}

const processClock: ClockState = { offsetMs: 0 };
const instanceClock = new AsyncLocalStorage<ClockState>();
const current = (): ClockState => instanceClock.getStore() ?? processClock;

/** A clock for a new server instance, at the system time. */
export function newClock(): ClockState {
  return { offsetMs: 0 };
}

/** Runs `work` (and everything it awaits) on `clock`. */
export function withClock<T>(clock: ClockState, work: () => T): T {
  return instanceClock.run(clock, work);
}

export const serverClock = {
  now(): Date {
    return new Date(Date.now() + current().offsetMs);
  },
  /** How far the clock is from the system clock, in milliseconds. */
  offsetMs(): number {
    return current().offsetMs;
  },
};

/** An instant on the wire: UTC with six fractional digits (the clock has milliseconds, so the last three are zero). */
export function serverTime(now = serverClock.now()): string {
  return `${now.toISOString().slice(0, 23)}000Z`;
}

/** Moves the clock forward. Only the test controls call this. */
export function advanceClock(milliseconds: number): void {
  if (!Number.isSafeInteger(milliseconds) || milliseconds < 0) throw new RangeError('the clock only advances by a non-negative whole number of milliseconds');
  current().offsetMs += milliseconds;
}

/** Puts the clock at an instant (earlier or later). Only the test controls call this. */
export function setClock(instant: Date): void {
  if (Number.isNaN(instant.getTime())) throw new RangeError('not an instant');
  current().offsetMs = instant.getTime() - Date.now();
}

/** Back to the system clock. */
export function resetClock(): void {
  current().offsetMs = 0;
}
