/**
 * The oracle: what one answer says about the server. A 5xx, a hang or a
 * connection closed without an answer is always a finding. Any other
 * non-2xx answer must be the error envelope (schemas/error-response plus the
 * envelope rules: the status its code has, Retry-After on 429) sent as
 * application/json, and its code must be one the request may get. A 2xx is a
 * finding only for a request the protocol requires to be refused.
 */
import { checkBytes } from '../wire/index.ts';
import type { Endpoint, Expectation, Outcome, Verdict } from './types.ts';

/** The 4xx codes of the code table (wire-protocol.md 4.2), by endpoint. */
export const REFUSAL_CODES: Readonly<Record<Endpoint, readonly string[]>> = {
  connect: ['invalid_request', 'invalid_schema_reference', 'auth_required', 'client_retired', 'upgrade_required', 'retry_later'],
  push: ['invalid_request', 'auth_required', 'idempotency_conflict', 'client_retired', 'client_generation_expired', 'schema_mismatch', 'upgrade_required', 'retry_later'],
  pull: ['invalid_request', 'auth_required', 'client_retired', 'client_generation_expired', 'schema_mismatch', 'upgrade_required', 'retry_later'],
  rebuild: ['invalid_request', 'auth_required', 'client_retired', 'client_generation_expired', 'rebuild_restart_required', 'schema_mismatch', 'upgrade_required', 'retry_later'],
};

const header = (headers: Record<string, string | string[] | undefined>, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/** The error code of an envelope body, when the body has one. */
export function envelopeCode(body: Buffer): string | undefined {
  try {
    const code = (JSON.parse(body.toString('utf8')) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

export function judge(expect: Expectation, outcome: Outcome): Verdict {
  if (outcome.kind === 'hang') return { tally: 'hang', finding: { class: 'hang', detail: `no answer within ${outcome.ms} ms` } };
  if (outcome.kind === 'closed') return { tally: 'closed', finding: { class: 'no-answer', detail: `the connection ended without an answer (${outcome.error})` } };
  const { status, headers, body } = outcome.answer;
  if (status >= 200 && status < 300) {
    const tally = String(status);
    return expect.kind === 'refuse' ? { tally, finding: { class: 'accepted', detail: `answered ${status}; expected a refusal with ${expect.codes.join(' or ')}` } } : { tally };
  }
  const code = envelopeCode(body);
  const tally = code === undefined ? `${status} (no envelope)` : `${status} ${code}`;
  if (status >= 500) return { tally, finding: { class: 'server-error', detail: `answered ${tally}` } };
  const problem = envelopeProblem(status, headers, body);
  if (problem !== undefined) return { tally, finding: { class: 'bad-envelope', detail: `HTTP ${status}: ${problem}` } };
  if (code !== undefined && !expect.codes.includes(code)) return { tally, finding: { class: 'unexpected-code', detail: `refused with ${code}; this request may get ${expect.codes.join(', ')}` } };
  return { tally };
}

/** What is wrong with a non-2xx answer as an error envelope, or undefined when nothing is. */
export function envelopeProblem(status: number, headers: Record<string, string | string[] | undefined>, body: Buffer): string | undefined {
  if (body.length === 0) return 'empty body';
  const type = header(headers, 'content-type');
  if (type === undefined || !/^application\/json\s*(;|$)/i.test(type.trim())) return `Content-Type is ${type === undefined ? 'missing' : JSON.stringify(type)}, not application/json`;
  const result = checkBytes('error-response', body, { status, headers });
  if (result.ok) return undefined;
  const first = result.schemaErrors[0] ?? result.violations[0];
  return first === undefined ? 'not an error envelope' : `${'rule' in first ? `${first.rule} ` : ''}${first.pointer || '/'}: ${first.message}`;
}
