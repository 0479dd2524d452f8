/**
 * What the rest of the server may ask of the capture worker, so that the
 * router and the test controls drive it without importing capture/: waiting
 * until everything committed is materialized (the router's grace before a
 * `capture_pending` answer, the catch-up control), and the worker controls
 * of the control protocol (controls/routes.ts: stop, kill, restart, poison, crash-at, hold, held, stream reset).
 * capture/worker.ts implements it; app.ts hands the worker to both.
 */

/** A quarantined transaction blocks capture: waiting for it would only run into the deadline. */
export class CapturePoisoned extends Error {}
/** Waiting for a stopped worker would only run into the deadline, so it is refused at once. */
export class CaptureStopped extends Error {}
/** Waiting for a hold nobody armed would only run into the deadline, so it is refused at once. */
export class HoldNotArmed extends Error {}

/** Where a test control can kill the worker inside one transaction's boundary, slot and acknowledgement steps. */
export const CRASH_POINTS = ['after-materialization-commit', 'after-slot-advance', 'after-acknowledgement'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

/** What an operator's stream reset (capture/stream-reset.ts) reports once the new generation is active. */
export interface StreamResetResult {
  resetId: string;
  streamGeneration: string;
  slot: string;
  consistentPoint: string;
}

/** The durable phases an operator's reset can be held at (capture/stream-reset.ts). */
export const RESET_PHASES = ['preparing', 'baseline_staged', 'catching_up'] as const;
export type ResetPhase = (typeof RESET_PHASES)[number];

/** Where an operator's reset stands after a control call; `result` once activated, `reason` when it ended aborted. */
export interface ResetProgress {
  resetId: string;
  lifecycle: ResetPhase | 'activated' | 'aborted';
  slot: string;
  result?: StreamResetResult;
  reason?: string;
}

/** Activation was refused (the candidate slot cannot carry the stream); the reset stays in flight. */
export class ResetActivationRefused extends Error {}

/** The worker as its callers see it. */
export interface CaptureHandle {
  /** Resolves once everything committed before the call is materialized and acknowledged; CapturePoisoned or CaptureStopped when it cannot. */
  catchUp(timeoutMs?: number): Promise<void>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  kill(): Promise<void>;
  armPoison(): void;
  /** The next transaction with row events waits just before its materialization commit, until resume (commits) or kill (rolls back). */
  armHold(): void;
  /** Resolves once the worker waits at the armed hold. */
  awaitHold(timeoutMs: number): Promise<void>;
  armCrash(point: CrashPoint): void;
  resetStream(): Promise<StreamResetResult>;
  /** Starts an operator reset (or resumes the one in flight) and runs it until `holdAt` is durable, or through activation. */
  driveReset(options: { start: boolean; holdAt?: ResetPhase }): Promise<ResetProgress>;
  /** Aborts the reset in flight; capture goes on with the old stream. */
  abortReset(): Promise<ResetProgress | undefined>;
  /** Terminates the operator session of the reset (its database connections), as a crash of the operator would. */
  killResetOperator(): Promise<number>;
}
