/**
 * Generated page limits that a server must refuse: every JSON value that is
 * not an integer from 1 to 1000 written as a plain integer. Besides values
 * out of range, other JSON types and fractions, the draw includes integers in
 * range spelled as a fraction or with an exponent (`10.0`, `1e2`), which a
 * server that converts a number before checking it would wrongly accept.
 */
import fc from 'fast-check';

/** The exact JSON text of one limit value, as it goes on the wire. */
export const invalidLimitText: fc.Arbitrary<string> = fc.oneof(
  fc.integer({ min: -1_000_000, max: 0 }).map(String),
  fc.integer({ min: 1001, max: 2 ** 31 }).map(String),
  fc.tuple(fc.integer({ min: 1, max: 999 }), fc.integer({ min: 1, max: 9 })).map(([whole, tenth]) => `${whole}.${tenth}`),
  fc.integer({ min: 1, max: 1000 }).map((n) => `${n}.0`),
  fc.integer({ min: 1, max: 100 }).map((n) => `${n}e1`),
  fc.integer({ min: 1, max: 1000 }).map((n) => JSON.stringify(String(n))),
  fc.constantFrom('null', 'true', 'false', '[]', '{}', '[10]', '{"value":10}'),
);

/** `count` drawn limit texts for `seed`. */
export function drawInvalidLimits(count: number, seed: number): string[] {
  return fc.sample(invalidLimitText, { numRuns: count, seed });
}
