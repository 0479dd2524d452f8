import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError, UsageError } from '../../harness/errors.ts';
import { defaultPackPaths, main, vectorSetHash } from '../../harness/vectors/command.ts';

function capture(t: { mock: { method: (o: object, m: string, f: (...a: unknown[]) => void) => unknown } }): string[] {
  const lines: string[] = [];
  t.mock.method(console, 'log', (...a: unknown[]) => {
    lines.push(a.map(String).join(' '));
  });
  return lines;
}

const dir = mkdtempSync(join(tmpdir(), 'vector-packs-'));
const ownPack = defaultPackPaths().find((p) => p.endsWith('typed-values.json')) ?? '';

test('every pack under vectors/ passes', async (t) => {
  const lines = capture(t);
  assert.equal(await main(['run']), 0);
  const total = lines.find((l) => l.startsWith('vectors: '));
  assert.match(total ?? '', /^vectors: [1-9]\d* passed, 0 failed$/);
  assert.equal(lines.filter((l) => l.startsWith('FAIL')).length, 0);
  assert.equal(lines.filter((l) => /^sha256 [0-9a-f]{64} {2}vectors\//.test(l)).length, defaultPackPaths().length);
  assert.ok(lines.some((l) => l === `vector-set sha256 ${vectorSetHash()}`));
});

test('a pack whose expectation is wrong fails with a reason and a non-zero status', async (t) => {
  const text = readFileSync(ownPack, 'utf8').replace('"bytes_hex": "060101"', '"bytes_hex": "060100"');
  const file = join(dir, 'wrong-expectation.json');
  writeFileSync(file, text);
  const lines = capture(t);
  assert.equal(await main(['run', file]), 1);
  const fail = lines.filter((l) => l.startsWith('FAIL'));
  assert.equal(fail.length, 1);
  assert.match(fail[0] ?? '', /^FAIL VEC-TYPED-BOOLEAN-TRUE-001 \(.*wrong-expectation\.json:\d+\): bytes_hex differs/);
  assert.match(lines.find((l) => l.startsWith('vectors: ')) ?? '', / 1 failed$/);
});

test('an invalid vector that the codec accepts fails, and so does a wrong error code', async (t) => {
  const pack = {
    vector_set_id: 'broken',
    vectors: [
      { vector_id: 'A', kind: 'typed_value', valid: false, input: { type: 'int', value: 1 }, expected: { error: 'invalid_int' } },
      { vector_id: 'B', kind: 'typed_value', valid: false, input: { type: 'int', value: 1.5 }, expected: { error: 'int_out_of_range' } },
    ],
  };
  const file = join(dir, 'broken-invalid.json');
  writeFileSync(file, JSON.stringify(pack, null, 2));
  const lines = capture(t);
  assert.equal(await main(['run', file]), 1);
  assert.match(lines.find((l) => l.startsWith('FAIL A')) ?? '', /accepted, expected rejection with invalid_int/);
  assert.match(lines.find((l) => l.startsWith('FAIL B')) ?? '', /rejected with invalid_int, expected int_out_of_range/);
});

test('a pack that breaks the schema is an InputError naming the file, the vector line and a fix', async () => {
  const file = join(dir, 'bad-shape.json');
  writeFileSync(
    file,
    '{\n  "vector_set_id": "bad",\n  "vectors": [\n    {"vector_id": "OK-1", "kind": "typed_value", "valid": true, "input": {"type": "int", "value": 0}, "expected": {"bytes_hex": "020100000000", "sha256": "' +
      '0'.repeat(64) +
      '"}},\n    {"vector_id": "BAD-1", "kind": "typed_value", "valid": true, "input": {"type": "int"}, "expected": {}}\n  ]\n}\n',
  );
  await assert.rejects(main(['run', file]), (e: unknown) => {
    assert.ok(e instanceof InputError);
    assert.equal(e.file, file);
    assert.equal(e.line, 5);
    assert.match(e.problem, /vector-pack\.schema\.json/);
    assert.ok(e.fix.length > 0);
    return true;
  });
});

test('strict JSON problems in a pack are InputErrors with a line', async () => {
  const dup = join(dir, 'duplicate-member.json');
  writeFileSync(dup, '{\n  "vector_set_id": "x",\n  "vector_set_id": "y",\n  "vectors": []\n}');
  await assert.rejects(main(['run', dup]), (e: unknown) => e instanceof InputError && e.line === 3 && /twice/.test(e.problem));
  const trailing = join(dir, 'trailing.json');
  writeFileSync(trailing, '{"vector_set_id": "x", "vectors": []}\n,');
  await assert.rejects(main(['run', trailing]), (e: unknown) => e instanceof InputError && e.line === 2);
  await assert.rejects(main(['run', join(dir, 'missing.json')]), (e: unknown) => e instanceof InputError && e.line === undefined);
});

test('a repeated vector_id is an InputError on the second occurrence', async () => {
  const v = '{"vector_id": "X", "kind": "typed_value", "valid": false, "input": {"type": "int", "value": "1"}, "expected": {"error": "wrong_json_type"}}';
  const file = join(dir, 'repeated-id.json');
  writeFileSync(file, `{"vector_set_id": "x", "vectors": [\n${v},\n${v}\n]}`);
  await assert.rejects(main(['run', file]), (e: unknown) => e instanceof InputError && e.line === 3 && /used twice/.test(e.problem));
});

test('usage errors', async () => {
  await assert.rejects(main([]), UsageError);
  await assert.rejects(main(['check']), UsageError);
  await assert.rejects(main(['run', '--fast']), UsageError);
});

test('the vector-set hash depends on every pack byte and on the paths, not on argument order', () => {
  const a = join(dir, 'a.json');
  const b = join(dir, 'b.json');
  writeFileSync(a, '{"x":1}');
  writeFileSync(b, '{"y":2}');
  const h = vectorSetHash([a, b]);
  assert.match(h, /^[0-9a-f]{64}$/);
  assert.equal(vectorSetHash([b, a]), h);
  writeFileSync(b, '{"y":3}');
  assert.notEqual(vectorSetHash([a, b]), h);
  assert.notEqual(vectorSetHash([a]), vectorSetHash([a, b]));
});
