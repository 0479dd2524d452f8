/**
 * Reading server responses. A 200 body must be strict JSON and valid for its
 * wire kind before anything is applied; any other status becomes either a
 * retryable failure (429, 503) or a typed non-retryable error carrying the
 * server's code and context.
 */
import { readJsonBody } from '../../../harness/codec/index.ts';
import type { ErrorResponse } from '../../../harness/wire/generated.ts';
import { validate, type WireKind, type WireValue } from '../../../harness/wire/validate.ts';
import { ClientError, type Operation, type RecoveryAction } from '../errors.ts';
import { fault } from '../faults.ts';
import type { HttpResponse } from './transport.ts';

export type RetryClass = 'network' | 'http_429' | 'http_503';

export class RetryableFailure extends Error {
  readonly classification: RetryClass;
  readonly retryAfterMs: number;
  readonly code: string;
  constructor(classification: RetryClass, retryAfterMs: number, code: string, message: string) {
    super(message);
    this.name = 'RetryableFailure';
    this.classification = classification;
    this.retryAfterMs = retryAfterMs;
    this.code = code;
  }
}

/** Retry-After as a lower bound in milliseconds: seconds (integer or decimal) or an HTTP date. */
export function parseRetryAfter(value: string | undefined, now: number): number {
  if (value === undefined) return 0;
  const trimmed = value.trim();
  if (/^(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? 0 : Math.max(0, at - now);
}

function parse(res: HttpResponse, op: Operation): unknown {
  const read = readJsonBody(res.body);
  if (!read.ok) throw new ClientError(op, 'invalid_response', `HTTP ${res.status} body is not strict JSON: ${read.message}`, false, 'retry');
  // `3.0` or `1e3` would read as an integer once parsed: the spelling itself is refused.
  const loose = read.nonCanonicalNumbers[0];
  if (loose !== undefined && !fault('accept-loose-numbers')) throw new ClientError(op, 'invalid_response', `HTTP ${res.status} body spells the number at ${loose.pointer || '(root)'} as ${loose.text}, not in canonical form`, false, 'retry'); // fault: client:accept-loose-numbers
  return read.value;
}

const RECOVERY: Record<string, RecoveryAction> = {
  upgrade_required: 'none',
  invalid_schema_reference: 'schema_reset',
  client_retired: 'none',
};

/** The validated 200 body of `kind`, or a thrown failure. */
export function readResponse<K extends WireKind>(kind: K, res: HttpResponse, op: Operation, now: number): WireValue<K> {
  if (res.status === 200) {
    const body = parse(res, op) as { server_time?: unknown } | null;
    if (fault('parse-server-time') && typeof body?.server_time === 'string' && !Number.isNaN(Date.parse(body.server_time))) body.server_time = new Date(body.server_time).toISOString().replace('Z', '000Z'); // fault: client:parse-server-time
    const checked = validate(kind, body);
    if (!checked.ok) {
      if (fault('retry-invalid-response')) throw new RetryableFailure('http_503', 0, 'retry_later', `${kind} is not schema-valid; treated as retryable`); // fault: client:retry-invalid-response
      throw new ClientError(op, 'invalid_response', `${kind} is not schema-valid: ${checked.errors.map((e) => `${e.pointer} ${e.message}`).join('; ')}`, false, 'retry');
    }
    return checked.value;
  }
  if (res.status === 429 || res.status === 503) {
    const cls: RetryClass = res.status === 429 ? 'http_429' : 'http_503';
    let code = cls;
    try {
      const body = parse(res, op) as ErrorResponse;
      code = (body.error?.code as typeof code | undefined) ?? cls;
    } catch {
      // A retryable status stays retryable even with an unreadable body.
    }
    throw new RetryableFailure(cls, parseRetryAfter(res.retryAfter, now), code, `HTTP ${res.status} ${code}`);
  }
  if (fault('retry-non-retryable')) throw new RetryableFailure('http_503', 0, 'retry_later', `HTTP ${res.status} treated as retryable`); // fault: client:retry-non-retryable
  const body = parse(res, op);
  const checked = validate('error-response', body);
  if (!checked.ok) throw new ClientError(op, 'invalid_response', `HTTP ${res.status} carries no valid error body`, false, 'retry');
  const { code, message, retryable: _r, ...context } = checked.value.error as unknown as { code: string; message: string; retryable: boolean } & Record<string, unknown>;
  throw new ClientError(op, code, message, false, RECOVERY[code] ?? 'retry', { httpStatus: res.status, ...context });
}
