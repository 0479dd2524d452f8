/**
 * The durable lifecycle state. Every transition is checked against the
 * adjacency map before anything is written; entering `error` stores the
 * typed failure in the same transaction.
 */
import type { Ctx } from './context.ts';
import type { ClientError } from './errors.ts';
import { emit } from './events.ts';
import { assertTransition, type ClientState, isLegalTransition } from './state.ts';

export interface Failure {
  operation: string;
  code: string;
  retryable: boolean;
  message: string;
  recoveryAction: string;
  metadata: Record<string, unknown>;
}

export class Lifecycle {
  readonly #ctx: Ctx;
  #state: ClientState;
  /** States entered since this process opened the client, starting with `uninitialized`. */
  readonly log: ClientState[] = ['uninitialized'];
  /** When each state of `log` was entered (clock milliseconds). */
  readonly logTimes: number[];
  readonly listeners: ((from: ClientState, to: ClientState) => void)[] = [];
  /** Set by stop(): the running cycle schedules nothing new and returns at the next step boundary. */
  stopRequested = false;

  constructor(ctx: Ctx) {
    this.#ctx = ctx;
    this.#state = 'uninitialized';
    this.logTimes = [ctx.clock.now()];
    // A new process always starts from uninitialized: the previous run's last state is history, not a place to resume.
    ctx.db.prepare(`UPDATE _synchro_client_state SET lifecycle_state = 'uninitialized' WHERE id = 1`).run();
  }

  get state(): ClientState {
    return this.#state;
  }

  failure(): Failure | undefined {
    const row = this.#ctx.db.prepare('SELECT error_json FROM _synchro_client_state WHERE id = 1').get() as { error_json: string | null };
    return row.error_json === null ? undefined : (JSON.parse(row.error_json) as Failure);
  }

  /** Moves to `to`, checking legality first; `failure` is stored when entering `error`. */
  go(to: ClientState, failure?: ClientError): void {
    const from = this.#state;
    assertTransition(from, to);
    const db = this.#ctx.db;
    db.transaction(() => {
      const errorJson =
        to === 'error' && failure !== undefined
          ? JSON.stringify({ operation: failure.operation, code: failure.code, retryable: failure.retryable, message: failure.message, recoveryAction: failure.recoveryAction, metadata: failure.metadata })
          : to === 'local_ready' || to === 'stopped'
            ? null
            : undefined;
      if (errorJson === undefined) db.prepare('UPDATE _synchro_client_state SET lifecycle_state = ? WHERE id = 1').run(to);
      else db.prepare('UPDATE _synchro_client_state SET lifecycle_state = ?, error_json = ? WHERE id = 1').run(to, errorJson);
      db.prepare('INSERT INTO _synchro_status_log(from_state, to_state, at_ms) VALUES (?, ?, ?)').run(from, to, this.#ctx.clock.now());
    })();
    this.#state = to;
    this.log.push(to);
    this.logTimes.push(this.#ctx.clock.now());
    for (const l of this.listeners) l(from, to);
    emit(this.#ctx, { kind: 'state_changed', from, to });
    // A failure is announced only when it is newly stored, not when a restart re-enters a durable error.
    if (to === 'error' && failure !== undefined) {
      emit(this.#ctx, { kind: 'failure', operation: failure.operation, code: failure.code, retryable: failure.retryable, recoveryAction: failure.recoveryAction, message: failure.message });
    }
  }

  /** Goes to `to`, passing through `ready` when there is no direct edge (for example pushing to rebuilding). */
  route(to: ClientState): void {
    if (isLegalTransition(this.#state, to)) this.go(to);
    else {
      this.go('ready');
      this.go(to);
    }
  }
}
