/**
 * An HTTP answer a harness-driven request got, read once into text and JSON
 * so assertions can look at both the exact bytes and the members.
 */
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

/** Reads a member by JSON pointer (`/scopes/add/0/id`); undefined when absent. */
export function member(value: unknown, pointer: string): unknown {
  if (pointer === '' || pointer === '/') return value;
  if (!pointer.startsWith('/')) throw new Error(`"${pointer}" is not a JSON pointer (it must start with "/")`);
  let current: unknown = value;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (current === null || typeof current !== 'object') return undefined;
    if (!Object.hasOwn(current, token)) return undefined;
    current = (current as Record<string, unknown>)[token];
  }
  return current;
}

/** Sets a member by JSON pointer, creating objects on the way; `undefined` removes it. */
export function setMember(value: unknown, pointer: string, next: unknown): void {
  const tokens = pointer.slice(1).split('/').map((raw) => raw.replaceAll('~1', '/').replaceAll('~0', '~'));
  let current = value as Record<string, unknown>;
  for (const token of tokens.slice(0, -1)) {
    if (current[token] === null || typeof current[token] !== 'object') current[token] = {};
    current = current[token] as Record<string, unknown>;
  }
  const last = tokens[tokens.length - 1] as string;
  if (next === undefined) {
    if (Array.isArray(current)) current.splice(Number(last), 1);
    else delete current[last];
  } else current[last] = next;
}
