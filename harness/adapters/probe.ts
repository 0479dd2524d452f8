/**
 * Finding out, before any scenario runs, whether the implementations under
 * test can be driven at all, and with which capabilities.
 *
 * The reference pair is the default. Until its server and client exist in
 * this project, their adapters say so: every scenario is then reported
 * undetermined with that reason instead of being run against nothing.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Capability } from './capabilities.ts';

export interface AdapterProbe {
  /** Short id as given on the command line, e.g. `reference`. */
  id: string;
  role: 'server' | 'client';
  description: string;
  available: boolean;
  /** Why the adapter cannot be used, when it is not available. */
  reason?: string;
  capabilities: readonly Capability[];
}

/** The entry points each reference adapter starts; absent until they are built. */
const REFERENCE_ENTRY = { server: 'reference/server/main.ts', client: 'reference/driver.ts' } as const;

export function probeAdapter(role: 'server' | 'client', id: string, root: string): AdapterProbe {
  if (id !== 'reference') {
    return { id, role, description: id, available: false, reason: `no ${role} adapter named "${id}" is known (only "reference" exists so far)`, capabilities: [] };
  }
  const entry = REFERENCE_ENTRY[role];
  const description = `Synchro reference ${role} (${entry})`;
  if (!existsSync(join(root, entry))) {
    return { id, role, description, available: false, reason: `the reference ${role} is not built yet: ${entry} does not exist`, capabilities: [] };
  }
  return { id, role, description, available: false, reason: `the reference ${role} adapter is not implemented yet`, capabilities: [] };
}
