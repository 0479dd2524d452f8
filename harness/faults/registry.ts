/**
 * The named faults a sensitivity run can apply.
 *
 * A fault is either a wire fault the proxy injects (`wire:<name>`) or a fault
 * switch in the reference implementation (`server:<name>`, `client:<name>`),
 * each a single marked line there. invariants.yaml lists, per invariant, the
 * faults that violate it; the sensitivity run applies each one and requires
 * the invariant's feature to fail.
 *
 * The registry is empty until the proxy and the reference implementation
 * provide faults; a record naming a fault that is not registered here is an
 * input error, so a typo cannot turn into a vacuous "detected".
 */
export interface FaultDefinition {
  name: string;
  kind: 'wire' | 'server' | 'client';
  description: string;
}

export const FAULTS: readonly FaultDefinition[] = [];

export function knownFaultNames(): Set<string> {
  return new Set(FAULTS.map((fault) => fault.name));
}
