/**
 * What the rest of the server may ask of the Class 3 projection bootstrap
 * (capture/projection-bootstrap.ts) without importing capture/: the manifest
 * store hands it a step that waits for history, and the test controls hold,
 * release, kill, resume and activate it. app.ts wires one coordinator to both.
 */

/** The durable phases a bootstrap can be held at, in order. */
export const BOOTSTRAP_PHASES = ['preparing', 'baseline_staged', 'catching_up'] as const;
export type BootstrapPhase = (typeof BOOTSTRAP_PHASES)[number];

/** A manifest step that adds fields whose rows already hold values: what the bootstrap must stage. */
export interface BootstrapRequest {
  registryGeneration: number;
  /** Added field IDs per table ID. */
  addedFields: Record<string, string[]>;
}

/** Where a bootstrap stands after a control call. */
export interface BootstrapProgress {
  bootstrapId: string;
  lifecycle: BootstrapPhase | 'activated' | 'aborted';
  slot: string | null;
  /** Why it ended aborted, or why activation was refused. */
  reason?: string;
}

/** Activation was refused (the barrier is not durable in the main worker); the bootstrap stays in flight. */
export class BootstrapActivationRefused extends Error {}
/** No bootstrap is in flight or due. */
export class NoBootstrap extends Error {}

/** The manifest store's side: a step that needs history was found; the bootstrap runs it unless held. */
export interface BootstrapDriver {
  due(request: BootstrapRequest): Promise<void>;
}

/** The test controls' side. */
export interface BootstrapHandle {
  /** Holds the bootstrap in flight (or the one the current registry makes due) once `phase` is durable. */
  hold(phase: BootstrapPhase, options?: { pastDurableBarrier?: boolean }): Promise<BootstrapProgress>;
  /** Clears the hold and runs the bootstrap in flight (starting a new one after an abort) through activation. */
  release(): Promise<BootstrapProgress>;
  /** Terminates the coordinator's database sessions, as a crash of the coordinator would. Answers how many ended. */
  kill(): Promise<number>;
  /** Asks for activation only: refused at once when the main worker has not made the barrier durable. */
  activate(): Promise<BootstrapProgress>;
}
