import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blob, CodecError, compareBytes, domain, fromHex, i32be, i64be, text, toHex, u32be, u64be } from '../../harness/codec/index.ts';

test('integer primitives are big-endian and fixed width', () => {
  assert.equal(toHex(u32be(2)), '00000002');
  assert.equal(toHex(u64be(66)), '0000000000000042');
  assert.equal(toHex(i32be(-1)), 'ffffffff');
  assert.equal(toHex(i64be(-9223372036854775808n)), '8000000000000000');
  assert.throws(() => u32be(2 ** 32), RangeError);
  assert.throws(() => u64be(-1), RangeError);
});

test('blob and text prefix the octet length, not the character count', () => {
  assert.equal(toHex(blob(Uint8Array.of(1, 2))), '00000000000000020102');
  assert.equal(toHex(text('é')), '0000000000000002c3a9');
  assert.equal(toHex(text('')), '0000000000000000');
});

test('text refuses a lone surrogate instead of substituting U+FFFD', () => {
  assert.throws(() => text('a\ud800'), (e: unknown) => e instanceof CodecError && e.code === 'invalid_string');
});

test('domain separators are the ASCII constant followed by one zero octet', () => {
  const d = domain('synchro:v3:row-identity:v1');
  assert.equal(d.length, 27);
  assert.equal(d[26], 0);
  assert.equal(domain('synchro:v3:row-digest:v1').length, 25);
  assert.equal(domain('synchro:v3:scope-digest:v1').length, 27);
});

test('bytewise order is unsigned and a proper prefix sorts first', () => {
  assert.ok(compareBytes(Uint8Array.of(0x7f), Uint8Array.of(0x80)) < 0);
  assert.ok(compareBytes(Uint8Array.of(1), Uint8Array.of(1, 0)) < 0);
  assert.equal(compareBytes(Uint8Array.of(5, 6), Uint8Array.of(5, 6)), 0);
});

test('fromHex accepts lowercase octet pairs only', () => {
  assert.deepEqual([...fromHex('00ff')], [0, 255]);
  for (const bad of ['0F', 'abc', 'zz']) {
    assert.throws(() => fromHex(bad), (e: unknown) => e instanceof CodecError && e.code === 'invalid_digest');
  }
});
