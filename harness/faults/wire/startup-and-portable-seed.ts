/** Wire faults made for the recipes of the Startup And Portable Seed Invariants section (what each breaks is said in invariants.yaml). */
import type { FaultDefinition } from './define.ts';

export const SEED_WIRE_FAULTS: readonly FaultDefinition[] = [];
