/**
 * What the push ledger scenarios remember beside the World: every batch a
 * harness client sent under a fixed batch_id (its exact request text and the
 * first answer it got), outcomes noted under a label (O1, O3), the answers of
 * one group of concurrent requests and "that mutation". The labels of server
 * versions (V1, V2) are in ../version-labels.ts.
 */
import type { Reply } from '../reply.ts';
import { outcomesOf } from '../wire-values/outcomes.ts';
import type { SyncWorld } from '../world.ts';

export type Obj = Record<string, unknown>;

/** A batch as first sent: the request bytes a resend repeats and the answer a replay must equal. */
export interface SentBatch {
  client: string;
  batchId: string;
  requestText: string;
  first: Reply;
}

export interface LedgerState {
  batches: Map<string, SentBatch>;
  /** Outcomes noted under a label, exactly as the server sent them. */
  outcomes: Map<string, Obj>;
  /** The answers of the last group of concurrent requests. */
  group: Reply[];
  /** A number read from the server and noted for a later comparison (the source trigger count). */
  counts: Map<string, number>;
  /** The single mutation of the last one-mutation push ("that mutation") and the version its client held for the row before. */
  that: { mutation: Obj; heldBefore: string | undefined; sentAt: number; answeredAt: number } | undefined;
}

const states = new WeakMap<SyncWorld, LedgerState>();

export function ledgerState(world: SyncWorld): LedgerState {
  let state = states.get(world);
  if (state === undefined) {
    state = { batches: new Map(), outcomes: new Map(), group: [], counts: new Map(), that: undefined };
    states.set(world, state);
  }
  return state;
}

export function sentBatch(world: SyncWorld, batchId: string): SentBatch {
  const batch = ledgerState(world).batches.get(batchId);
  if (batch === undefined) throw new Error(`batch ${batchId} was not sent earlier in this scenario`);
  return batch;
}

export function notedOutcome(world: SyncWorld, label: string): Obj {
  const outcome = ledgerState(world).outcomes.get(label);
  if (outcome === undefined) throw new Error(`no outcome was remembered as ${label} earlier in this scenario`);
  return outcome;
}

/** Every outcome of a push answer, accepted first, as the server listed them. */
export function outcomesIn(reply: Reply): Obj[] {
  return outcomesOf(reply.json as Obj | undefined);
}

/** The latest push answer of the scenario. */
export function lastPush(world: SyncWorld): Reply {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'push');
  if (reply === undefined) throw new Error('no push response has been received in this scenario');
  return reply;
}

/** The outcome of `mutationId` in the latest push answer, asserted to exist (and the answer to be a 200). */
export function outcomeInLastPush(world: SyncWorld, mutationId: string): Obj {
  const reply = lastPush(world);
  world.assert.equal(reply.status, 200, `the last push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  const outcome = outcomesIn(reply).find((o) => o.mutation_id === mutationId);
  world.assert.ok(outcome, `the last push response has no outcome for mutation ${mutationId}: ${reply.text.slice(0, 800)}`);
  return outcome as Obj;
}

/** "That mutation": the single mutation of the last one-mutation push. */
export function thatMutation(world: SyncWorld): NonNullable<LedgerState['that']> {
  const that = ledgerState(world).that;
  if (that === undefined) throw new Error('no one-mutation push was sent earlier in this scenario');
  return that;
}

/** "That outcome": the outcome of that mutation in the latest push answer. */
export function thatOutcomeOf(world: SyncWorld): Obj {
  return outcomeInLastPush(world, String(thatMutation(world).mutation.mutation_id));
}
