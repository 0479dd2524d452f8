/**
 * Rebuild rules: continuation requests repeat the attempt (B1, B2); pages
 * answer the requested scope and are either intermediate or final (BR1-BR3).
 */
import { canonicalJson } from '../../codec/index.ts';
import type { RebuildRequest, RebuildResponse } from '../generated.ts';
import { validate } from '../validate.ts';
import { type RuleContext, type Violation, violation } from './context.ts';

/** B1: the cursor is null on the first request of an attempt and only there. */
export function nullCursorOnlyFirst(request: RebuildRequest, ctx: RuleContext): Violation[] | undefined {
  if (ctx.previousExchange === undefined) return undefined;
  const first = ctx.previousExchange === null;
  if (first && request.cursor !== null) return [violation('B1', '/cursor', 'the first request of an attempt sends cursor null')];
  if (!first && request.cursor === null) return [violation('B1', '/cursor', 'a continuation sends the previous continuation, not null')];
  return [];
}

const REPEATED = ['client_id', 'client_generation', 'schema', 'scope', 'rebuild_id', 'limit'] as const;

/** B2: a continuation repeats every member of the attempt and sends exactly the continuation it was given. */
export function continuationRepeatsAttempt(request: RebuildRequest, ctx: RuleContext): Violation[] | undefined {
  const previous = ctx.previousExchange;
  if (previous === undefined) return undefined;
  if (previous === null) return [];
  const earlier = validate('rebuild-request', previous.request);
  const page = validate('rebuild-response', previous.response);
  if (!earlier.ok || !page.ok) return undefined;
  const out: Violation[] = [];
  for (const member of REPEATED) {
    if (canonicalJson(request[member]) !== canonicalJson(earlier.value[member])) out.push(violation('B2', `/${member}`, 'differs from the first request of the attempt'));
  }
  if (request.cursor !== page.value.cursor) out.push(violation('B2', '/cursor', 'is not the continuation the previous page returned'));
  return out;
}

/** BR1: the page is for the requested scope. */
export function rebuildScopeEchoed(response: RebuildResponse, ctx: RuleContext): Violation[] | undefined {
  const request = ctx.request === undefined ? undefined : validate('rebuild-request', ctx.request);
  if (request === undefined || !request.ok) return undefined;
  return response.scope === request.value.scope ? [] : [violation('BR1', '/scope', 'differs from the requested scope')];
}

/** BR2: an intermediate page has a continuation and neither final cursor nor checksum. */
export function intermediatePageShape(response: RebuildResponse): Violation[] {
  if (!response.has_more) return [];
  const out: Violation[] = [];
  if (response.cursor === null) out.push(violation('BR2', '/cursor', 'an intermediate page carries a continuation'));
  if (response.final_scope_cursor !== undefined) out.push(violation('BR2', '/final_scope_cursor', 'only the final page carries final_scope_cursor'));
  if (response.checksum !== undefined) out.push(violation('BR2', '/checksum', 'only the final page carries checksum'));
  return out;
}

/** BR3: the final page has cursor null, a final scope cursor and the scope checksum. */
export function finalPageShape(response: RebuildResponse): Violation[] {
  if (response.has_more) return [];
  const out: Violation[] = [];
  if (response.cursor !== null) out.push(violation('BR3', '/cursor', 'the final page has cursor null'));
  if (response.final_scope_cursor === undefined) out.push(violation('BR3', '', 'the final page carries final_scope_cursor'));
  if (response.checksum === undefined) out.push(violation('BR3', '', 'the final page carries checksum'));
  return out;
}
