/**
 * An HTTP answer a harness-driven request got, read once into text and JSON
 * so assertions can look at both the exact bytes and the members.
 */
import { getPointer, pointerTokens, removePointer, setPointer } from '../../harness/proxy/rewrite.ts';

export interface Reply {
  /** Which protocol endpoint was asked (connect, push, pull, rebuild, schema, ...). */
  endpoint: string;
  status: number;
  text: string;
  /** The parsed body, or undefined when it is not JSON. Loosely typed: steps inspect it member by member. */
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected member by member in assertions
  json: any;
  headers: Headers;
  /** The exact request body that was sent. */
  requestText: string;
}

export async function readReply(endpoint: string, response: Response, requestText: string): Promise<Reply> {
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { endpoint, status: response.status, text, json, headers: response.headers, requestText };
}

/** Reads a member by JSON pointer (`/scopes/add/0/id`; `/` alone is the whole value); undefined when absent. */
export function member(value: unknown, pointer: string): unknown {
  return pointer === '/' ? value : getPointer(value, pointer);
}

/** Sets a member by JSON pointer, creating objects on the way; `undefined` removes it. */
export function setMember(value: unknown, pointer: string, next: unknown): void {
  const tokens = pointerTokens(pointer);
  let current = value as Record<string, unknown>;
  for (const token of tokens.slice(0, -1)) {
    if (current[token] === null || typeof current[token] !== 'object') current[token] = {};
    current = current[token] as Record<string, unknown>;
  }
  if (next === undefined) removePointer(value, pointer);
  else setPointer(value, pointer, next);
}
