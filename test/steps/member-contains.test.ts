import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CountingAssert } from '../../steps/support/assertions.ts';
import { assertMemberContains } from '../../steps/support/wire-values/member-contains.ts';

const answer = (json: unknown) => ({ endpoint: 'pull', json, text: JSON.stringify(json) });
const pull = answer({ rebuild: ['user:alice'], scope_cursors: { 'project:p1': 'c1' }, has_more: false, nested: { 'a/b': ['x'] } });

test('a list member passes when it holds the item and fails when it does not', () => {
  const check = new CountingAssert();
  assertMemberContains(check, pull, '/rebuild', 'user:alice');
  assert.ok(check.count > 0, 'the check counted its assertion');
  assert.throws(() => assertMemberContains(new CountingAssert(), pull, '/rebuild', 'project:p1'), /\/rebuild .*without "project:p1"/);
  assert.throws(() => assertMemberContains(new CountingAssert(), answer({ rebuild: [] }), '/rebuild', 'user:alice'));
});

test('an object member passes when the item is one of its keys and fails when it is not', () => {
  const check = new CountingAssert();
  assertMemberContains(check, pull, '/scope_cursors', 'project:p1');
  assert.ok(check.count > 0);
  assert.throws(() => assertMemberContains(new CountingAssert(), pull, '/scope_cursors', 'user:alice'), /without "user:alice"/);
  // A value of the object is not a key of it.
  assert.throws(() => assertMemberContains(new CountingAssert(), pull, '/scope_cursors', 'c1'));
});

test('a missing member, or one that is neither a list nor an object, fails', () => {
  assert.throws(() => assertMemberContains(new CountingAssert(), pull, '/scopes', 'user:alice'), /neither a list nor an object/);
  assert.throws(() => assertMemberContains(new CountingAssert(), pull, '/has_more', 'false'), /neither a list nor an object/);
  assert.throws(() => assertMemberContains(new CountingAssert(), answer(undefined), '/rebuild', 'user:alice'));
});

test('pointer tokens are unescaped (~1 is a slash)', () => {
  assertMemberContains(new CountingAssert(), pull, '/nested/a~1b', 'x');
  assert.throws(() => assertMemberContains(new CountingAssert(), pull, '/nested/a~1b', 'y'));
});
