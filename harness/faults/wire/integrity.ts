/** Wire faults made for the recipes of the Integrity Invariants section (what each breaks is said in invariants.yaml). */
import type { FaultDefinition } from './define.ts';

export const INTEGRITY_WIRE_FAULTS: readonly FaultDefinition[] = [];
