/**
 * Error envelope rules that depend on the HTTP exchange: the status each code
 * is sent with (E3), Retry-After on 429 and 503 (E4), and the ordering of an
 * invalid_request limit context (E2b). Retryability and the exact context
 * members per code (E1, E2, E5) are in the schema itself.
 */
import type { ErrorResponse, ReadyResponse } from '../generated.ts';
import { type RuleContext, type Violation, violation } from './context.ts';

export const STATUS_BY_CODE: Readonly<Record<ErrorResponse['error']['code'], number>> = {
  invalid_request: 400,
  invalid_schema_reference: 400,
  auth_required: 401,
  idempotency_conflict: 409,
  client_retired: 409,
  client_generation_expired: 409,
  rebuild_restart_required: 409,
  schema_mismatch: 422,
  upgrade_required: 426,
  retry_later: 429,
  sync_integrity_failure: 500,
  capture_pending: 503,
  temporary_unavailable: 503,
};

/** E3: the HTTP status is the one the code table assigns (a wrong-method 405 also carries invalid_request). */
export function statusMatchesCode(response: ErrorResponse, ctx: RuleContext): Violation[] | undefined {
  if (ctx.status === undefined) return undefined;
  const { code } = response.error;
  const expected = STATUS_BY_CODE[code];
  if (ctx.status === expected || (code === 'invalid_request' && ctx.status === 405)) return [];
  return [violation('E3', '/error/code', `code ${code} is sent with HTTP ${expected}, not ${ctx.status}`)];
}

/** E2b: a limit context names a range whose maximum is not below its minimum. */
export function limitContextOrdered(response: ErrorResponse): Violation[] {
  const error = response.error;
  if (error.code !== 'invalid_request' || error.minimum === undefined || error.maximum === undefined) return [];
  return error.maximum >= error.minimum ? [] : [violation('E2b', '/error/maximum', 'maximum is below minimum')];
}

/** E4: every 429 and 503 response carries one valid Retry-After header. */
export function retryAfterPresent(_response: ErrorResponse | ReadyResponse, ctx: RuleContext): Violation[] | undefined {
  if (ctx.status === undefined || ctx.headers === undefined) return undefined;
  if (ctx.status !== 429 && ctx.status !== 503) return [];
  const entry = Object.entries(ctx.headers).find(([name]) => name.toLowerCase() === 'retry-after')?.[1];
  const values = entry === undefined ? [] : typeof entry === 'string' ? [entry] : [...entry];
  if (values.length !== 1 || !isValidRetryAfter(values[0] ?? '', 'sender')) {
    return [violation('E4', '', `HTTP ${ctx.status} needs exactly one valid Retry-After header`)];
  }
  return [];
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([0-9]{4}) ([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]) GMT$/;

/**
 * Retry-After as a sender must write it (IMF-fixdate or whole seconds) or as a
 * receiver must also accept it (whitespace-trimmed seconds with an optional
 * fraction). Signs, exponents, leading zeros and bare points are never valid.
 */
export function isValidRetryAfter(value: string, mode: 'sender' | 'receiver'): boolean {
  const text = mode === 'receiver' ? value.trim() : value;
  const seconds = mode === 'receiver' ? /^(0|[1-9][0-9]*)(\.[0-9]+)?$/ : /^(0|[1-9][0-9]*)$/;
  if (seconds.test(text)) return true;
  const m = IMF_FIXDATE.exec(text);
  if (m === null) return false;
  const date = new Date(Date.UTC(Number(m[4]), MONTHS.indexOf(m[3] ?? ''), Number(m[2]), Number(m[5]), Number(m[6]), Number(m[7])));
  // The weekday and the day of month must describe a real date.
  return date.getUTCDate() === Number(m[2]) && DAYS[date.getUTCDay()] === m[1];
}

/** READY: the readiness body agrees with its status (true with 200, false with 503). */
export function readyMatchesStatus(response: ReadyResponse, ctx: RuleContext): Violation[] | undefined {
  if (ctx.status === undefined) return undefined;
  const expected = response.ready ? 200 : 503;
  return ctx.status === expected ? [] : [violation('READY', '/ready', `ready ${response.ready} goes with HTTP ${expected}, not ${ctx.status}`)];
}
