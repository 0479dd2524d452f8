/**
 * Wire values of every portable type checked against a manifest-style field
 * declaration, as the wire rules G3 and G4 check them: plain JSON values (as a
 * schema validator sees them), each refused unless in its one canonical form.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CodecError,
  type ColumnSpec,
  IMPL_JSON_LIMITS,
  type PortableType,
  PROTOCOL_JSON_LIMITS,
  readKeyValue,
  readPortable,
} from '../../harness/codec/index.ts';

/** A non-nullable field; decimal parameters belong to decimal fields only. */
const field = (type: PortableType, extra: { precision?: number; scale?: number } = {}): ColumnSpec => ({
  type,
  nullable: false,
  ...(type === 'decimal' ? extra : {}),
});
const problem = (read: () => unknown): string | undefined => {
  try {
    read();
    return undefined;
  } catch (e) {
    if (e instanceof CodecError) return e.code;
    throw e;
  }
};
const portableValueProblem = (spec: ColumnSpec, value: unknown) => problem(() => readPortable(spec, value));
const keyValueProblem = (type: PortableType, value: unknown) => problem(() => readKeyValue(type, value));

const VALID: Array<[PortableType, unknown]> = [
  ['string', 'caf\u0065\u0301'], ['int', -2147483648], ['int', 2147483647], ['int64', '-9223372036854775808'], ['int64', '0'],
  ['decimal', '0'], ['decimal', '-0.05'], ['decimal', '123456.78'], ['float', 0.1], ['float', 1e21], ['boolean', false],
  ['datetime', '2024-02-29T12:34:56.123456Z'], ['date', '2000-02-29'], ['time', '23:59:59.999999'],
  ['json', '{"a":[1,"x"],"b":null}'], ['json', 'null'], ['bytes', ''], ['bytes', 'AQI'], ['bytes', '_-8'],
];
const INVALID: Array<[PortableType, unknown]> = [
  ['string', 'a\ud800'], ['string', 1], ['int', 2147483648], ['int', 1.5], ['int', -0], ['int', '1'],
  ['int64', 1], ['int64', '+1'], ['int64', '007'], ['int64', '-0'], ['int64', '9223372036854775808'],
  ['decimal', '1.2300'], ['decimal', '01.5'], ['decimal', '.5'], ['decimal', '5.'], ['decimal', '1e2'], ['decimal', '-0'], ['decimal', 1.5],
  ['decimal', '1234567.8'], ['decimal', '1.234'], ['float', -0], ['float', '1'], ['boolean', 0], ['boolean', 'true'],
  ['datetime', '2024-02-29T12:34:56Z'], ['datetime', '2024-02-29T12:34:56.123456+00:00'], ['datetime', '2024-02-30T00:00:00.000000Z'], ['datetime', '2024-01-01T23:59:60.000000Z'],
  ['date', '2023-02-29'], ['date', '2023-2-1'], ['time', '24:00:00.000000'], ['time', '12:00:00.000'], ['time', '12:00:00.000000Z'],
  ['json', '{"b":1,"a":2}'], ['json', '{"a":1.0}'], ['json', '{"a":1,"a":1}'], ['json', '{"a"'], ['json', '9007199254740993'],
  ['bytes', 'AQI='], ['bytes', 'AQ+/'], ['bytes', 'AR'], ['bytes', 'A'],
];

test('canonical wire values of every portable type are accepted', () => {
  for (const [type, value] of VALID) assert.equal(portableValueProblem(field(type, { precision: 8, scale: 2 }), value), undefined, `${type} ${String(value)}`);
});

test('non-canonical or mistyped values are rejected, never normalised', () => {
  for (const [type, value] of INVALID) {
    assert.notEqual(portableValueProblem(field(type, { precision: 8, scale: 2 }), value), undefined, `${type} ${String(value)}`);
  }
});

test('null is valid exactly in nullable fields', () => {
  assert.equal(portableValueProblem({ type: 'json', nullable: true }, null), undefined);
  assert.notEqual(portableValueProblem({ type: 'json', nullable: false }, null), undefined);
});

test('keys are string, int or int64 and never null', () => {
  assert.equal(keyValueProblem('int64', '42'), undefined);
  assert.notEqual(keyValueProblem('int64', 42), undefined);
  assert.notEqual(keyValueProblem('string', null), undefined);
  assert.notEqual(keyValueProblem('decimal', '1'), undefined);
});

test("upstream's nesting bound for json values applies by default and can be lifted to the protocol's", () => {
  const deep = `${'['.repeat(200)}${']'.repeat(200)}`;
  assert.equal(problem(() => readPortable({ type: 'json' }, deep, '', IMPL_JSON_LIMITS)), 'json_too_deep');
  assert.equal(problem(() => readPortable({ type: 'json' }, deep)), 'json_too_deep');
  assert.equal(problem(() => readPortable({ type: 'json' }, deep, '', PROTOCOL_JSON_LIMITS)), undefined);
  // Lifting the bounds keeps every I-JSON and canonical-form rule.
  assert.equal(problem(() => readPortable({ type: 'json' }, '[1.0]', '', PROTOCOL_JSON_LIMITS)), 'json_noncanonical');
  assert.equal(problem(() => readPortable({ type: 'json' }, '"\ufdd0"', '', PROTOCOL_JSON_LIMITS)), 'invalid_json');
});
