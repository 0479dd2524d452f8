/**
 * Push rules: mutation identity, atomic key uniqueness, octet limits and
 * sealed retries on the request (P1, P6-P8); the outcome partition against the
 * request, atomic all-or-nothing shape, outcome schema binding and exact replay
 * on the response (PR1, PR2, PR6-PR10).
 */
import { canonicalJson, compareBytes, MAX_NORMALIZED_MUTATION_OCTETS } from '../../codec/index.ts';
import type { PushRequest, PushResponse } from '../generated.ts';
import { PUSH_BODY_MAX_OCTETS, PUSH_CANONICAL_MAX_OCTETS, pushSizes } from '../push-limits.ts';
import { validate } from '../validate.ts';
import { duplicates, notStrictlyIncreasing, type RuleContext, sameRef, type Violation, violation } from './context.ts';

/** P1: no mutation ID appears twice in one request. */
export function mutationIdsUnique(request: PushRequest): Violation[] {
  return duplicates(request.mutations.map((m) => m.mutation_id)).map((i) =>
    violation('P1', `/mutations/${i}/mutation_id`, 'mutation_id repeated within the request'),
  );
}

/** P6: an atomic request touches each (table, canonical pk) at most once. */
export function atomicKeysUnique(request: PushRequest): Violation[] {
  if (request.atomic !== true) return [];
  const keys = request.mutations.map((m) => canonicalJson([m.table, m.pk]));
  return duplicates(keys).map((i) => violation('P6', `/mutations/${i}/pk`, 'atomic request repeats a (table, pk) pair'));
}

/** P7: body, canonical request and every normalised mutation fit their octet limits. */
export function pushWithinOctetLimits(request: PushRequest, ctx: RuleContext): Violation[] {
  const out: Violation[] = [];
  if (ctx.read !== undefined && ctx.read.bodyOctets > PUSH_BODY_MAX_OCTETS) {
    out.push(violation('P7', '', `body is ${ctx.read.bodyOctets} octets; the limit is ${PUSH_BODY_MAX_OCTETS}`));
  }
  const sizes = pushSizes(request);
  if (sizes.canonicalRequestOctets > PUSH_CANONICAL_MAX_OCTETS) {
    out.push(violation('P7', '', `canonical request is ${sizes.canonicalRequestOctets} octets; the limit is ${PUSH_CANONICAL_MAX_OCTETS}`));
  }
  for (const m of sizes.mutations) {
    if (m.normalizedOctets > MAX_NORMALIZED_MUTATION_OCTETS) {
      out.push(violation('P7', `/mutations/${m.index}`, `normalised mutation is ${m.normalizedOctets} octets; the limit is ${MAX_NORMALIZED_MUTATION_OCTETS}`));
    }
  }
  return out;
}

/** P8: a resent sealed batch carries the same identity, order and content (member order and spacing aside). */
export function sealedRetryUnchanged(request: PushRequest, ctx: RuleContext): Violation[] | undefined {
  if (ctx.previousRequest === undefined) return undefined;
  return canonicalJson(ctx.previousRequest) === canonicalJson(request)
    ? []
    : [violation('P8', '', 'retry of a sealed batch differs from its first send')];
}

function requestOf(ctx: RuleContext): PushRequest | undefined {
  if (ctx.request === undefined) return undefined;
  const result = validate('push-request', ctx.request);
  return result.ok ? result.value : undefined;
}

/** PR1: the response names the request's batch. */
export function batchIdEchoed(response: PushResponse, ctx: RuleContext): Violation[] | undefined {
  const request = requestOf(ctx);
  if (request === undefined) return undefined;
  return response.batch_id === request.batch_id ? [] : [violation('PR1', '/batch_id', 'batch_id differs from the request')];
}

/** PR2: every requested mutation exactly once across accepted and rejected, each array in request order, table and pk echoed. */
export function outcomePartitionMatchesRequest(response: PushResponse, ctx: RuleContext): Violation[] | undefined {
  const request = requestOf(ctx);
  if (request === undefined) return undefined;
  const position = new Map(request.mutations.map((m, i) => [m.mutation_id, i]));
  const seen = new Set<string>();
  const out: Violation[] = [];
  for (const [name, outcomes] of [['accepted', response.accepted], ['rejected', response.rejected]] as const) {
    let last = -1;
    outcomes.forEach((o, i) => {
      const at = `/${name}/${i}`;
      const index = position.get(o.mutation_id);
      if (index === undefined) {
        out.push(violation('PR2', `${at}/mutation_id`, 'outcome for a mutation the request does not contain'));
        return;
      }
      if (seen.has(o.mutation_id)) out.push(violation('PR2', `${at}/mutation_id`, 'mutation has more than one outcome'));
      seen.add(o.mutation_id);
      if (index < last) out.push(violation('PR2', at, `${name} is not in request order`));
      last = Math.max(last, index);
      const mutation = request.mutations[index];
      if (mutation === undefined) return;
      if (o.table !== mutation.table) out.push(violation('PR2', `${at}/table`, 'table does not echo the request'));
      if (canonicalJson(o.pk) !== canonicalJson(mutation.pk)) out.push(violation('PR2', `${at}/pk`, 'pk does not echo the request'));
    });
  }
  request.mutations.forEach((m, i) => {
    if (!seen.has(m.mutation_id)) out.push(violation('PR2', '', `request mutation ${i} has no outcome`));
  });
  return out;
}

/** PR6: incompatible field IDs are strictly increasing by octets. */
export function incompatibleFieldIdsSorted(response: PushResponse): Violation[] {
  return response.rejected.flatMap((o, i) =>
    o.code !== 'schema_incompatible'
      ? []
      : notStrictlyIncreasing(o.incompatible_field_ids).map((k) =>
          violation('PR6', `/rejected/${i}/incompatible_field_ids/${k}`, 'incompatible_field_ids must be strictly increasing by octets'),
        ),
  );
}

/** PR7: an atomic response is all applied, or nothing accepted with exactly one real failure and the rest atomic_batch_rejected under the request schema. */
export function atomicResponseAllOrNothing(response: PushResponse, ctx: RuleContext): Violation[] | undefined {
  const request = requestOf(ctx);
  if (request === undefined) return undefined;
  if (request.atomic !== true || response.rejected.length === 0) return [];
  const out: Violation[] = [];
  if (response.accepted.length > 0) out.push(violation('PR7', '/accepted', 'a failed atomic group accepts nothing'));
  const failures = response.rejected.filter((o) => o.code !== 'atomic_batch_rejected');
  if (failures.length !== 1) out.push(violation('PR7', '/rejected', `a failed atomic group has exactly one failing mutation, found ${failures.length}`));
  response.rejected.forEach((o, i) => {
    if (o.code === 'atomic_batch_rejected' && !sameRef(o.outcome_schema, request.schema)) {
      out.push(violation('PR7', `/rejected/${i}/outcome_schema`, 'atomic_batch_rejected outcomes are bound to the request schema'));
    }
  });
  return out;
}

/** PR8: atomic_batch_rejected never appears in a response to a non-atomic request. */
export function noAtomicRejectionWithoutAtomic(response: PushResponse, ctx: RuleContext): Violation[] | undefined {
  const request = requestOf(ctx);
  if (request === undefined) return undefined;
  if (request.atomic === true) return [];
  return response.rejected.flatMap((o, i) =>
    o.code === 'atomic_batch_rejected' ? [violation('PR8', `/rejected/${i}/code`, 'atomic_batch_rejected in a non-atomic response')] : [],
  );
}

/** PR9: on first execution every outcome is bound to the request schema. */
export function firstExecutionBindsRequestSchema(response: PushResponse, ctx: RuleContext): Violation[] | undefined {
  const request = requestOf(ctx);
  if (request === undefined || ctx.firstExecution === undefined) return undefined;
  if (!ctx.firstExecution) return [];
  const outcomes = [
    ...response.accepted.map((o, i) => ({ o, at: `/accepted/${i}` })),
    ...response.rejected.map((o, i) => ({ o, at: `/rejected/${i}` })),
  ];
  return outcomes.flatMap(({ o, at }) =>
    sameRef(o.outcome_schema, request.schema) ? [] : [violation('PR9', `${at}/outcome_schema`, 'first execution binds outcomes to the request schema')],
  );
}

/** PR10 and BR5: a replay returns the original status and exactly the original bytes. */
export function replayIdentical(rule: string, ctx: RuleContext): Violation[] | undefined {
  if (ctx.replayOf === undefined || ctx.bytes === undefined || ctx.status === undefined) return undefined;
  const out: Violation[] = [];
  if (ctx.status !== ctx.replayOf.status) out.push(violation(rule, '', `replay status ${ctx.status} differs from the original ${ctx.replayOf.status}`));
  if (compareBytes(ctx.bytes, ctx.replayOf.bytes) !== 0) out.push(violation(rule, '', 'replay bytes differ from the original'));
  return out;
}
