/**
 * Wire faults the proxy injects, scripted by steps or by a sensitivity run:
 * which requests a rule matches, and what it does to them.
 */
import type { Exchange } from './records.ts';
import type { Endpoint } from './routes.ts';

export type WireFault =
  /** Forward; the server answers (and commits); the client gets a cut connection instead. */
  | { kind: 'drop-response' }
  /** Answer without forwarding: 429 `retry_later` or 503 `temporary_unavailable` with Retry-After. */
  | { kind: 'status'; status: 429 | 503; retryAfter: string }
  /** Hold the request this long before forwarding it. */
  | { kind: 'delay'; ms: number }
  /** Deliver the request to the server twice; the client gets the second answer. */
  | { kind: 'duplicate' }
  /** Announce the full body, send its first half, then cut the connection. */
  | { kind: 'truncate' }
  /** Flip one bit of one body byte (the middle one unless `offset` is given); the length stays. */
  | { kind: 'corrupt-byte'; offset?: number }
  /** Hold the server's answer until `release()` (the server has already committed). */
  | { kind: 'pause' }
  /**
   * Replace the JSON body of the server's 200 answer by what `transform`
   * returns (serialized with `serializeJson`, so `RawJson` tokens keep their
   * exact spelling). The transform may edit `json` in place and return it.
   * Returning `undefined` leaves this answer untouched and keeps the rule
   * armed for the next matching one (for example when the page lacks the
   * change to edit). The exchange records the original body.
   */
  // biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
  | { kind: 'rewrite'; describe: string; transform: (json: any, exchange: Exchange) => unknown };

export interface FaultRule {
  /** Endpoint whose requests the rule applies to; every endpoint when absent. */
  endpoint?: Endpoint;
  /** Apply from the nth matching request on (1-based); the first by default. */
  nth?: number;
  /** How many requests to affect; 1 by default, `Infinity` for every one. */
  times?: number;
  fault: WireFault;
  /** Only requests whose parsed JSON body (undefined when not JSON) satisfies this count as matching, e.g. one client's. */
  when?: (request: unknown) => boolean;
}

export function faultName(fault: WireFault): string {
  return fault.kind === 'status' ? `status-${fault.status}` : fault.kind;
}

/** A rule plus its progress: how many matching requests it has seen and affected. */
export class ArmedFault {
  readonly rule: FaultRule;
  #seen = 0;
  #applied = 0;

  constructor(rule: FaultRule) {
    this.rule = rule;
  }

  get applied(): number {
    return this.#applied;
  }

  /** Counts a request if the rule's endpoint (and `when`) matches; true when the rule would apply to it. */
  observe(endpoint: Endpoint | 'other', request?: unknown): boolean {
    if (this.rule.endpoint !== undefined && this.rule.endpoint !== endpoint) return false;
    if (this.rule.endpoint === undefined && endpoint === 'other') return false;
    if (this.rule.when !== undefined && !this.rule.when(request)) return false;
    this.#seen += 1;
    return this.#seen >= (this.rule.nth ?? 1) && this.#applied < (this.rule.times ?? 1);
  }

  markApplied(): void {
    this.#applied += 1;
  }

  /** Takes back one application: the fault turned out not to apply to that exchange. */
  unmarkApplied(): void {
    this.#applied = Math.max(0, this.#applied - 1);
  }
}

/**
 * Every rule sees every request (so `nth` counts all matching requests), and
 * the first rule due applies: one fault per request at most.
 */
export function pickFault(faults: readonly ArmedFault[], endpoint: Endpoint | 'other', request?: unknown): WireFault | undefined {
  return pickArmed(faults, endpoint, request)?.rule.fault;
}

/** Like `pickFault`, but returns the armed rule itself, so an application can be taken back. */
export function pickArmed(faults: readonly ArmedFault[], endpoint: Endpoint | 'other', request?: unknown): ArmedFault | undefined {
  let chosen: ArmedFault | undefined;
  for (const armed of faults) if (armed.observe(endpoint, request) && !chosen) chosen = armed;
  chosen?.markApplied();
  return chosen;
}

const RETRYABLE_CODE = { 429: 'retry_later', 503: 'temporary_unavailable' } as const;

/** The error envelope an injected status carries: a valid protocol 3 answer, so only the status is the fault. */
export function injectedBody(status: 429 | 503): Buffer {
  return Buffer.from(JSON.stringify({ error: { code: RETRYABLE_CODE[status], message: 'injected by the conformance proxy', retryable: true } }));
}

export function corrupt(body: Buffer, offset?: number): Buffer {
  const copy = Buffer.from(body);
  if (copy.length === 0) return copy;
  const at = Math.min(Math.max(offset ?? Math.floor(copy.length / 2), 0), copy.length - 1);
  copy[at] = (copy[at] ?? 0) ^ 0x01;
  return copy;
}
