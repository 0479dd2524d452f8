/**
 * Whole-request failures. Every non-200 answer (except /ready) is the error
 * envelope `{"error":{code,message,retryable,...context}}`; the status comes
 * from the code, `retryable` is true exactly for the three retryable codes, and
 * 429/503 carry Retry-After.
 */
import { STATUS_BY_CODE } from '../../../harness/wire/rules/errors.ts';
import { fault } from './faults.ts';

// The status of each code is the wire protocol's code table, kept once in harness/wire.
const STATUS: Readonly<Record<string, number>> = STATUS_BY_CODE;

const RETRYABLE = new Set(['retry_later', 'capture_pending', 'temporary_unavailable']);

/** Seconds a client waits before retrying a 429 or 503. */
export const RETRY_AFTER_SECONDS = 5;

export class SyncError extends Error {
  readonly code: string;
  readonly status: number;
  readonly context: Record<string, unknown>;
  constructor(code: string, message: string, context: Record<string, unknown> = {}, status?: number) {
    super(message);
    this.code = code;
    this.status = status ?? STATUS[code] ?? 500;
    this.context = context;
  }

  body(): Record<string, unknown> {
    return { error: { code: this.code, message: this.message, retryable: RETRYABLE.has(this.code) || (fault('conflict-retryable') && this.status === 409), ...this.context } }; // fault: server:conflict-retryable
  }
}

export const invalidRequest = (message = 'request is invalid') => new SyncError('invalid_request', message);
export const authRequired = () => new SyncError('auth_required', 'authentication is required');
export const temporarilyUnavailable = (message = 'the request could not be completed; retry later') =>
  new SyncError('temporary_unavailable', message);
export const integrityFailure = (message = 'sync operation failed') => new SyncError('sync_integrity_failure', message);

/** SQLSTATEs that mean "try again": serialization, deadlock, lock timeout, cancellation, connection loss. */
export function isTransientDatabaseError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return e instanceof Error && /Connection terminated|ECONNRE|ETIMEDOUT/.test(e.message);
  return code === '40001' || code === '40P01' || code === '55P03' || code === '57014' || code.startsWith('08') || code === '53300';
}
