/** Example messages and small editing helpers shared by the wire tests. */
import { readFileSync } from 'node:fs';

const EXAMPLES = new URL('./examples/', import.meta.url);

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function example(name: string): Record<string, Json> {
  return JSON.parse(readFileSync(new URL(`${name}.json`, EXAMPLES), 'utf8')) as Record<string, Json>;
}

function parentOf(root: Json, pointer: string): { parent: Json; key: string } {
  const tokens = pointer.split('/').slice(1).map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
  const key = tokens.pop();
  if (key === undefined) throw new Error('pointer must name a member');
  let parent: Json = root;
  for (const t of tokens) {
    const next: Json | undefined = Array.isArray(parent) ? parent[Number(t)] : parent !== null && typeof parent === 'object' ? parent[t] : undefined;
    if (next === undefined) throw new Error(`no value at ${t} of ${pointer}`);
    parent = next;
  }
  return { parent, key };
}

/** A deep copy of `value` with the member at `pointer` set (or removed when `next` is undefined). */
export function edit<T extends Json>(value: T, pointer: string, next: Json | undefined): T {
  const copy = structuredClone(value);
  const { parent, key } = parentOf(copy, pointer);
  if (Array.isArray(parent)) {
    if (next === undefined) parent.splice(Number(key), 1);
    else parent[Number(key)] = next;
  } else if (parent !== null && typeof parent === 'object') {
    if (next === undefined) delete parent[key];
    else parent[key] = next;
  } else {
    throw new Error(`cannot edit inside a scalar at ${pointer}`);
  }
  return copy;
}

/** Applies several edits in order. */
export function edits<T extends Json>(value: T, changes: Array<[string, Json | undefined]>): T {
  return changes.reduce((acc, [pointer, next]) => edit(acc, pointer, next), value);
}
