/**
 * The capture worker's test-only failure injection, armed through
 * `/__test/capture/poison` and `/__test/capture/crash-at` (served by
 * controls/routes.ts with `--test-controls` only). The worker consults it at
 * two kinds of places: before materializing a transaction with row events
 * (poison: that transaction fails like any failed materialization and is
 * quarantined), and at each crash point after the materialization commit
 * (crash: the worker's sessions are cut there, as by kill). Each armed
 * failure fires once. Nothing is armed unless a test control arms it.
 */
import type { CrashPoint } from '../core/capture-control.ts';
import { CaptureFailure, type RowEvent } from './transaction.ts';

export class CaptureTestControls {
  #poisonArmed = false;
  #crashAt: CrashPoint | undefined;

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
