/**
 * Admission control: at most N requests of one endpoint in flight at once.
 * One more gets `429 retry_later` (with Retry-After, like every 429) at step 8
 * of the dispatch precedence: after authentication, the protocol gate,
 * structural validation, retirement, push replay, the generation and schema
 * gates and cursor checks, and before execution, so it changes nothing and an
 * earlier gate's answer never turns into 429. Off unless configured.
 */
import { SyncError } from './errors.ts';

/** The endpoints whose code table lists `retry_later`. */
export const ADMITTED_ENDPOINTS = ['connect', 'push', 'pull', 'rebuild'] as const;

/**
 * `--max-in-flight` value: either one positive integer for each endpoint, or
 * `endpoint=n` pairs separated by commas (unnamed endpoints stay unlimited).
 */
export function parseAdmissionLimits(text: string): Map<string, number> {
  const fail = (problem: string): never => {
    throw new Error(`--max-in-flight ${problem}; give a positive integer (e.g. 8) or endpoint=limit pairs (e.g. push=2,pull=4) for ${ADMITTED_ENDPOINTS.join(', ')}`);
  };
  const positive = (s: string): number => {
    if (!/^[1-9][0-9]*$/.test(s) || !Number.isSafeInteger(Number(s))) fail(`has ${JSON.stringify(s)}, which is not a positive integer`);
    return Number(s);
  };
  const limits = new Map<string, number>();
  const trimmed = text.trim();
  if (/^[0-9]+$/.test(trimmed)) {
    const n = positive(trimmed);
    for (const endpoint of ADMITTED_ENDPOINTS) limits.set(endpoint, n);
    return limits;
  }
  for (const part of trimmed.split(',')) {
    const [name, value, extra] = part.split('=').map((s) => s.trim());
    if (name === undefined || value === undefined || extra !== undefined) return fail(`has ${JSON.stringify(part)}, which is not endpoint=limit`);
    if (!(ADMITTED_ENDPOINTS as readonly string[]).includes(name)) return fail(`names unknown endpoint ${JSON.stringify(name)}`);
    if (limits.has(name)) return fail(`names ${name} twice`);
    limits.set(name, positive(value));
  }
  return limits;
}

/**
 * Handed to an endpoint handler: called where its gates before admission
 * have passed; throws `429 retry_later` when the endpoint is at its limit.
 */
export type Admit = () => void;

export class Admission {
  readonly #limits: ReadonlyMap<string, number>;
  readonly #inFlight = new Map<string, number>();

  constructor(limits: ReadonlyMap<string, number>) {
    this.#limits = limits;
  }

  /** Admits one request to `/sync/<endpoint>` or throws 429; the returned function ends it (idempotent). */
  enter(path: string): () => void {
    const endpoint = path.startsWith('/sync/') ? path.slice(6) : path;
    const limit = this.#limits.get(endpoint);
    if (limit === undefined) return () => {};
    const current = this.#inFlight.get(endpoint) ?? 0;
    if (current >= limit) throw new SyncError('retry_later', 'the server is busy; retry later');
    this.#inFlight.set(endpoint, current + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#inFlight.set(endpoint, (this.#inFlight.get(endpoint) ?? 1) - 1);
    };
  }

  inFlight(endpoint: string): number {
    return this.#inFlight.get(endpoint) ?? 0;
  }
}
