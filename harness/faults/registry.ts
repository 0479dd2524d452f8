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
import { COMMON_WIRE_FAULTS } from './wire/common.ts';
import type { FaultDefinition } from './wire/define.ts';
import { STATE_WIRE_FAULTS } from './wire/failure-state-and-version.ts';
import { INTEGRITY_WIRE_FAULTS } from './wire/integrity.ts';
import { MUTATION_WIRE_FAULTS } from './wire/mutation-and-data-correctness.ts';
import { PROTOCOL_WIRE_FAULTS } from './wire/protocol.ts';
import { PULL_REBUILD_WIRE_FAULTS } from './wire/pull-rebuild.ts';
import { SCOPE_WIRE_FAULTS } from './wire/scope-and-membership.ts';
import { SEED_WIRE_FAULTS } from './wire/startup-and-portable-seed.ts';

export type { FaultDefinition, FaultKind } from './wire/define.ts';

/** Faults the proxy injects: the shared ones and each section's own. */
export const WIRE_FAULTS: readonly FaultDefinition[] = [...COMMON_WIRE_FAULTS, ...PROTOCOL_WIRE_FAULTS, ...INTEGRITY_WIRE_FAULTS, ...STATE_WIRE_FAULTS, ...SCOPE_WIRE_FAULTS, ...SEED_WIRE_FAULTS, ...MUTATION_WIRE_FAULTS, ...PULL_REBUILD_WIRE_FAULTS];

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
