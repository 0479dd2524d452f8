/**
 * Schema action dispatch for connect: a pure function of the client's
 * reference, the published lineage and the assigned scopes. The lineage walk
 * follows parent links from the current manifest back to the client's
 * reference; not reaching it means the lineage is unknown.
 */
export interface LineageStep {
  version: number;
  hash: string;
  transitionClass: string;
  parent: { version: number; hash: string } | null;
  affectedScopes: string[];
}

export type SchemaAction =
  | { action: 'none' }
  | { action: 'replace' }
  | { action: 'rebuild_local'; affectedScopes: string[] }
  | { action: 'unsupported'; reason: 'unknown_schema_lineage' | 'incompatible_schema_transition' };

import { fault } from '../core/faults.ts';

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

export function dispatchSchema(input: {
  fresh: boolean;
  reset: boolean;
  reference: { version: number; hash: string };
  current: { version: number; hash: string };
  history: ReadonlyMap<number, LineageStep>;
  assigned: readonly string[];
}): SchemaAction {
  const assigned = [...new Set(input.assigned)].sort(byBytes);
  if (input.fresh) return { action: 'replace' };
  if (input.reset && !fault('schema-reset-ignored')) return assigned.length > 0 ? { action: 'rebuild_local', affectedScopes: assigned } : { action: 'replace' }; // fault: server:schema-reset-ignored
  const { reference, current } = input;
  if (reference.version === current.version && reference.hash === current.hash) return { action: 'none' };
  const affected = new Set<string>();
  let incompatible = false;
  let step = input.history.get(current.version);
  while (step !== undefined && !(step.version === reference.version && step.hash === reference.hash)) {
    if (step.transitionClass === 'class_4') incompatible = true;
    if (step.transitionClass === 'class_3') for (const s of step.affectedScopes) if (assigned.includes(s)) affected.add(s);
    if (step.transitionClass === 'class_3' && fault('class3-rebuilds-every-assigned-scope')) for (const s of assigned) affected.add(s); // fault: server:class3-rebuilds-every-assigned-scope
    step = step.parent === null ? undefined : input.history.get(step.parent.version);
    if (step !== undefined && step.hash !== input.history.get(step.version)?.hash) step = undefined;
  }
  if (step === undefined) return { action: 'unsupported', reason: 'unknown_schema_lineage' };
  if (incompatible && !fault('class4-replace')) return { action: 'unsupported', reason: 'incompatible_schema_transition' }; // fault: server:class4-replace
  if (affected.size > 0) return { action: 'rebuild_local', affectedScopes: [...affected].sort(byBytes) };
  return { action: 'replace' };
}
