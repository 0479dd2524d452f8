/**
 * Damage to a terminal checksum map in flight, for the client-side rules of
 * SYNC-PULL-018: one entry copied over another (or under a scope the client
 * does not have) and a digest re-spelled in upper case. Each rule waits for
 * the first pull answer of the client that carries "checksums" (the terminal
 * page) and passes earlier pages on untouched.
 */
import type { FaultRule } from '../../../harness/proxy/faults.ts';
import { getPointer, setPointer } from '../../../harness/proxy/rewrite.ts';

type Obj = Record<string, unknown>;

const parentOf = (pointer: string) => pointer.slice(0, pointer.lastIndexOf('/'));

function onTerminalMap(clientId: string, describe: string, edit: (json: unknown) => unknown): FaultRule {
  return {
    endpoint: 'pull',
    when: (request) => (request as Obj | undefined)?.client_id === clientId,
    fault: {
      kind: 'rewrite',
      describe,
      transform: (json: unknown) => (getPointer(json, '/checksums') === undefined ? undefined : edit(json)),
    },
  };
}

/** Sets `target` to a copy of the value at `source`. */
export function copyMemberRule(clientId: string, target: string, source: string): FaultRule {
  return onTerminalMap(clientId, `set ${target} to the value of ${source}`, (json) => {
    const value = getPointer(json, source);
    if (value === undefined || getPointer(json, parentOf(target)) === undefined) throw new Error(`the terminal page has no ${value === undefined ? source : parentOf(target)} to rewrite`);
    return setPointer(json, target, structuredClone(value));
  });
}

/** Replaces the string at `pointer` by its upper-case form. */
export function upperCaseRule(clientId: string, pointer: string): FaultRule {
  return onTerminalMap(clientId, `set ${pointer} to its upper-case form`, (json) => {
    const value = getPointer(json, pointer);
    if (typeof value !== 'string') throw new Error(`the terminal page has no string at ${pointer} to re-spell`);
    if (value.toUpperCase() === value) throw new Error(`${pointer} is already upper case (${value}), so re-spelling it changes nothing`);
    return setPointer(json, pointer, value.toUpperCase());
  });
}
