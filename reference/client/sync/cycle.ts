/**
 * One public sync run. Push always goes before rebuild and pull, so offline
 * intent becomes authoritative before any snapshot is taken; scopes without a
 * usable cursor are rebuilt in the same run; the run ends in `ready` only
 * after a terminal pull with nothing left to send or rebuild.
 */
import { scopes } from '../apply/scopes.ts';
import type { Ctx } from '../context.ts';
import { ClientError } from '../errors.ts';
import { fault } from '../faults.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { getMeta, setMeta } from '../local/metadata.ts';
import { nextSealedBatch, resealBatch, sealNextBatch } from '../queue/seal.ts';
import { attemptFor, rebuildStep, scopeNeedingRebuild } from '../rebuild/rebuild.ts';
import { type BackoffRecord, recordBackoff, waitForDeadline } from './backoff.ts';
import { connect } from './connect.ts';
import { pullIdentity, pullPage, pullRequest } from './pull.ts';
import { sendBatch } from './push.ts';
import { RetryableFailure } from './response.ts';
import { NetworkError } from './transport.ts';

export type Completion = 'idle' | 'blocked' | 'error';

const MAX_STEPS = 10_000;
const MAX_REBUILD_MISMATCHES = 3;
const MAX_RECONNECTS = 3;

/**
 * A pull or rebuild refused for a stale schema (422) or generation (409) is
 * resolved only by a new connect, which carries out the server's schema
 * action; the run goes back to connecting instead of failing.
 */
async function orReconnect<T>(ctx: Ctx, work: () => Promise<T>): Promise<T | 'reconnect'> {
  try {
    return await work();
  } catch (e) {
    if (!(e instanceof ClientError) || (e.code !== 'schema_mismatch' && e.code !== 'client_generation_expired')) throw e;
    setMeta(ctx.db, 'needs_connect', '1');
    return 'reconnect';
  }
}

async function doConnect(ctx: Ctx, life: Lifecycle): Promise<void> {
  if (life.state !== 'connecting') life.route('connecting');
  const { schemaApplied, response } = await connect(ctx);
  // A batch the server refused at first execution moves to a successor under the new generation or schema.
  const sealed = nextSealedBatch(ctx);
  if (sealed !== undefined) {
    const request = JSON.parse(sealed.request_bytes.toString('utf8')) as { client_generation: number; schema: { hash: string } };
    if ((request.client_generation !== response.client_generation || request.schema.hash !== ctx.schema?.hash) && !fault('schema005-refused-batch-resent')) resealBatch(ctx, sealed); // fault: client:schema005-refused-batch-resent
  }
  if (schemaApplied) life.go('schema_applying');
  life.go('ready');
}

function workIdentity(ctx: Ctx, state: BackoffRecord['resume_state']): string {
  if (state === 'pushing') return nextSealedBatch(ctx)?.batch_id ?? 'push';
  if (state === 'pulling') return pullIdentity(pullRequest(ctx));
  if (state === 'rebuilding') {
    const scope = scopeNeedingRebuild(ctx);
    const a = scope === undefined ? undefined : attemptFor(ctx, scope);
    return `${scope ?? ''}\u0000${a?.rebuild_id ?? ''}\u0000${a?.cursor ?? ''}`;
  }
  return 'connect';
}

export async function runCycle(ctx: Ctx, life: Lifecycle): Promise<Completion> {
  try {
    if (life.state === 'backoff') {
      const record = await waitForDeadline(ctx);
      const resume = record?.resume_state ?? 'connecting';
      life.go(resume);
      if (fault('reseal-on-retry') && resume === 'pushing') { const stale = nextSealedBatch(ctx); if (stale !== undefined) resealBatch(ctx, stale); } // fault: client:reseal-on-retry
      if (resume === 'connecting') setMeta(ctx.db, 'needs_connect', '1');
    }
    if ((life.state as string) === 'local_ready') {
      await waitForDeadline(ctx);
      await doConnect(ctx, life);
    } else if (life.state === 'connecting' || getMeta(ctx.db, 'needs_connect') === '1') {
      await doConnect(ctx, life);
    }
    let pulledClean = false;
    let mismatches = 0;
    let reconnects = 0;
    const reconnected = (e: string) => {
      if (++reconnects > MAX_RECONNECTS) throw new ClientError('connecting', 'sync_did_not_settle', `the server still answers ${e} after ${MAX_RECONNECTS} connects`, false, 'retry');
    };
    for (let step = 0; step < MAX_STEPS; step++) {
      if (life.stopRequested) return 'idle';
      if (getMeta(ctx.db, 'needs_connect') === '1') {
        await doConnect(ctx, life);
        continue;
      }
      const batch = sealNextBatch(ctx);
      if (batch !== undefined) {
        life.route('pushing');
        if ((await sendBatch(ctx, batch)) === 'reconnect') setMeta(ctx.db, 'needs_connect', '1');
        pulledClean = false;
        continue;
      }
      const scope = fault('no-auto-rebuild') ? undefined : scopeNeedingRebuild(ctx); // fault: client:no-auto-rebuild
      if (scope !== undefined) {
        life.route('rebuilding');
        const outcome = await orReconnect(ctx, () => rebuildStep(ctx, scope));
        if (outcome === 'reconnect') {
          reconnected('a rebuild with a stale schema or generation');
          continue;
        }
        if (outcome === 'mismatch' && ++mismatches >= MAX_REBUILD_MISMATCHES) {
          throw new ClientError('rebuilding', 'rebuild_checksum_mismatch', `scope ${scope} failed its rebuild checksum ${mismatches} times`, false, 'retry');
        }
        pulledClean = false;
        continue;
      }
      if (!pulledClean && fault('skip-empty-pull') && scopes(ctx).length === 0 && life.state === 'ready') return 'idle'; // fault: client:skip-empty-pull
      if (!pulledClean) {
        life.route('pulling');
        const page = await orReconnect(ctx, () => pullPage(ctx));
        if (page === 'reconnect') {
          reconnected('a pull with a stale schema or generation');
          continue;
        }
        if (!page.hasMore) pulledClean = true;
        if (pulledClean && fault('defer-pull-added-rebuild') && scopeNeedingRebuild(ctx) !== undefined) { life.route('ready'); return 'idle'; } // fault: client:defer-pull-added-rebuild
        continue;
      }
      life.route('ready');
      return 'idle';
    }
    throw new ClientError('lifecycle', 'sync_did_not_settle', 'the sync run did not settle', false, 'retry');
  } catch (e) {
    return fail(ctx, life, e);
  }
}

function fail(ctx: Ctx, life: Lifecycle, e: unknown): Completion {
  const retry = e instanceof NetworkError ? new RetryableFailure('network', 0, 'network', e.message) : e;
  const state = life.state;
  if (retry instanceof RetryableFailure && (state === 'connecting' || state === 'pushing' || state === 'pulling' || state === 'rebuilding')) {
    recordBackoff(ctx, state, workIdentity(ctx, state), retry.classification, retry.retryAfterMs);
    life.go('backoff');
    ctx.crash('after_backoff_commit');
    return 'blocked';
  }
  const error = e instanceof ClientError ? e : new ClientError('database', 'internal_error', (e as Error)?.message ?? String(e), false, 'retry');
  if (error.code === 'invalid_state_transition') throw error;
  // The typed failure is stored in the same transaction that enters error.
  life.go('error', error);
  return 'error';
}

