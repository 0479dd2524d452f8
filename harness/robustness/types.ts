/**
 * The vocabulary of the robustness profile: the requests it sends, what it
 * expects of each answer, and what it reports when an answer falls short.
 */

export const ENDPOINTS = ['connect', 'push', 'pull', 'rebuild'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

/** The parts of one run: the four fuzzed endpoints and the probe groups. */
export const PARTS = [...ENDPOINTS, 'tokens', 'transport', 'slow-clients'] as const;
export type Part = (typeof PARTS)[number];

/**
 * What an answer must be. `refuse`: a 4xx with the error envelope whose code
 * is one of `codes` (the request is malformed, forged or out of range by the
 * protocol), and nothing durable changes. `survive`: the protocol allows the
 * request to be accepted (a long but legal identifier, a string key with a
 * control character), so the answer may be 2xx, or a 4xx envelope as above;
 * never a 5xx, a hang or an answer without the envelope.
 */
export interface Expectation {
  kind: 'refuse' | 'survive';
  codes: readonly string[];
}

export interface FuzzRequest {
  part: Part;
  method: string;
  path: string;
  /** Header name and value pairs in order; a name may repeat. */
  headers: [string, string][];
  body: Buffer;
  /** What differs from a valid request, in a few words (`client_id = "\u0000"`). */
  label: string;
  expect: Expectation;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  ms: number;
}

/** How one exchange ended: an answer, no answer within the bound, or the connection closing without one. */
export type Outcome = { kind: 'answer'; answer: Answer } | { kind: 'hang'; ms: number } | { kind: 'closed'; ms: number; error: string };

export const FINDING_CLASSES = ['server-error', 'bad-envelope', 'unexpected-code', 'accepted', 'hang', 'no-answer', 'state-change', 'not-ready'] as const;
export type FindingClass = (typeof FINDING_CLASSES)[number];

/** What the server did, completing "the server ...". */
export const FINDING_MEANING: Readonly<Record<FindingClass, string>> = {
  'server-error': 'answered with a 5xx',
  'bad-envelope': 'answered without the error envelope (or with a status its code does not have)',
  'unexpected-code': 'refused with a code the code table does not give the request',
  accepted: 'accepted a request the protocol requires it to refuse',
  hang: 'did not answer within the hang bound',
  'no-answer': 'closed the connection without an answer',
  'state-change': 'changed durable state while refusing requests',
  'not-ready': 'was no longer ready (GET /ready or capture) after the part',
};

export interface Verdict {
  /** The answer's tally key: `400 invalid_request`, `200`, `hang`, `closed`. */
  tally: string;
  finding?: { class: FindingClass; detail: string };
}

export interface FindingReport {
  class: FindingClass;
  part: Part;
  /** How many requests of the part showed it (for a state change: how many compared runs changed; for not-ready: 1). */
  count: number;
  /** The smallest request found that still shows it, after shrinking when the part is generated. */
  minimal: { request: string; answer: string; detail: string };
  /** How the minimal request was reached: `shrunk N times`, `as generated`, `probe` (a fixed probe). */
  shrinking: string;
}

export interface PartReport {
  part: Part;
  sent: number;
  /** Answers by status and code. */
  answers: Record<string, number>;
  findings: FindingReport[];
  /** Probes this adapter could not run, with why (for example a token that needs the JWT secret). */
  notRun: string[];
  notes: string[];
}

export interface StateReport {
  /** How durable state was read: `inspect` (every table, through the adapter) or `protocol` (read back over the wire). */
  method: 'inspect' | 'protocol';
  comparisons: number;
  /** Requests whose state was compared before and after (every refused one unless a chunk held an accepted request). */
  requestsCompared: number;
  /** Requests of chunks that held an accepted request, so their state was not compared. */
  requestsNotCompared: number;
}

export interface ProfileReport {
  server: { id: string; description: string };
  seed: number;
  runsPerEndpoint: number;
  hangMs: number;
  faults: string[];
  /** What the fixture could not set up on this server (no table to push to, no cursor), said once. */
  setUpNotes: string[];
  parts: PartReport[];
  state: StateReport;
  sent: number;
  durationMs: number;
}
