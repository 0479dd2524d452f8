/** The shape of a fault and the helper that names a wire fault, shared by the registry and the wire fault modules. */
import type { FaultRule } from '../../proxy/faults.ts';

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

/** A wire fault named `wire:<name>`, made of these proxy rules. */
export const wire = (name: string, rules: FaultRule[]): FaultDefinition => ({ name: `wire:${name}`, kind: 'wire', rules });
