/**
 * Schema and cross-field checks of one proxied message, through harness/wire:
 * the strict reader (duplicate members, UTF-8, one JSON value), the message's
 * JSON Schema and the rules that apply with the facts the proxy has (the
 * request a response answers, its status and headers).
 */
import { checkBytes, type WireKind } from '../wire/index.ts';
import type { WireViolation } from './records.ts';

export interface MessageFacts {
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  /** The parsed request this response answers, when it was valid JSON. */
  request?: unknown;
}

export function checkWireMessage(kind: WireKind, side: 'request' | 'response', body: Buffer, facts: MessageFacts = {}): WireViolation[] {
  const context = {
    ...(facts.status === undefined ? {} : { status: facts.status }),
    ...(facts.headers === undefined ? {} : { headers: facts.headers }),
    ...(facts.request === undefined ? {} : { request: facts.request }),
  };
  const result = checkBytes(kind, new Uint8Array(body), context);
  const found: WireViolation[] = [];
  for (const error of result.schemaErrors) found.push({ message: kind, side, pointer: error.pointer, rule: error.rule, detail: error.message });
  for (const violation of result.violations) found.push({ message: kind, side, pointer: violation.pointer, rule: violation.rule, detail: violation.message });
  return found;
}

/** The parsed body, for handing a request to the checks of its response; undefined when it is not JSON. */
export function parseLoosely(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
