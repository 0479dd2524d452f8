import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortableType } from '../../harness/wire/generated.ts';
import { keyValueProblem, portableValueProblem } from '../../harness/wire/portable-values.ts';

const field = (type: PortableType, extra: { precision?: number; scale?: number } = {}) => ({ type, nullable: false, ...extra });

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
