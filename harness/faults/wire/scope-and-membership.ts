/** Wire faults made for the recipes of the Scope And Membership Invariants section (what each breaks is said in invariants.yaml). */
import type { FaultDefinition } from './define.ts';

export const SCOPE_WIRE_FAULTS: readonly FaultDefinition[] = [];
