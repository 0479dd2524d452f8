/** Wire faults made for the recipes of the Failure, State, And Version Invariants section (what each breaks is said in invariants.yaml). */
import type { FaultDefinition } from './define.ts';

export const STATE_WIRE_FAULTS: readonly FaultDefinition[] = [];
