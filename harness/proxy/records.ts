/**
 * What the proxy saw: one record per request that crossed it, with the exact
 * bytes both ways, what the client was finally given, the fault applied and
 * every schema or rule violation found. Steps assert on these records.
 */
import type { Endpoint } from './routes.ts';

export interface RecordedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface WireViolation {
  /** Which message: e.g. `push-request` or `push-response`. */
  message: string;
  side: 'request' | 'response';
  pointer: string;
  /** Schema keyword or cross-field rule id that failed. */
  rule: string;
  detail: string;
}

export interface Exchange {
  /** 1-based order in which requests reached the proxy. */
  seq: number;
  /** When the request reached the proxy, in epoch milliseconds. */
  receivedAt?: number;
  endpoint: Endpoint | 'other';
  method: string;
  path: string;
  requestHeaders: Record<string, string | string[] | undefined>;
  requestBody: Buffer;
  /** Every answer the server gave (two for a duplicated delivery, none when the proxy answered itself). */
  upstream: RecordedResponse[];
  /** What reached the client: a response, or how delivery failed. */
  delivered: RecordedResponse | { failure: 'dropped' | 'truncated' | 'upstream-unreachable'; detail: string } | undefined;
  /** Name of the fault applied, if any. */
  fault?: string;
  /** Set when a `rewrite` fault replaced the answer's body: what it did and the body the server sent (also in `upstream`). */
  rewritten?: { describe: string; originalBody: Buffer; error?: string };
  /** The request was sent invalid on purpose by a step; its request violations are expected. */
  intentionallyInvalid: boolean;
  violations: WireViolation[];
  /** True once the exchange is complete (delivered or failed). */
  done: boolean;
}

export function isResponse(delivered: Exchange['delivered']): delivered is RecordedResponse {
  return delivered !== undefined && 'status' in delivered;
}

/** Requests per endpoint, e.g. `{ connect: 1, push: 2 }`. */
export function countByEndpoint(exchanges: readonly Exchange[]): Partial<Record<Endpoint | 'other', number>> {
  const counts: Partial<Record<Endpoint | 'other', number>> = {};
  for (const exchange of exchanges) counts[exchange.endpoint] = (counts[exchange.endpoint] ?? 0) + 1;
  return counts;
}

/** Violations that fail the scenario: all response ones, and request ones not sent invalid on purpose. */
export function unexpectedViolations(exchanges: readonly Exchange[]): { exchange: Exchange; violation: WireViolation }[] {
  const found: { exchange: Exchange; violation: WireViolation }[] = [];
  for (const exchange of exchanges) {
    for (const violation of exchange.violations) {
      if (violation.side === 'request' && exchange.intentionallyInvalid) continue;
      found.push({ exchange, violation });
    }
  }
  return found;
}

export function describeViolation({ exchange, violation }: { exchange: Exchange; violation: WireViolation }): string {
  return `${violation.message} of exchange #${exchange.seq} (${exchange.method} ${exchange.path}): ${violation.pointer || '(root)'} breaks rule "${violation.rule}": ${violation.detail}`;
}
