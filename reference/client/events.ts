/**
 * Typed client events. Each one is published only after the durable change
 * it reports has committed, so an application never hears of something a
 * crash or a rolled-back transaction could still take back. Events raised
 * while a durable unit is open are held and published when the unit returns;
 * if the unit throws they are dropped with the rest of its work.
 */
import type { ClientState } from './state.ts';

export type ClientEventBody =
  | { kind: 'state_changed'; from: ClientState; to: ClientState }
  | { kind: 'backoff'; operation: string; attempt: number; classification: string; retryAt: number }
  | { kind: 'schema_applying'; version: number; hash: string; resumed: boolean }
  | { kind: 'schema_applied'; version: number; hash: string }
  | { kind: 'mutation_accepted'; mutationID: string; tableID: string; status: string; batchID: string }
  | { kind: 'mutation_rejected'; mutationID: string; tableID: string; status: string; rejectionCode: string; batchID: string }
  | { kind: 'rebuild_requested'; scopeID: string }
  | { kind: 'rebuild_completed'; scopeID: string }
  | { kind: 'failure'; operation: string; code: string; retryable: boolean; recoveryAction: string; message: string };

export type ClientEventKind = ClientEventBody['kind'];

/** An event as published: its body plus a per-process sequence number and the clock time it was published. */
export type ClientEvent = ClientEventBody & { seq: number; at: number };

export type EventListener = (event: ClientEvent) => unknown;

/** Oldest entries are dropped past this many, so a long-running client does not grow without bound; `seq` keeps counting, so a gap shows. */
export const EVENT_LOG_LIMIT = 10_000;

export class ClientEvents {
  readonly #now: () => number;
  readonly #listeners = new Set<EventListener>();
  readonly #log: ClientEvent[] = [];
  #seq = 0;
  /** Events waiting for the open durable unit to commit; undefined when no unit is open. */
  #held: ClientEventBody[] | undefined;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Subscribes `listener`; the returned function unsubscribes it. */
  on(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Events published so far in this process, oldest first (a copy). */
  log(): ClientEvent[] {
    return this.#log.map((e) => ({ ...e }));
  }

  /** Reports a change that has committed, or that commits when the open unit returns. */
  emit(body: ClientEventBody): void {
    if (this.#held !== undefined) this.#held.push(body);
    else this.#publish(body);
  }

  /**
   * Runs `fn`, a durable unit (one transaction), holding its events until it
   * returns. A nested unit joins the outer one; a nested unit that throws
   * drops only its own events, in case the outer unit catches and goes on.
   */
  unit<T>(fn: () => T): T {
    const outer = this.#held;
    const held = outer ?? [];
    const mark = held.length;
    this.#held = held;
    try {
      const result = fn();
      if (outer === undefined) {
        this.#held = undefined;
        for (const body of held) this.#publish(body);
      }
      return result;
    } catch (e) {
      held.length = mark;
      this.#held = outer;
      throw e;
    }
  }

  #publish(body: ClientEventBody): void {
    const event = { ...body, seq: ++this.#seq, at: this.#now() } as ClientEvent;
    this.#log.push(event);
    if (this.#log.length > EVENT_LOG_LIMIT) this.#log.shift();
    for (const listener of [...this.#listeners]) {
      // The change is already durable, so a listener's failure cannot undo it;
      // letting it propagate would abort the sync run halfway through a step
      // and turn an application bug into a sync failure. It is swallowed.
      try {
        const result = listener({ ...event });
        if (result instanceof Promise) result.catch(() => {});
      } catch {
        // ignored, see above
      }
    }
  }
}

/** Emits through the context's event bus; contexts built without one (narrow unit tests) publish nothing. */
export function emit(ctx: { events?: ClientEvents }, body: ClientEventBody): void {
  ctx.events?.emit(body);
}

/** Runs a durable unit under the context's event bus, or plainly when there is none. */
export function durably<T>(ctx: { events?: ClientEvents }, fn: () => T): T {
  return ctx.events === undefined ? fn() : ctx.events.unit(fn);
}
