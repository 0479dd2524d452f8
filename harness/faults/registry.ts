/**
 * The named faults a sensitivity run can apply.
 *
 * A fault is either a wire fault the proxy injects (`wire:<name>`, defined
 * here by the proxy rules it installs) or a fault switch in the reference
 * implementation (`server:<name>`, `client:<name>`): a single line there
 * marked `// fault: server:<name>`, enabled by the environment variable
 * `SYNCHRO_FAULTS=<name>[,<name>]` of that process. invariants.yaml lists, per
 * invariant, the recipes that violate it, each naming the Rule (clause) it
 * breaks and saying what it does; the sensitivity run applies each recipe to
 * the scenarios of its Rule and requires a Then step of that Rule to fail.
 *
 * Switches are registered by reading the marked lines in reference/, so the
 * registry always matches the code. A record naming a fault that is not
 * registered is an input error, so a typo cannot turn into a vacuous
 * "detected".
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FaultRule } from '../proxy/faults.ts';

export type FaultKind = 'wire' | 'server' | 'client';

/**
 * How a fault is made. What it breaks is said once, in the invariants.yaml
 * recipe that uses it (with the Rule it targets), not here.
 */
export interface FaultDefinition {
  name: string;
  kind: FaultKind;
  /** Wire faults: the proxy rules that make the fault. */
  rules?: FaultRule[];
  /** Switches: `file:line` of each marked line in reference/. */
  places?: string[];
}

const wire = (name: string, rules: FaultRule[]): FaultDefinition => ({ name: `wire:${name}`, kind: 'wire', rules });

/** Faults the proxy injects. */
export const WIRE_FAULTS: readonly FaultDefinition[] = [
  wire('drop-push-response', [{ endpoint: 'push', fault: { kind: 'drop-response' } }]),
  wire('drop-pull-response', [{ endpoint: 'pull', fault: { kind: 'drop-response' } }]),
  wire('push-429', [{ endpoint: 'push', fault: { kind: 'status', status: 429, retryAfter: '1' } }]),
  wire('push-503', [{ endpoint: 'push', fault: { kind: 'status', status: 503, retryAfter: '1' } }]),
  wire('pull-503', [{ endpoint: 'pull', fault: { kind: 'status', status: 503, retryAfter: '1' } }]),
  wire('delay-push', [{ endpoint: 'push', times: Number.POSITIVE_INFINITY, fault: { kind: 'delay', ms: 2_000 } }]),
  wire('duplicate-push', [{ endpoint: 'push', fault: { kind: 'duplicate' } }]),
  wire('truncate-pull-response', [{ endpoint: 'pull', fault: { kind: 'truncate' } }]),
  wire('truncate-rebuild-response', [{ endpoint: 'rebuild', fault: { kind: 'truncate' } }]),
  wire('corrupt-pull-response', [{ endpoint: 'pull', fault: { kind: 'corrupt-byte' } }]),
  wire('corrupt-rebuild-response', [{ endpoint: 'rebuild', fault: { kind: 'corrupt-byte' } }]),
  wire('pull-row-edited-under-digest', [
    { endpoint: 'pull', times: Number.POSITIVE_INFINITY, fault: { kind: 'rewrite', describe: 'edit one text value of each pull change row, keeping its row_checksum', transform: editRowsUnderDigest } },
  ]),
];

/**
 * Appends a character to the first text value of each pull change row that
 * is not its key, leaving `row_checksum` as the server computed it; a body
 * with no such row is left alone.
 */
// biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
function editRowsUnderDigest(json: any): unknown {
  let edited = false;
  for (const change of Array.isArray(json?.changes) ? json.changes : []) {
    const row = change?.row;
    if (row === null || typeof row !== 'object') continue;
    const keyFields = new Set(Object.keys(change.pk ?? {}));
    const name = Object.keys(row).find((k) => typeof row[k] === 'string' && !keyFields.has(k));
    if (name === undefined) continue;
    row[name] = `${row[name]}~`;
    edited = true;
  }
  return edited ? json : undefined;
}

const MARK = /\/\/ fault: ((server|client):[a-z0-9-]+)/g;
const REFERENCE_DIR = fileURLToPath(new URL('../../reference/', import.meta.url));

export interface MarkedSwitch {
  name: string;
  kind: 'server' | 'client';
  /** `file:line` of each marked line, relative to the project root. */
  places: string[];
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The fault switches marked in reference/, found by reading its sources (never by importing them). */
export function markedSwitches(referenceDir = REFERENCE_DIR): MarkedSwitch[] {
  const found = new Map<string, MarkedSwitch>();
  for (const file of sourceFiles(referenceDir).sort()) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        for (const match of line.matchAll(MARK)) {
          const name = match[1] as string;
          const entry = found.get(name) ?? { name, kind: match[2] as 'server' | 'client', places: [] };
          entry.places.push(`${relative(join(referenceDir, '..'), file)}:${index + 1}`);
          found.set(name, entry);
        }
      });
  }
  return [...found.values()];
}

const SWITCH_FAULTS: readonly FaultDefinition[] = markedSwitches().map((marked) => ({ name: marked.name, kind: marked.kind, places: marked.places }));

export const FAULTS: readonly FaultDefinition[] = [...WIRE_FAULTS, ...SWITCH_FAULTS];

export function knownFaultNames(): Set<string> {
  return new Set(FAULTS.map((fault) => fault.name));
}

export function findFault(name: string): FaultDefinition | undefined {
  return FAULTS.find((fault) => fault.name === name);
}

/** The switch name a process receives in SYNCHRO_FAULTS: the fault name without its kind prefix. */
export function switchName(fault: FaultDefinition): string {
  return fault.name.slice(fault.name.indexOf(':') + 1);
}
