/**
 * canonicalJson's fast path (objects put in code-unit order, then one
 * JSON.stringify) against the `canonicalize` package it stands in for: the
 * same text for every tree, and a refusal exactly where the package refuses.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { CodecError, canonicalJson, RawNumber } from '../../harness/codec/index.ts';

/** What the package makes of `value`: its text, or that it refused. */
function packageText(value: unknown): string | 'refused' {
  try {
    return canonicalize(value) ?? 'refused';
  } catch {
    return 'refused';
  }
}

function ourText(value: unknown): string | 'refused' {
  try {
    return canonicalJson(value);
  } catch (e) {
    assert.ok(e instanceof CodecError && e.code === 'invalid_json', String(e));
    return 'refused';
  }
}

/** Member names the fast path must leave alone or order with care. */
const awkwardNames = fc.constantFrom('0', '1', '10', '9', '01', '4294967294', '4294967295', '__proto__', 'toJSON', 'a', 'B', '\u00e9', '\ud83d\ude00', '\ud800', '', ' ');

const leaves = fc.oneof(
  fc.jsonValue({ maxDepth: 0 }),
  fc.double(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(-0, Number.NaN, Number.POSITIVE_INFINITY, '\udc00', undefined),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => new RawNumber(String(n))),
);

const trees = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaves, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.array(fc.tuple(fc.oneof(fc.string({ unit: 'binary', maxLength: 4 }), awkwardNames), tie('value')), { maxLength: 6 }).map((members) => {
    // Built with defineProperty, so a member named __proto__ is an own member as the strict reader makes it.
    const o: Record<string, unknown> = {};
    for (const [k, v] of members) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
    return o;
  }),
})).value;

test('canonicalJson writes the package\'s text for any tree, and refuses where it refuses', () => {
  fc.assert(
    fc.property(trees, (value) => {
      assert.equal(ourText(value), packageText(value));
    }),
    { numRuns: 3000 },
  );
});

test('null-prototype objects, shared subtrees and deep trees give the package\'s text', () => {
  const shared = { b: 1, a: [1, 2] };
  const nullProto = Object.setPrototypeOf({ z: 1, y: { x: shared, w: shared } }, null) as Record<string, unknown>;
  assert.equal(ourText(nullProto), packageText(nullProto));
  let deep: unknown = { k: 'leaf' };
  for (let i = 0; i < 200; i++) deep = { b: deep, a: i };
  assert.equal(ourText(deep), packageText(deep));
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  assert.equal(ourText(cyclic), 'refused');
});
