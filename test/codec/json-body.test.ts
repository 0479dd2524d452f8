/** The message body reader: strict JSON plus what the protocol checks need (octets, depth, number spelling). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { readJsonBody } from '../../harness/codec/index.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

function failure(input: string | Uint8Array) {
  const result = readJsonBody(input);
  assert.equal(result.ok, false, `accepted ${String(input)}`);
  if (result.ok) throw new Error('unreachable');
  return result;
}

test('reads what JSON.parse reads, for any JSON text without duplicate names', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.constantFrom(0, 2), (value, indent) => {
      const text = JSON.stringify(value, null, indent);
      const result = readJsonBody(bytes(text));
      assert.ok(result.ok);
      assert.deepEqual(result.value, JSON.parse(text));
      assert.equal(result.bodyOctets, Buffer.byteLength(text));
    }),
  );
});

test('duplicate member names are rejected at any depth with the pointer of the duplicate', () => {
  assert.equal(failure('{"a":1,"a":2}').pointer, '/a');
  const deep = failure('{"x":[{"ok":1},{"b":{"c~/d":1,"c~/d":2}}]}');
  assert.equal(deep.code, 'json_duplicate_member');
  assert.equal(deep.pointer, '/x/1/b/c~0~1d');
  assert.equal(failure('{"k":{"a":1},"k":{"a":1}}').pointer, '/k');
});

test('names that differ only after escaping count as duplicates', () => {
  assert.equal(failure('{"a":1,"\\u0061":2}').code, 'json_duplicate_member');
});

test('invalid UTF-8 is rejected with the offset of the first bad octet', () => {
  const cases: Array<[number[], number]> = [
    [[0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d], 2],
    [[0x22, 0xed, 0xa0, 0x80, 0x22], 1], // encoded surrogate
    [[0x22, 0xc0, 0xaf, 0x22], 1], // overlong
    [[0x22, 0xf4, 0x90, 0x80, 0x80, 0x22], 1], // above U+10FFFF
    [[0x22, 0x61, 0xe2, 0x82], 2], // truncated
  ];
  for (const [octets, offset] of cases) {
    const result = failure(new Uint8Array(octets));
    // Ill-formed UTF-8 is malformed JSON text (RFC 8259 requires UTF-8); the message and offset name the octet.
    assert.equal(result.code, 'json_syntax');
    assert.match(result.message, /not valid UTF-8/);
    assert.equal(result.offset, offset);
  }
});

test('anything but exactly one JSON value is rejected', () => {
  for (const text of ['', '   ', '{"a":1} {"b":2}', '{"a":1,}', '[1,]', "{'a':1}", '{"a":01}', '{"a":.5}', '{"a":1.}', '{"a":+1}', 'NaN', '{"a":tru}', '"tab\there"', '\ufeff{}', '{"a" 1}', '"\\x41"']) {
    const result = failure(text);
    assert.equal(result.code, 'json_syntax', JSON.stringify(text));
    assert.doesNotMatch(result.message, /UTF-8/, JSON.stringify(text));
  }
});

test('lone surrogate escapes are rejected; escaped pairs are accepted', () => {
  assert.equal(failure('{"a":"\\ud800"}').code, 'invalid_string');
  assert.equal(failure('{"\\udc00":1}').code, 'invalid_string');
  const pair = readJsonBody('"\\ud83d\\ude00"');
  assert.ok(pair.ok && pair.value === '\u{1f600}');
});

test('number tokens not in RFC 8785 form are reported with their pointer', () => {
  const result = readJsonBody('{"i":1,"f":0.5,"big":1e+21,"a":[1.0,-0,1E2,100,2.50]}');
  assert.ok(result.ok);
  assert.deepEqual(result.nonCanonicalNumbers, [
    { pointer: '/a/0', text: '1.0' },
    { pointer: '/a/1', text: '-0' },
    { pointer: '/a/2', text: '1E2' },
    { pointer: '/a/4', text: '2.50' },
  ]);
});

test('body octets count UTF-8 octets, and depth is reported', () => {
  const result = readJsonBody(bytes('{"é":[[1]]}'));
  assert.ok(result.ok);
  assert.equal(result.bodyOctets, 12);
  assert.equal(result.maxDepth, 3);
});

test('a member named __proto__ stays an ordinary member', () => {
  const result = readJsonBody('{"__proto__":{"x":1}}');
  assert.ok(result.ok);
  assert.deepEqual(Object.keys(result.value as object), ['__proto__']);
  assert.equal(Object.getPrototypeOf(result.value), Object.prototype);
});

test('pathological nesting fails cleanly instead of exhausting the stack', () => {
  assert.equal(failure('['.repeat(5000) + ']'.repeat(5000)).code, 'json_too_deep');
});

test('failure offsets count octets, and a duplicate is located at its name', () => {
  const afterMultibyte = failure('{"é":1,}');
  assert.equal(afterMultibyte.code, 'json_syntax');
  assert.equal(afterMultibyte.offset, Buffer.byteLength('{"é":1,'));
  const duplicate = failure('{"é":1,"é":2}');
  assert.equal(duplicate.offset, Buffer.byteLength('{"é":1,'));
});

test('a body may nest deeper than the 127 levels allowed inside a json value', () => {
  const result = readJsonBody(`${'['.repeat(500)}${']'.repeat(500)}`);
  assert.ok(result.ok);
  assert.equal(result.maxDepth, 500);
});
