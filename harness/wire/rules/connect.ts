/**
 * Connect rules: the fresh-client sentinel and schema reset (C2, C3) on the
 * request; schema action members, assignment delta, cursor updates and the
 * scope set version step (CR1, CR2, CR4-CR8) on the response.
 */
import { pointer as childPointer } from '../../codec/index.ts';
import type { ConnectRequest, ConnectResponse, ScopeAssignmentDelta } from '../generated.ts';
import { validate } from '../validate.ts';
import { duplicates, notStrictlyIncreasing, type RuleContext, type Violation, violation } from './context.ts';

function isSentinel(request: ConnectRequest): boolean {
  return request.schema.version === 0;
}

/** C2: the sentinel belongs to a client with no generation, no reset, version 0 and no known scopes. */
export function sentinelMeansFreshClient(request: ConnectRequest): Violation[] {
  if (!isSentinel(request)) return [];
  const out: Violation[] = [];
  if (request.client_generation !== undefined) out.push(violation('C2', '/client_generation', 'a fresh client (schema sentinel) sends no client_generation'));
  if (request.schema_reset === true) out.push(violation('C2', '/schema_reset', 'a fresh client (schema sentinel) cannot request schema_reset'));
  if (request.scope_set_version !== 0) out.push(violation('C2', '/scope_set_version', 'a fresh client (schema sentinel) sends scope_set_version 0'));
  if (Object.keys(request.known_scopes).length > 0) out.push(violation('C2', '/known_scopes', 'a fresh client (schema sentinel) knows no scopes'));
  return out;
}

/** C3: a schema reset comes from a continuing client presenting a real reference. */
export function schemaResetNeedsContinuingClient(request: ConnectRequest): Violation[] {
  if (request.schema_reset !== true) return [];
  const out: Violation[] = [];
  if (request.client_generation === undefined) out.push(violation('C3', '/client_generation', 'schema_reset requires client_generation'));
  if (isSentinel(request)) out.push(violation('C3', '/schema', 'schema_reset requires a real schema reference'));
  return out;
}

const NEEDS_MANIFEST = new Set(['replace', 'rebuild_local']);

/** CR1: schema_definition is present exactly for the replace and rebuild_local actions. */
export function manifestPresentExactlyWhenReplacing(response: ConnectResponse): Violation[] {
  const needed = NEEDS_MANIFEST.has(response.schema.action);
  const present = response.schema_definition !== undefined;
  if (needed === present) return [];
  return [violation('CR1', '/schema_definition', needed ? `action ${response.schema.action} requires schema_definition` : `action ${response.schema.action} forbids schema_definition`)];
}

/** CR2: affected_scopes is present exactly for rebuild_local, sorted strictly by octets. */
export function affectedScopesExactlyForRebuildLocal(response: ConnectResponse): Violation[] {
  const needed = response.schema.action === 'rebuild_local';
  const scopes = response.affected_scopes;
  if (needed !== (scopes !== undefined)) {
    return [violation('CR2', '/affected_scopes', needed ? 'rebuild_local requires affected_scopes' : `action ${response.schema.action} forbids affected_scopes`)];
  }
  return notStrictlyIncreasing(scopes ?? []).map((i) => violation('CR2', `/affected_scopes/${i}`, 'affected_scopes must be strictly increasing by octets'));
}

/** CR4: an inline manifest is the one the descriptor names. */
export function manifestMatchesDescriptor(response: ConnectResponse): Violation[] {
  const manifest = response.schema_definition;
  if (manifest === undefined) return [];
  const out: Violation[] = [];
  if (manifest.schema_version !== response.schema.version) out.push(violation('CR4', '/schema_definition/schema_version', 'differs from schema.version'));
  if (manifest.schema_hash !== response.schema.hash) out.push(violation('CR4', '/schema_definition/schema_hash', 'differs from schema.hash'));
  return out;
}

/** Shared by CR5 and the pull assignment delta: unique added IDs, no scope both added and removed. */
export function scopeDeltaProblems(rule: string, delta: ScopeAssignmentDelta, at: string): Violation[] {
  const out: Violation[] = [];
  for (const i of duplicates(delta.add.map((a) => a.id))) out.push(violation(rule, `${at}/add/${i}/id`, 'scope added twice'));
  const added = new Set(delta.add.map((a) => a.id));
  delta.remove.forEach((id, i) => {
    if (added.has(id)) out.push(violation(rule, `${at}/remove/${i}`, 'scope both added and removed'));
  });
  return out;
}

/** CR5: the assignment delta adds each scope once and never adds and removes the same scope. */
export function connectScopeDeltaConsistent(response: ConnectResponse): Violation[] {
  return scopeDeltaProblems('CR5', response.scopes, '/scopes');
}

/** CR6: cursor updates concern only scopes that stay assigned (neither added nor removed). */
export function cursorUpdatesOnlyForKeptScopes(response: ConnectResponse): Violation[] {
  const moved = new Set([...response.scopes.add.map((a) => a.id), ...response.scopes.remove]);
  return Object.keys(response.scope_cursor_updates)
    .filter((id) => moved.has(id))
    .map((id) => violation('CR6', childPointer('/scope_cursor_updates', id), 'cursor update for a scope that is added or removed'));
}

/** CR7: an added scope arrives with a cursor only when its seed receipt was sent (and validated, when known). */
export function seededCursorsNeedReceipts(response: ConnectResponse, ctx: RuleContext): Violation[] | undefined {
  let allowed: Set<string> | undefined;
  if (ctx.validatedSeedScopes !== undefined) allowed = new Set(ctx.validatedSeedScopes);
  else if (ctx.request !== undefined) {
    const request = validate('connect-request', ctx.request);
    if (request.ok) allowed = new Set(Object.keys(request.value.seed_receipts ?? {}));
  }
  if (allowed === undefined) return undefined;
  const out: Violation[] = [];
  response.scopes.add.forEach((a, i) => {
    if (a.cursor !== null && !allowed.has(a.id)) out.push(violation('CR7', `/scopes/add/${i}/cursor`, 'added scope has a cursor without a validated seed receipt'));
  });
  return out;
}

/** CR8: the stored scope set version steps by exactly one when, and only when, the assignment changes. */
export function connectScopeSetVersionStep(response: ConnectResponse, ctx: RuleContext): Violation[] | undefined {
  if (ctx.serverScopeSetVersion === undefined) return undefined;
  return scopeSetVersionStep('CR8', response.scopes, response.scope_set_version, ctx.serverScopeSetVersion);
}

export function scopeSetVersionStep(rule: string, delta: ScopeAssignmentDelta, version: number, previous: number): Violation[] {
  const changed = delta.add.length > 0 || delta.remove.length > 0;
  const expected = changed ? previous + 1 : previous;
  if (version === expected) return [];
  return [violation(rule, '/scope_set_version', `expected ${expected}: stored version ${previous}, assignment ${changed ? 'changed' : 'unchanged'}`)];
}
