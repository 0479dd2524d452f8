/** Wire faults made for the recipes of the Protocol Invariants section (what each breaks is said in invariants.yaml). */
import type { FaultDefinition } from './define.ts';

export const PROTOCOL_WIRE_FAULTS: readonly FaultDefinition[] = [];
