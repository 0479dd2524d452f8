import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { CodecError, encodeTypedValue, type PortableValue, parseJson, RawNumber, toHex, typedValueFromWire } from '../../harness/codec/index.ts';

const hex = (type: Parameters<typeof typedValueFromWire>[0]['type'], wireText: string) => toHex(typedValueFromWire({ type }, parseJson(wireText)));

test('typed values match the sheet table byte for byte', () => {
  const table: [Parameters<typeof hex>[0], string, string][] = [
    ['boolean', 'false', '060100'],
    ['boolean', 'true', '060101'],
    ['int', '0', '020100000000'],
    ['int', '2147483647', '02017fffffff'],
    ['int', '-2147483648', '020180000000'],
    ['int', '-1', '0201ffffffff'],
    ['int64', '"9223372036854775807"', '03017fffffffffffffff'],
    ['int64', '"-9223372036854775808"', '03018000000000000000'],
    ['int64', '"9007199254740991"', '0301001fffffffffffff'],
    ['decimal', '"0"', '0401000000000000000130'],
    ['decimal', '"-0.5"', '040100000000000000042d302e35'],
    ['float', '0.1', '05013fb999999999999a'],
    ['float', '1', '05013ff0000000000000'],
    ['float', '1.7976931348623157e+308', '05017fefffffffffffff'],
    ['float', '5e-324', '05010000000000000001'],
    ['string', '""', '01010000000000000000'],
    ['string', '"\\u00e9"', '01010000000000000002c3a9'],
    ['string', '"e\\u0301"', '0101000000000000000365cc81'],
    ['bytes', '""', '0b010000000000000000'],
    ['date', '"2024-02-29"', '0801000000000000000a323032342d30322d3239'],
    ['datetime', '"2024-02-29T12:34:56.123456Z"', '0701000000000000001b323032342d30322d32395431323a33343a35362e3132333435365a'],
    ['json', '"null"', '0a0100000000000000046e756c6c'],
    ['string', 'null', '0100'],
    ['int', 'null', '0200'],
    ['boolean', 'null', '0600'],
    ['json', 'null', '0a00'],
    ['bytes', 'null', '0b00'],
  ];
  for (const [type, wire, want] of table) assert.equal(hex(type, wire), want, `${type} ${wire}`);
});

test('the sheet digest of boolean false', () => {
  const b = typedValueFromWire({ type: 'boolean' }, false);
  assert.equal(createHash('sha256').update(b).digest('hex'), '91fb6f2810bd43ad1dcfe0c56bd7de151992cb8b980d2a8bfe5cd4210c1f952c');
});

test('the same text "1" as string, int64 and decimal gives three different typed values', () => {
  const s = hex('string', '"1"');
  const i = hex('int64', '"1"');
  const d = hex('decimal', '"1"');
  assert.deepEqual([s.slice(0, 2), i.slice(0, 2), d.slice(0, 2)], ['01', '03', '04']);
  assert.equal(new Set([s, i, d]).size, 3);
});

test('a float -0 produced by the emitter side is encoded with +0 bits', () => {
  assert.equal(toHex(encodeTypedValue({ type: 'float', value: -0 })), '05010000000000000000');
});

/** Arbitrary valid typed values (as validated values) for the distinctness property. */
const portable: fc.Arbitrary<PortableValue> = fc.oneof(
  fc.option(fc.string({ unit: 'grapheme' })).map((value): PortableValue => ({ type: 'string', value })),
  fc.option(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })).map((value): PortableValue => ({ type: 'int', value })),
  fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })).map((value): PortableValue => ({ type: 'int64', value })),
  fc.option(fc.integer().map(String)).map((value): PortableValue => ({ type: 'decimal', value })),
  fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0))).map((value): PortableValue => ({ type: 'float', value })),
  fc.option(fc.boolean()).map((value): PortableValue => ({ type: 'boolean', value })),
  fc.option(fc.integer({ min: 0, max: 9999 }).map((y) => `${String(y).padStart(4, '0')}-01-01`)).map((value): PortableValue => ({ type: 'date', value })),
  fc.option(fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v))).map((value): PortableValue => ({ type: 'json', value })),
  fc.option(fc.uint8Array({ maxLength: 8 })).map((value): PortableValue => ({ type: 'bytes', value })),
);

function sameValue(a: PortableValue, b: PortableValue): boolean {
  if (a.type !== b.type) return false;
  if (a.value === null || b.value === null) return a.value === b.value;
  if (a.value instanceof Uint8Array && b.value instanceof Uint8Array) return Buffer.compare(a.value, b.value) === 0;
  return Object.is(a.value, b.value);
}

test('distinct typed values encode to distinct octets', () => {
  fc.assert(
    fc.property(portable, portable, (a, b) => {
      const same = Buffer.compare(encodeTypedValue(a), encodeTypedValue(b)) === 0;
      return same === sameValue(a, b);
    }),
    { numRuns: 2000 },
  );
});

test('the encoding is self-delimiting: a value never encodes as a prefix of another', () => {
  fc.assert(
    fc.property(portable, portable, (a, b) => {
      const x = Buffer.from(encodeTypedValue(a));
      const y = Buffer.from(encodeTypedValue(b));
      if (x.length >= y.length) return true;
      return Buffer.compare(x, y.subarray(0, x.length)) !== 0;
    }),
  );
});

test('a RawNumber and a plain number of the same canonical value encode alike', () => {
  assert.equal(toHex(typedValueFromWire({ type: 'float' }, new RawNumber('0.1'))), toHex(typedValueFromWire({ type: 'float' }, 0.1)));
});

test('a json value may hold 1,000,000 values and names, not one more (005 Impl bound, no vector: the text is 2 MB)', () => {
  const array = (values: number) => `[${new Array(values - 1).fill('0').join(',')}]`; // the array itself is one value
  const atLimit = array(1_000_000);
  assert.equal(toHex(typedValueFromWire({ type: 'json' }, atLimit)).slice(0, 4), '0a01');
  assert.throws(
    () => typedValueFromWire({ type: 'json' }, array(1_000_001)),
    (e: unknown) => e instanceof CodecError && e.code === 'json_too_large',
  );
  const object = `{${Array.from({ length: 500_000 }, (_, k) => `"${k.toString(36).padStart(4, '0')}":0`).sort().join(',')}}`;
  assert.throws(() => typedValueFromWire({ type: 'json' }, object), (e: unknown) => e instanceof CodecError && e.code === 'json_too_large', 'names count too');
});
