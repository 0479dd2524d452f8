/**
 * Pull rules: request checks against server state (L2, L3) and the response's
 * terminal checksum map, assignment delta, rebuild list, cursors, change
 * scopes, tombstones and scope set version transition (LR1-LR10).
 */
import { pointer as childPointer } from '../../codec/index.ts';
import type { PullRequest, PullResponse } from '../generated.ts';
import { validate } from '../validate.ts';
import { scopeDeltaProblems, scopeSetVersionStep } from './connect.ts';
import { duplicates, findManifest, type RuleContext, type Violation, violation } from './context.ts';

/** L2: the client never claims an assignment version newer than the server's. */
export function scopeSetVersionNotAhead(request: PullRequest, ctx: RuleContext): Violation[] | undefined {
  if (ctx.serverScopeSetVersion === undefined) return undefined;
  return request.scope_set_version > ctx.serverScopeSetVersion
    ? [violation('L2', '/scope_set_version', `ahead of the server's version ${ctx.serverScopeSetVersion}`)]
    : [];
}

/** L3: every presented scope is assigned now or was assigned before; clients never invent scopes. */
export function scopesEverAssigned(request: PullRequest, ctx: RuleContext): Violation[] | undefined {
  if (ctx.everAssignedScopes === undefined) return undefined;
  const known = new Set(ctx.everAssignedScopes);
  return Object.keys(request.scopes)
    .filter((id) => !known.has(id))
    .map((id) => violation('L3', childPointer('/scopes', id), 'scope was never assigned to this client'));
}

/** LR1: a page with more to come carries no checksums member at all. */
export function noChecksumsWhileMore(response: PullResponse): Violation[] {
  return response.has_more && response.checksums !== undefined ? [violation('LR1', '/checksums', 'has_more is true, so checksums must be absent')] : [];
}

/** LR2: a terminal page always carries checksums, even with no changes. */
export function checksumsOnTerminalPage(response: PullResponse): Violation[] {
  return !response.has_more && response.checksums === undefined ? [violation('LR2', '', 'has_more is false, so checksums is required')] : [];
}

/** The client's active set after this response's assignment delta. */
function activeAfter(response: PullResponse, before: readonly string[]): Set<string> {
  const removed = new Set(response.scope_updates.remove);
  const result = new Set(before.filter((id) => !removed.has(id)));
  for (const added of response.scope_updates.add) result.add(added.id);
  return result;
}

/** LR3: terminal checksum keys are exactly the active set after the delta (rebuild scopes included, removed ones excluded). */
export function terminalChecksumKeysMatchActiveSet(response: PullResponse, ctx: RuleContext): Violation[] | undefined {
  if (ctx.activeScopes === undefined) return undefined;
  if (response.checksums === undefined) return [];
  const expected = activeAfter(response, ctx.activeScopes);
  const out: Violation[] = [];
  for (const id of Object.keys(response.checksums)) {
    if (!expected.has(id)) out.push(violation('LR3', childPointer('/checksums', id), 'checksum for a scope outside the active set'));
  }
  for (const id of expected) {
    if (!Object.hasOwn(response.checksums, id)) out.push(violation('LR3', '/checksums', `missing checksum for active scope "${id}"`));
  }
  return out;
}

/** LR4: scopes added by pull arrive without a cursor and are listed for rebuild. */
export function addedScopesNeedRebuild(response: PullResponse): Violation[] {
  const rebuild = new Set(response.rebuild);
  return response.scope_updates.add.flatMap((a, i) => {
    const out: Violation[] = [];
    if (a.cursor !== null) out.push(violation('LR4', `/scope_updates/add/${i}/cursor`, 'pull never hands out a cursor for an added scope'));
    if (!rebuild.has(a.id)) out.push(violation('LR4', `/scope_updates/add/${i}/id`, 'added scope must be listed in rebuild'));
    return out;
  });
}

/** LR5: rebuild lists each scope once and never a removed scope; the delta itself is consistent. */
export function rebuildListConsistent(response: PullResponse): Violation[] {
  const out = scopeDeltaProblems('LR5', response.scope_updates, '/scope_updates');
  for (const i of duplicates(response.rebuild)) out.push(violation('LR5', `/rebuild/${i}`, 'scope listed twice'));
  const removed = new Set(response.scope_updates.remove);
  response.rebuild.forEach((id, i) => {
    if (removed.has(id)) out.push(violation('LR5', `/rebuild/${i}`, 'a removed scope cannot need rebuild'));
  });
  return out;
}

/** LR6: new cursors only for scopes that are neither removed nor being rebuilt. */
export function cursorsOnlyForHealthyScopes(response: PullResponse): Violation[] {
  const excluded = new Set([...response.scope_updates.remove, ...response.rebuild]);
  return Object.keys(response.scope_cursors)
    .filter((id) => excluded.has(id))
    .map((id) => violation('LR6', childPointer('/scope_cursors', id), 'cursor for a removed or rebuilding scope'));
}

/** LR7: changes belong to active scopes that are neither removed nor being rebuilt. */
export function changesOnlyForHealthyScopes(response: PullResponse, ctx: RuleContext): Violation[] {
  const excluded = new Set([...response.scope_updates.remove, ...response.rebuild]);
  const active = ctx.activeScopes === undefined ? undefined : activeAfter(response, ctx.activeScopes);
  return response.changes.flatMap((c, i) => {
    if (excluded.has(c.scope)) return [violation('LR7', `/changes/${i}/scope`, 'change for a removed or rebuilding scope')];
    if (active !== undefined && !active.has(c.scope)) return [violation('LR7', `/changes/${i}/scope`, 'change for a scope outside the active set')];
    return [];
  });
}

/** LR8: a delete carrying a row carries a tombstone (its deletion-time field is set). */
export function deleteRowsAreTombstones(response: PullResponse, ctx: RuleContext): Violation[] | undefined {
  if (ctx.manifests === undefined) return undefined;
  const request = ctx.request === undefined ? undefined : validate('pull-request', ctx.request);
  const manifest = request?.ok ? findManifest(ctx, request.value.schema) : ctx.manifests.length === 1 ? ctx.manifests[0] : undefined;
  if (manifest === undefined) return undefined;
  return response.changes.flatMap((c, i) => {
    if (c.op !== 'delete' || c.row === undefined) return [];
    const deletedAt = manifest.tables.find((t) => t.table_id === c.table)?.lifecycle.deleted_at_field_id;
    if (deletedAt === undefined || deletedAt === null || c.row[deletedAt] === null || c.row[deletedAt] === undefined) {
      return [violation('LR8', `/changes/${i}/row`, 'a delete row must be a tombstone with its deletion time set')];
    }
    return [];
  });
}

/** LR9: a terminal page gives every active scope that is not rebuilding a cursor. */
export function terminalCursorsForHealthyScopes(response: PullResponse, ctx: RuleContext): Violation[] | undefined {
  if (ctx.activeScopes === undefined) return undefined;
  if (response.has_more) return [];
  const rebuild = new Set(response.rebuild);
  return [...activeAfter(response, ctx.activeScopes)]
    .filter((id) => !rebuild.has(id) && !Object.hasOwn(response.scope_cursors, id))
    .map((id) => violation('LR9', '/scope_cursors', `terminal page lacks a cursor for scope "${id}"`));
}

/** LR10: the assignment version never goes back, moves only with a delta, and (given server state) steps by exactly one. */
export function pullScopeSetVersionTransition(response: PullResponse, ctx: RuleContext): Violation[] | undefined {
  if (ctx.serverScopeSetVersion !== undefined) {
    return scopeSetVersionStep('LR10', response.scope_updates, response.scope_set_version, ctx.serverScopeSetVersion);
  }
  const request = ctx.request === undefined ? undefined : validate('pull-request', ctx.request);
  if (request === undefined || !request.ok) return undefined;
  const sent = request.value.scope_set_version;
  const changed = response.scope_updates.add.length > 0 || response.scope_updates.remove.length > 0;
  if (response.scope_set_version < sent) return [violation('LR10', '/scope_set_version', 'lower than the version the client sent')];
  if (response.scope_set_version === sent && changed) return [violation('LR10', '/scope_updates', 'assignment changed but the version did not move')];
  return [];
}
