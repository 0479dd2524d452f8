import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CodecError, isJsonObject, lineAt, parseJson, parseJsonBytes, RawNumber, toPlain } from '../../harness/codec/index.ts';

const code = (c: string) => (e: unknown) => e instanceof CodecError && e.code === c;

test('numbers keep their exact source text', () => {
  const v = parseJson('[42.0, 4.2e1, -0, 1E400]');
  assert.ok(Array.isArray(v));
  assert.deepEqual(
    v.map((n) => (n as RawNumber).raw),
    ['42.0', '4.2e1', '-0', '1E400'],
  );
  assert.ok(v[0] instanceof RawNumber);
});

test('duplicate member names are rejected at any depth with their pointer', () => {
  assert.throws(() => parseJson('{"a":1,"a":2}'), code('json_duplicate_member'));
  assert.throws(
    () => parseJson('{"x":[{"b":1,"b":1}]}'),
    (e: unknown) => e instanceof CodecError && e.code === 'json_duplicate_member' && e.path === '/x/0/b',
  );
});

test('a member named __proto__ is an ordinary member', () => {
  const v = parseJson('{"__proto__":{"polluted":true}}');
  assert.ok(isJsonObject(v));
  assert.deepEqual(Object.keys(v), ['__proto__']);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('syntax errors: trailing data, bad escapes, control characters, incomplete values', () => {
  for (const bad of ['1 2', '{"a":1', '"\\x"', '"a\u0001"', '[1,]', '{"a" 1}', '01', '+1', '.5', 'NaN', '', 'tru']) {
    assert.throws(() => parseJson(bad), code('json_syntax'), bad);
  }
});

test('nesting is limited to 127 containers by default', () => {
  assert.doesNotThrow(() => parseJson(`${'['.repeat(127)}${']'.repeat(127)}`));
  assert.throws(() => parseJson(`${'['.repeat(128)}${']'.repeat(128)}`), code('json_too_deep'));
  assert.throws(() => parseJson('[[1]]', { maxDepth: 1 }), code('json_too_deep'));
});

test('the number of values and names is limited', () => {
  assert.doesNotThrow(() => parseJson('[1,2]', { maxValues: 3 }));
  assert.throws(() => parseJson('[1,2,3]', { maxValues: 3 }), code('json_too_large'));
  assert.throws(() => parseJson('{"a":1,"b":2}', { maxValues: 4 }), code('json_too_large'));
});

test('escapes decode, including surrogate pairs; lone surrogates are left for the consumer to judge', () => {
  assert.equal(parseJson('"\\ud83d\\ude00\\n\\/"'), '\u{1F600}\n/');
  assert.equal(parseJson('"\\ud800"'), '\ud800');
});

test('ill-formed UTF-8 octets are refused', () => {
  assert.throws(() => parseJsonBytes(Uint8Array.of(0x22, 0xc3, 0x22)), code('json_syntax'));
  assert.equal(parseJsonBytes(new TextEncoder().encode('"é"')), 'é');
});

test('positions map containers to offsets, and lineAt turns offsets into lines', () => {
  const positions = new WeakMap<object, number>();
  const text = '{\n  "v": [\n    {"a": 1}\n  ]\n}';
  const v = parseJson(text, { positions });
  assert.ok(isJsonObject(v));
  const inner = (v.v as unknown[])[0] as object;
  assert.equal(lineAt(text, positions.get(inner) ?? -1), 3);
  assert.equal(lineAt(text, 0), 1);
});

test('syntax errors carry the offset where reading stopped', () => {
  try {
    parseJson('{\n"a":\n}');
    assert.fail('expected a syntax error');
  } catch (e) {
    assert.ok(e instanceof CodecError);
    assert.equal(e.offset, 7);
  }
});

test('toPlain converts numbers to binary64 and keeps structure', () => {
  assert.deepEqual(toPlain(parseJson('{"a":[1.50,true,null,"x"]}')), { a: [1.5, true, null, 'x'] });
});
