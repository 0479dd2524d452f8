/**
 * The capture worker's test-only failure injection, armed through
 * the controls `capture.poison`, `capture.crash-at` and `capture.hold` (served
 * by controls/routes.ts with `--test-controls` only). The worker consults it at
 * two kinds of places: before materializing a transaction with row events
 * (poison: that transaction fails like any failed materialization and is
 * quarantined), and at each crash point after the materialization commit
 * (crash: the worker's sessions are cut there, as by kill), and just before
 * the materialization commit (hold: the worker waits there, its transaction
 * open, until resumed or killed). Each armed failure or hold fires once.
 * Nothing is armed unless a test control arms it.
 */
import { CaptureStopped, type CrashPoint, HoldNotArmed } from '../core/capture-control.ts';
import { CaptureFailure, type RowEvent } from './transaction.ts';

/** A worker waiting before its materialization commit: `release` lets it commit, `abort` makes it give up. */
interface Hold {
  release: () => void;
  abort: () => void;
}

export class CaptureTestControls {
  #poisonArmed = false;
  #crashAt: CrashPoint | undefined;
  #holdArmed = false;
  #held: Hold | undefined;
  /** Callers waiting for the worker to reach an armed hold. */
  #holdWaiters: Array<() => void> = [];

  /** The next transaction with row events waits just before its materialization commit. */
  armHold(): void {
    this.#holdArmed = true;
  }

  get holdArmed(): boolean {
    return this.#holdArmed;
  }

  /** True while the worker waits at the hold, its materialization transaction open. */
  get holding(): boolean {
    return this.#held !== undefined;
  }

  /**
   * Waits at the armed hold (once, for a transaction with row events) until
   * `releaseHold` or `abortHold`; returns at once when nothing is armed.
   */
  async holdIfArmed(hasRows: boolean): Promise<void> {
    if (!this.#holdArmed || !hasRows) return;
    this.#holdArmed = false;
    await new Promise<void>((resolve, reject) => {
      this.#held = { release: resolve, abort: () => reject(new CaptureStopped('the capture worker was killed while held before its materialization commit')) };
      for (const waiter of this.#holdWaiters.splice(0)) waiter();
    });
  }

  /** Resolves once the worker waits at the hold; rejects when it does not get there by the deadline. */
  async reachedHold(timeoutMs: number): Promise<void> {
    if (this.#held !== undefined) return;
    if (!this.#holdArmed) throw new HoldNotArmed('no hold of the capture worker is armed');
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the capture worker did not reach its hold in ${timeoutMs} ms`)), timeoutMs);
      this.#holdWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Calls `reached` once the worker waits at the armed hold (at once when it already does); never when no hold is armed. */
  whenHeld(reached: () => void): void {
    if (this.#held !== undefined) reached();
    else if (this.#holdArmed) this.#holdWaiters.push(reached);
  }

  /** Lets a held worker commit; disarms a hold not reached yet. */
  releaseHold(): void {
    this.#holdArmed = false;
    this.#held?.release();
    this.#held = undefined;
  }

  /** A kill: the held worker gives up without committing (its session is cut anyway). */
  abortHold(): void {
    this.#holdArmed = false;
    this.#held?.abort();
    this.#held = undefined;
  }

  /** The next source transaction with row events fails and is quarantined. */
  armPoison(): void {
    this.#poisonArmed = true;
  }

  /** The worker dies at `point` of the next transaction with row events it materializes. */
  armCrash(point: CrashPoint): void {
    this.#crashAt = point;
  }

  /** Throws the injected failure (and disarms) when poison is armed and the transaction has row events. */
  failIfPoisoned(events: readonly RowEvent[]): void {
    if (!this.#poisonArmed || events.length === 0) return;
    this.#poisonArmed = false;
    throw new CaptureFailure('materialization_failed', 'failure injected by the poison test control', events[0]?.tableId ?? null);
  }

  /** True, once, when the worker has reached the armed crash point. */
  crashDue(point: CrashPoint): boolean {
    if (this.#crashAt !== point) return false;
    this.#crashAt = undefined;
    return true;
  }
}
