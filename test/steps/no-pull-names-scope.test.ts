import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CountingAssert } from '../../steps/support/assertions.ts';
import { assertNoPullNamesScope } from '../../steps/support/seeds/pull-scopes.ts';

test('with no pull at all the check fails, since there is nothing to judge', () => {
  assert.throws(() => assertNoPullNamesScope(new CountingAssert(), [], 'catalog_public', 'S'), /recorded no pull from client "S"/);
});

test('a pull naming the scope fails the check and is named in the failure', () => {
  const pulls = [
    { seq: 3, scopes: ['user:alice'] },
    { seq: 5, scopes: ['catalog_public', 'user:alice'] },
  ];
  assert.throws(() => assertNoPullNamesScope(new CountingAssert(), pulls, 'catalog_public', 'S'), /pull #5/);
});

test('pulls that all leave the scope out pass, with both assertions counted', () => {
  const counting = new CountingAssert();
  assertNoPullNamesScope(counting, [{ seq: 3, scopes: ['user:alice'] }, { seq: 4, scopes: [] }], 'catalog_public', 'S');
  assert.equal(counting.count, 2);
});
