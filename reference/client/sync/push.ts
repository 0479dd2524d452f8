/**
 * One push round trip: seal (or reload) the next batch, send its stored
 * bytes, reconcile the response by mutation ID.
 */
import { canonicalJson } from '../../../harness/codec/index.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { fault } from '../faults.ts';
import { reconcilePush } from '../queue/reconcile.ts';
import type { SealedBatch } from '../queue/seal.ts';
import { clearBackoff } from './backoff.ts';
import { readResponse } from './response.ts';

export type PushResult = 'pushed' | 'reconnect';

export async function sendBatch(ctx: Ctx, batch: SealedBatch): Promise<PushResult> {
  ctx.crash('before_push_send');
  const res = await ctx.transport('/sync/push', fault('reserialize-at-send') ? Buffer.from(canonicalJson(JSON.parse(batch.request_bytes.toString('utf8')))) : batch.request_bytes); // fault: client:reserialize-at-send
  ctx.crash('after_push_response_received');
  try {
    const response = readResponse('push-response', res, 'pushing', ctx.clock.now());
    reconcilePush(ctx, batch, response);
    clearBackoff(ctx);
  } catch (e) {
    // Both codes refuse the batch at first execution; a successor batch follows the reconnect.
    if (e instanceof ClientError && (e.code === 'client_generation_expired' || e.code === 'schema_mismatch')) return 'reconnect';
    if (fault('drop-refused-batch') && e instanceof ClientError) ctx.db.prepare(`DELETE FROM _synchro_pending_changes WHERE sealed_batch_id = ?`).run(batch.batch_id); // fault: client:drop-refused-batch
    throw e;
  }
  ctx.crash('after_push_apply_commit');
  return 'pushed';
}
