import assert from 'node:assert/strict';
import { test } from 'node:test';
import canonicalize from 'canonicalize';
import { MAX_NORMALIZED_MUTATION_OCTETS, normalizeMutation } from '../../harness/codec/index.ts';
import type { PushRequest } from '../../harness/wire/generated.ts';
import { pushSizes } from '../../harness/wire/push-limits.ts';
import { checkMessage } from '../../harness/wire/rules.ts';
import { edit, example, type Json } from './helpers.ts';

const push = example('push-request');

test('the normalised mutation keeps absence and presence apart and sorts columns by UTF-8 octets', () => {
  const request = edit(push, '/mutations/0/columns', { b: 1, 'é': 2, a: null, Z: 3 }) as unknown as PushRequest;
  const [insert, update, remove] = request.mutations;
  assert.ok(insert && update && remove);
  assert.deepEqual(normalizeMutation(insert).slice(6), [[0], '2027-03-14T09:29:00.000001Z', [1, [['Z', 3], ['a', null], ['b', 1], ['é', 2]]]]);
  assert.deepEqual(normalizeMutation(update).slice(6, 7), [[1, 'v:t-2:7']]);
  assert.deepEqual(normalizeMutation(remove), [
    'mutation-v1', 'a1b2c3d4-0000-4000-8000-000000000003', 'tbl_labels', ['fld_labels_id', 12],
    ['3', '3'.repeat(64)], 'delete', [1, 'v:l-12:2'], '2027-03-14T09:29:02.000000Z', [0],
  ]);
});

test('request octets are the RFC 8785 form of the parsed request', () => {
  const sizes = pushSizes(push as unknown as PushRequest);
  assert.equal(sizes.canonicalRequestOctets, Buffer.byteLength(canonicalize(push) ?? ''));
  assert.deepEqual(sizes.mutations.map((m) => m.columnCount), [2, 1, 0]);
});

/** The insert of the example, padded so its normalised form has exactly `octets` octets. */
function padded(octets: number): Json {
  const base = pushSizes(edit(push, '/mutations/0/columns/fld_tasks_title', '') as unknown as PushRequest).mutations[0]?.normalizedOctets ?? 0;
  return edit(push, '/mutations/0/columns/fld_tasks_title', 'x'.repeat(octets - base));
}

test('a normalised mutation of exactly 65,536 octets passes; 65,537 fails P7', () => {
  const atLimit = padded(MAX_NORMALIZED_MUTATION_OCTETS);
  assert.equal(pushSizes(atLimit as unknown as PushRequest).mutations[0]?.normalizedOctets, MAX_NORMALIZED_MUTATION_OCTETS);
  assert.ok(checkMessage('push-request', atLimit).ok);
  const over = checkMessage('push-request', padded(MAX_NORMALIZED_MUTATION_OCTETS + 1));
  assert.deepEqual(over.violations.map((v) => [v.rule, v.pointer]), [['P7', '/mutations/0']]);
});
