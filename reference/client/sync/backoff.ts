/**
 * The durable backoff record. It is written before the client enters
 * `backoff`, so a restart knows what to retry and when; Retry-After is a
 * lower bound on the delay, never a replacement for it.
 */
import type { Ctx } from '../context.ts';
import { emit } from '../events.ts';
import { fault } from '../faults.ts';
import type { RetryClass } from './response.ts';

export interface BackoffRecord {
  resume_state: 'connecting' | 'pushing' | 'pulling' | 'rebuilding';
  work_identity: string;
  retry_classification: RetryClass;
  attempt_count: number;
  next_retry_at_ms: number;
}

const BASE_MS = 1000;
const CAP_MS = 60_000;

export function readBackoff(ctx: Ctx): BackoffRecord | undefined {
  return ctx.db.prepare('SELECT resume_state, work_identity, retry_classification, attempt_count, next_retry_at_ms FROM _synchro_backoff WHERE id = 1').get() as BackoffRecord | undefined;
}

export function recordBackoff(ctx: Ctx, resume: BackoffRecord['resume_state'], identity: string, cls: RetryClass, retryAfterMs: number): BackoffRecord {
  const previous = readBackoff(ctx);
  const attempt = previous !== undefined && previous.resume_state === resume && previous.work_identity === identity ? previous.attempt_count + 1 : 1;
  const ceiling = Math.min(CAP_MS, BASE_MS * 2 ** (attempt - 1));
  const now = ctx.clock.now();
  const next = Math.max(now + Math.floor(ctx.random() * ceiling), now + retryAfterMs);
  const record: BackoffRecord = { resume_state: resume, work_identity: identity, retry_classification: cls, attempt_count: attempt, next_retry_at_ms: next };
  if (fault('retry-drops-cursors')) ctx.db.prepare('UPDATE _synchro_scopes SET cursor = NULL, rebuild_required = 1').run(); // fault: client:retry-drops-cursors
  ctx.db
    .prepare('INSERT OR REPLACE INTO _synchro_backoff(id, resume_state, work_identity, retry_classification, attempt_count, next_retry_at_ms) VALUES (1, ?, ?, ?, ?, ?)')
    .run(resume, identity, cls, attempt, next);
  emit(ctx, { kind: 'backoff', operation: resume, attempt, classification: cls, retryAt: next });
  return record;
}

export function clearBackoff(ctx: Ctx): void {
  ctx.db.prepare('DELETE FROM _synchro_backoff WHERE id = 1').run();
}

/** Waits until the stored deadline, if any. */
export async function waitForDeadline(ctx: Ctx): Promise<BackoffRecord | undefined> {
  const record = readBackoff(ctx);
  if (record === undefined) return undefined;
  const wait = record.next_retry_at_ms - ctx.clock.now();
  if (wait > 0) await ctx.clock.sleep(wait);
  return record;
}
