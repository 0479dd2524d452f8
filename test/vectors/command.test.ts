import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError, UsageError } from '../../harness/errors.ts';
import { buildAggregate, vectorHash } from '../../harness/vectors/aggregate.ts';
import { defaultPackPaths, main, vectorSetHash } from '../../harness/vectors/command.ts';
import { scratchDir } from '../support/scratch-dir.ts';

function capture(t: { mock: { method: (o: object, m: string, f: (...a: unknown[]) => void) => unknown } }): string[] {
  const lines: string[] = [];
  t.mock.method(console, 'log', (...a: unknown[]) => {
    lines.push(a.map(String).join(' '));
  });
  return lines;
}

const dir = scratchDir('vector-packs-');
const ownPack = defaultPackPaths().find((p) => p.endsWith('typed-values.json')) ?? '';

test('every pack under vectors/ passes', async (t) => {
  const lines = capture(t);
  assert.equal(await main(['run']), 0);
  const total = lines.find((l) => l.startsWith('vectors: '));
  assert.match(total ?? '', /^vectors: [1-9]\d* passed, 0 failed$/);
  assert.equal(lines.filter((l) => l.startsWith('FAIL')).length, 0);
  assert.equal(lines.filter((l) => /^sha256 [0-9a-f]{64} {2}vectors\//.test(l)).length, defaultPackPaths().length);
  const upstream = defaultPackPaths().filter((p) => Object.hasOwn(JSON.parse(readFileSync(p, 'utf8')) as object, 'aggregate'));
  assert.ok(upstream.length >= 1, 'vectors/ holds at least one upstream-format pack');
  assert.equal(lines.filter((l) => /^aggregate sha256 [0-9a-f]{64} {2}vectors\/.* \(verified over \d+ vector hashes\)$/.test(l)).length, upstream.length);
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

// ---- upstream format ----

const upstreamPack = defaultPackPaths().find((p) => p.endsWith('upstream-canonical.json')) ?? '';
type Pack = { vector_set_id: string; description?: string; vectors: Record<string, unknown>[]; aggregate: Record<string, unknown> };
const readUpstream = (): Pack => JSON.parse(readFileSync(upstreamPack, 'utf8')) as Pack;

/** Writes a pack with one vector per line, so vector k sits on line k + 3. */
function writeUpstream(name: string, pack: Pack): string {
  const file = join(dir, name);
  const vectors = pack.vectors.map((v) => `  ${JSON.stringify(v)}`).join(',\n');
  writeFileSync(file, `{"vector_set_id": ${JSON.stringify(pack.vector_set_id)},\n"vectors": [\n${vectors}\n],\n"aggregate": ${JSON.stringify(pack.aggregate)}\n}\n`);
  return file;
}

const idOf = (pack: Pack, id: string): number => pack.vectors.findIndex((v) => v.vector_id === id);

test('the upstream-format pack passes, vector by vector, and its verified aggregate is printed', async (t) => {
  const pack = readUpstream();
  const lines = capture(t);
  assert.equal(await main(['run', upstreamPack]), 0);
  assert.equal(lines.filter((l) => l.startsWith('ok   ')).length, pack.vectors.length);
  assert.equal(pack.aggregate.vector_count, pack.vectors.length);
  assert.ok(lines.includes(`aggregate sha256 ${String(pack.aggregate.sha256)}  vectors/upstream-canonical.json (verified over ${pack.vectors.length} vector hashes)`));
  for (const kind of ['typed_value', 'schema_manifest', 'row_identity', 'row_digest', 'scope_digest', 'mutation_fingerprint', 'batch_fingerprint']) {
    for (const valid of [true, false]) assert.ok(pack.vectors.some((v) => v.kind === kind && v.valid === valid), `${kind} valid=${valid}`);
  }
});

test('a copy with one altered vector fails before any vector runs, naming the file, the vector line and the fix', async (t) => {
  const pack = readUpstream();
  const k = idOf(pack, 'VEC-TYPED-BOOLEAN-TRUE-001');
  const vector = pack.vectors[k] as { input: { raw_json: string } };
  vector.input.raw_json = 'false';
  const file = writeUpstream('altered-vector.json', pack);
  const lines = capture(t);
  await assert.rejects(main(['run', file]), (e: unknown) => {
    assert.ok(e instanceof InputError);
    assert.equal(e.file, file);
    assert.equal(e.line, k + 3);
    assert.match(e.problem, /VEC-TYPED-BOOLEAN-TRUE-001 .*hashes to [0-9a-f]{64}, but aggregate\.vector_hashes\[\d+\] is/);
    assert.match(e.fix, /restore the pack/);
    return true;
  });
  assert.equal(lines.length, 0, 'nothing is printed for a pack that does not verify');
});

test('a copy with an altered aggregate hash, vector hash list or vector count fails with the aggregate line', async () => {
  const cases: [string, (p: Pack) => void, RegExp][] = [
    ['altered-sha.json', (p) => { p.aggregate.sha256 = '0'.repeat(64); }, /aggregate\.sha256 is 0{64}, but the aggregate hashes to/],
    ['altered-count.json', (p) => { p.aggregate.vector_count = p.vectors.length + 1; }, /vector_count is \d+ but the pack has \d+ vectors/],
    ['dropped-vector.json', (p) => { p.vectors.pop(); }, /vector_count is \d+ but the pack has \d+ vectors/],
    ['short-hash-list.json', (p) => { (p.aggregate.vector_hashes as string[]).pop(); }, /vector_hashes lists \d+ hashes for \d+ vectors/],
    ['swapped-vectors.json', (p) => { p.vectors.reverse(); }, /hashes to .* but aggregate\.vector_hashes\[0\]/],
  ];
  for (const [name, change, problem] of cases) {
    const pack = readUpstream();
    change(pack);
    const file = writeUpstream(name, pack);
    await assert.rejects(main(['run', file]), (e: unknown) => e instanceof InputError && e.file === file && problem.test(e.problem) && e.line !== undefined, name);
  }
});

test('a consistent aggregate does not save a wrong vector: its expectation is still checked', async (t) => {
  const pack = readUpstream();
  const k = idOf(pack, 'VEC-FP-MUTATION-INSERT-001');
  const vector = pack.vectors[k] as { expected: Record<string, string> };
  vector.expected.expected_sha256 = '0'.repeat(64);
  const refused = pack.vectors[idOf(pack, 'VEC-FP-MUTATION-ID-UPPERCASE-001')] as { valid: boolean; expected: Record<string, unknown> };
  refused.valid = true;
  refused.expected = { canonical_bytes_hex: '', expected_bytes_sha256: '0'.repeat(64), expected_sha256: '0'.repeat(64) };
  const accepted = pack.vectors[idOf(pack, 'VEC-FP-MUTATION-DELETE-001')] as { valid: boolean; expected: Record<string, unknown> };
  accepted.valid = false;
  accepted.expected = { error: 'invalid_op_shape' };
  pack.aggregate = buildAggregate(pack.vectors as never) as unknown as Record<string, unknown>;
  assert.equal((pack.aggregate.vector_hashes as string[])[k], vectorHash(pack.vectors[k] as never));
  const file = writeUpstream('consistent-but-wrong.json', pack);
  const lines = capture(t);
  assert.equal(await main(['run', file]), 1);
  const fails = lines.filter((l) => l.startsWith('FAIL'));
  assert.equal(fails.length, 3, fails.join('\n'));
  assert.match(fails.find((l) => l.includes('VEC-FP-MUTATION-INSERT-001')) ?? '', /consistent-but-wrong\.json:\d+\): expected_sha256 differs/);
  assert.match(fails.find((l) => l.includes('ID-UPPERCASE')) ?? '', /rejected with invalid_uuid/);
  assert.match(fails.find((l) => l.includes('VEC-FP-MUTATION-DELETE-001')) ?? '', /accepted, expected rejection with invalid_op_shape/);
});

test('an upstream vector missing an expectation is a schema error on its line', async () => {
  const pack = readUpstream();
  const k = idOf(pack, 'VEC-TYPED-INT-ZERO-001');
  delete (pack.vectors[k] as { expected: Record<string, unknown> }).expected.expected_sha256;
  pack.aggregate = buildAggregate(pack.vectors as never) as unknown as Record<string, unknown>;
  const file = writeUpstream('missing-expectation.json', pack);
  await assert.rejects(main(['run', file]), (e: unknown) => e instanceof InputError && e.line === k + 3 && /vector-pack\.schema\.json/.test(e.problem));
});
