/**
 * Generated connect states for the "never fetch" property of SYNC-SCHEMA-002,
 * and the dispatch table's answer for each, written from the fact sheet's
 * table (not from the reference's code): the oracle the responses are judged by.
 */
import fc from 'fast-check';

export type ReferenceKind = 'v1' | 'v2' | 'v3' | 'v4' | 'unknown' | 'sentinel';

export interface ConnectState {
  reference: ReferenceKind;
  reset: 'absent' | 'false' | 'true';
  generation: boolean;
  teams: number;
}

export const stateArbitrary: fc.Arbitrary<ConnectState> = fc.record({
  reference: fc.constantFrom<ReferenceKind>('v1', 'v2', 'v3', 'v4', 'unknown', 'sentinel'),
  reset: fc.constantFrom<ConnectState['reset']>('absent', 'false', 'true'),
  generation: fc.boolean(),
  teams: fc.integer({ min: 0, max: 3 }),
});

/** Draws `count` states from `seed`, plus one of each reference kind so every row of the table is reached. */
export function drawStates(seed: number, count: number): ConnectState[] {
  const drawn = fc.sample(stateArbitrary, { numRuns: count, seed });
  const kinds: ReferenceKind[] = ['v1', 'v2', 'v3', 'v4', 'unknown', 'sentinel'];
  return [...drawn, ...kinds.map((reference, i): ConnectState => ({ reference, reset: i % 2 === 0 ? 'absent' : 'false', generation: reference !== 'sentinel', teams: i % 4 }))];
}

export type Expected = { status: 400 } | { status: 200; action: string; reason?: string; affected?: string[] };

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * The table, top-down, with lineage version 4 (a Class 4 step over 3)
 * current. `assigned` is every scope the user holds.
 */
export function expectedFor(state: ConnectState, assigned: string[]): Expected {
  const reset = state.reset === 'true';
  if (state.reference === 'sentinel') {
    // Sentinel misuse: a generation, a reset or a known identity (the generation-bearing cases reuse a known one).
    if (state.generation || reset) return { status: 400 };
    return { status: 200, action: 'replace' };
  }
  // A continuing client always sends its generation.
  if (!state.generation) return { status: 400 };
  if (reset) return { status: 200, action: 'rebuild_local', affected: [...assigned].sort(byBytes) };
  if (state.reference === 'v4') return { status: 200, action: 'none' };
  if (state.reference === 'unknown') return { status: 200, action: 'unsupported', reason: 'unknown_schema_lineage' };
  return { status: 200, action: 'unsupported', reason: 'incompatible_schema_transition' };
}
