/**
 * Editing JSON bodies by JSON pointer (RFC 6901), for the proxy's `rewrite`
 * fault and for steps that send a request with one member altered.
 *
 * A value the harness must put on the wire with an exact spelling that a
 * JavaScript number cannot keep (`3.0`, `1e3`, `9007199254740993`) is held as
 * a `RawJson` token and written out verbatim by `serializeJson`.
 */

/** A JSON text inserted verbatim when the value is serialized. */
export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** The reference tokens of a pointer; '' is the whole document. */
export function pointerTokens(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new Error(`"${pointer}" is not a JSON pointer: it must be empty or start with "/"`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function isContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  return typeof value === 'object' && value !== null && !(value instanceof RawJson);
}

function childKey(container: Record<string, unknown> | unknown[], token: string, pointer: string, forWrite: boolean): string | number {
  if (!Array.isArray(container)) return token;
  if (forWrite && token === '-') return container.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new Error(`${pointer}: "${token}" is not an array index`);
  return Number(token);
}

/** The value at `pointer`, or undefined when some part of the path is missing. */
export function getPointer(root: unknown, pointer: string): unknown {
  let at: unknown = root;
  for (const token of pointerTokens(pointer)) {
    if (!isContainer(at)) return undefined;
    const key = childKey(at, token, pointer, false);
    // Own members only: a pointer never reaches inherited properties such as "constructor".
    if (!Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string | number, unknown>)[key];
  }
  return at;
}

/** The container that holds the target of `pointer`, and the target's key in it; throws when the container is missing. */
function parentOf(root: unknown, pointer: string, forWrite: boolean): { container: Record<string, unknown> | unknown[]; key: string | number } {
  const tokens = pointerTokens(pointer);
  const last = tokens.pop();
  if (last === undefined) throw new Error('the empty pointer names the whole document, which has no parent');
  let at: unknown = root;
  let walked = '';
  for (const token of tokens) {
    walked += `/${token}`;
    if (!isContainer(at)) throw new Error(`${walked}: the body has no object or array here`);
    at = (at as Record<string | number, unknown>)[childKey(at, token, pointer, false)];
  }
  if (!isContainer(at)) throw new Error(`${pointer}: the body has no object or array to hold this member`);
  return { container: at, key: childKey(at, last, pointer, forWrite) };
}

/** Sets (or adds) the member at `pointer`; returns the document, which is a new one only for the empty pointer. */
export function setPointer(root: unknown, pointer: string, value: unknown): unknown {
  if (pointer === '') return value;
  const { container, key } = parentOf(root, pointer, true);
  (container as Record<string | number, unknown>)[key] = value;
  return root;
}

/** Removes the member at `pointer` (an array element is spliced out); throws when it is absent. */
export function removePointer(root: unknown, pointer: string): unknown {
  const { container, key } = parentOf(root, pointer, false);
  if (Array.isArray(container)) {
    if (typeof key !== 'number' || key >= container.length) throw new Error(`${pointer}: no such array element`);
    container.splice(key, 1);
  } else {
    if (!Object.hasOwn(container, key)) throw new Error(`${pointer}: no such member`);
    delete container[key as string];
  }
  return root;
}

/** JSON text of `value`, writing `RawJson` tokens verbatim and leaving out `undefined` members. */
export function serializeJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    if (text === undefined) throw new Error(`a ${typeof value} has no JSON form`);
    return text;
  }
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : serializeJson(item))).join(',')}]`;
  const members: string[] = [];
  for (const [name, member] of Object.entries(value)) if (member !== undefined) members.push(`${JSON.stringify(name)}:${serializeJson(member)}`);
  return `{${members.join(',')}}`;
}

/**
 * One JSON value read from the text a step gives, with that text trimmed (the
 * spelling callers keep for numbers). Throws when the text is not one JSON
 * value, telling the scenario's author to quote strings.
 */
export function readJsonText(text: string): { value: unknown; trimmed: string } {
  const trimmed = text.trim();
  try {
    return { value: JSON.parse(trimmed), trimmed };
  } catch {
    throw new Error(`${text} is not a JSON value (quote strings: "text")`);
  }
}

/**
 * Reads the value a step names as JSON text: a string token is kept as a
 * string, `null`/`true`/`false` as themselves, anything else (numbers in any
 * spelling, objects) verbatim as a `RawJson`, so `3.0` stays `3.0`. Throws
 * when the text is not one JSON value.
 */
export function jsonLiteral(text: string): unknown {
  const { value, trimmed } = readJsonText(text);
  if (typeof value === 'string' || typeof value === 'boolean' || value === null) return value;
  return new RawJson(trimmed);
}
