import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  CodecError,
  type CodecErrorCode,
  canonicalJson,
  INT_MAX,
  INT_MIN,
  INT64_MAX,
  INT64_MIN,
  parsePortableType,
  RawNumber,
  readBytes,
  readDate,
  readDatetime,
  readDecimal,
  readFloat,
  readInt,
  readInt64,
  readJson,
  readPortable,
  readString,
  readTime,
} from '../../harness/codec/index.ts';

const raw = (text: string) => new RawNumber(text);
const rejects = (fn: () => unknown, code: CodecErrorCode, label = '') =>
  assert.throws(fn, (e: unknown) => e instanceof CodecError && e.code === code, `${label} should be rejected with ${code}`);

test('type names: the eleven exact names only', () => {
  for (const t of ['string', 'int', 'int64', 'decimal', 'float', 'boolean', 'datetime', 'date', 'time', 'json', 'bytes']) {
    assert.equal(parsePortableType(t), t);
  }
  for (const alias of ['integer', 'text', 'uuid', 'timestamp', 'timestamptz', 'bigint', 'numeric', 'String', 'INT', 'bool', 'real', 'blob', '']) {
    rejects(() => parsePortableType(alias), 'unknown_type', alias);
  }
});

test('int: boundaries accepted, one past them refused', () => {
  assert.equal(readInt(raw('2147483647')), INT_MAX);
  assert.equal(readInt(raw('-2147483648')), INT_MIN);
  rejects(() => readInt(raw('2147483648')), 'int_out_of_range');
  rejects(() => readInt(raw('-2147483649')), 'int_out_of_range');
  rejects(() => readInt(2147483648), 'int_out_of_range');
});

test('int: every non-canonical spelling the sheet lists is refused', () => {
  for (const s of ['42.0', '4.2e1', '-0', '1e0', '0.0']) rejects(() => readInt(raw(s)), 'invalid_int', s);
  rejects(() => readInt(-0), 'invalid_int');
  rejects(() => readInt(1.5), 'invalid_int');
  rejects(() => readInt('1'), 'wrong_json_type');
});

test('int range property: exactly the int32 values are accepted', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }), (n) => {
      const inRange = n >= BigInt(INT_MIN) && n <= BigInt(INT_MAX);
      try {
        assert.equal(readInt(raw(n.toString())), Number(n));
        return inRange;
      } catch (e) {
        return !inRange && e instanceof CodecError && e.code === 'int_out_of_range';
      }
    }),
  );
});

test('int64: boundaries and every refused spelling', () => {
  assert.equal(readInt64('9223372036854775807'), INT64_MAX);
  assert.equal(readInt64('-9223372036854775808'), INT64_MIN);
  rejects(() => readInt64('9223372036854775808'), 'int64_out_of_range');
  rejects(() => readInt64('-9223372036854775809'), 'int64_out_of_range');
  for (const s of ['+1', '007', '-0', '1.0', '1e3', ' 1', '']) rejects(() => readInt64(s), 'invalid_int64', s);
  rejects(() => readInt64(raw('1')), 'wrong_json_type');
  rejects(() => readInt64(1), 'wrong_json_type');
});

test('int64 range property: exactly the int64 values are accepted', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), (n) => {
      const inRange = n >= INT64_MIN && n <= INT64_MAX;
      try {
        return readInt64(n.toString()) === n && inRange;
      } catch (e) {
        return !inRange && e instanceof CodecError && e.code === 'int64_out_of_range';
      }
    }),
  );
});

/** Canonical decimal text of an exact value given as digits and a scale. */
function decimalText(unscaled: bigint, scale: number): string {
  const neg = unscaled < 0n;
  const digits = (neg ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  let whole = digits.slice(0, digits.length - scale);
  let frac = digits.slice(digits.length - scale).replace(/0+$/, '');
  whole = whole.replace(/^0+(?=\d)/, '');
  if (frac === '' && whole === '0') return '0';
  frac = frac === '' ? '' : `.${frac}`;
  return `${neg ? '-' : ''}${whole}${frac}`;
}

test('decimal: canonical text round-trips; each non-canonical variant of it is refused', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 0, max: 12 }), (unscaled, scale) => {
      const canonical = decimalText(unscaled, scale);
      assert.equal(readDecimal(canonical, {}), canonical);
      const variants = [`${canonical}${canonical.includes('.') ? '0' : '.0'}`, `+${canonical}`, `${canonical}e0`, `${canonical}.`];
      if (!canonical.startsWith('-')) variants.push(`0${canonical}`);
      if (canonical !== '0') variants.push(canonical.startsWith('-') ? `-0${canonical.slice(1)}` : `00${canonical}`);
      else variants.push('-0');
      for (const v of variants) rejects(() => readDecimal(v, {}), 'invalid_decimal', v);
    }),
  );
});

test('decimal: the sheet examples and precision/scale limits', () => {
  for (const s of ['1.2300', '01.5', '.5', '5.', '1e2', '-0', '+1', '123e-2', '0.01230e2', '-0.0', '0.0']) {
    rejects(() => readDecimal(s, {}), 'invalid_decimal', s);
  }
  assert.equal(readDecimal('999.99', { precision: 5, scale: 2 }), '999.99');
  assert.equal(readDecimal('-0.01', { precision: 5, scale: 2 }), '-0.01');
  rejects(() => readDecimal('1000', { precision: 5, scale: 2 }), 'decimal_precision');
  rejects(() => readDecimal('1.234', { precision: 5, scale: 2 }), 'decimal_scale');
  assert.equal(readDecimal('0.5', { precision: 1, scale: 1 }), '0.5');
  rejects(() => readDecimal('1', { precision: 1, scale: 1 }), 'decimal_precision');
  rejects(() => readDecimal(1.5, {}), 'wrong_json_type');
});

test('float: canonical text round-trips; other spellings of the same value are refused', () => {
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (n) => {
      if (Object.is(n, -0)) return true;
      const canonical = String(n);
      assert.equal(Object.is(readFloat(raw(canonical)), n), true);
      const variants = [canonical.includes('e') ? canonical.replace('e+', 'e').replace('e', 'E') : `${canonical}${canonical.includes('.') ? '0' : '.0'}`];
      if (!canonical.includes('e')) variants.push(`${canonical}e0`);
      for (const v of variants) {
        if (v !== canonical) rejects(() => readFloat(raw(v)), 'invalid_float', v);
      }
      return true;
    }),
  );
});

test('float: the sheet negatives', () => {
  for (const s of ['-0', '1.0', '1e21', '0.10', '1E+21', '-0.0']) rejects(() => readFloat(raw(s)), 'invalid_float', s);
  assert.equal(readFloat(raw('1e+21')), 1e21);
  rejects(() => readFloat(raw('1e400')), 'float_nonfinite');
  rejects(() => readFloat(raw('-1e400')), 'float_nonfinite');
  rejects(() => readFloat(Number.NaN), 'float_nonfinite');
  rejects(() => readFloat(-0), 'invalid_float');
  rejects(() => readFloat('0.1'), 'wrong_json_type');
});

test('datetime: canonical text round-trips; offsets, other precisions and leap seconds are refused', () => {
  const instant = fc.date({ min: new Date('0000-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true });
  fc.assert(
    fc.property(instant, fc.integer({ min: 0, max: 999 }), (d, micros) => {
      const iso = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
      const canonical = `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}Z`;
      assert.equal(readDatetime(canonical), canonical);
      const base = canonical.slice(0, 19);
      for (const v of [iso, `${base}Z`, `${canonical.slice(0, -1)}+00:00`, `${canonical.slice(0, -1)}0Z`, canonical.replace('T', ' '), canonical.toLowerCase()]) {
        rejects(() => readDatetime(v), 'invalid_datetime', v);
      }
    }),
  );
});

test('datetime and date: the sheet negatives and calendar rules', () => {
  for (const s of ['2024-02-29T12:34:56Z', '2024-02-29T12:34:56.123456+00:00', '2024-02-30T00:00:00.000000Z', '2024-06-30T23:59:60.000000Z', '2023-02-29T00:00:00.000000Z', '2024-02-29T24:00:00.000000Z']) {
    rejects(() => readDatetime(s), 'invalid_datetime', s);
  }
  assert.equal(readDate('2024-02-29'), '2024-02-29');
  assert.equal(readDate('2000-02-29'), '2000-02-29');
  assert.equal(readDate('0000-02-29'), '0000-02-29');
  for (const s of ['1900-02-29', '2023-02-29', '2024-04-31', '2024-00-10', '2024-13-01', '2024-1-01', '10000-01-01', '2024-02-29Z']) {
    rejects(() => readDate(s), 'invalid_date', s);
  }
});

test('time: exactly six fraction digits, no zone, no leap second, no hour 24', () => {
  assert.equal(readTime('00:00:00.000000'), '00:00:00.000000');
  assert.equal(readTime('23:59:59.999999'), '23:59:59.999999');
  for (const s of ['24:00:00.000000', '23:59:60.000000', '12:00:00.000', '12:00:00', '12:00:00.000000Z', '12:00:00.000000+01:00', '1:00:00.000000']) {
    rejects(() => readTime(s), 'invalid_time', s);
  }
});

test('bytes: unpadded canonical base64url only', () => {
  assert.deepEqual([...readBytes('AQID')], [1, 2, 3]);
  assert.deepEqual([...readBytes('')], []);
  for (const s of ['AQI=', 'AQ+/', 'AR', 'A', 'AQ==', 'AQ I']) rejects(() => readBytes(s), 'invalid_bytes', s);
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 40 }), (b) => {
      const text = Buffer.from(b).toString('base64url');
      assert.deepEqual([...readBytes(text)], [...b]);
    }),
  );
});

test('string: any well-formed text, unnormalized; lone surrogates refused', () => {
  assert.equal(readString('e\u0301'), 'e\u0301');
  assert.notEqual(readString('e\u0301'), readString('\u00e9'));
  rejects(() => readString('\ud800'), 'invalid_string');
  rejects(() => readString('x\udfff'), 'invalid_string');
  rejects(() => readString(raw('1')), 'wrong_json_type');
});

test('json: canonical I-JSON text only', () => {
  assert.equal(readJson('{"a":1,"b":[true,null]}'), '{"a":1,"b":[true,null]}');
  assert.equal(readJson('null'), 'null');
  const cases: [string, CodecErrorCode][] = [
    ['{"b":1,"a":2}', 'json_noncanonical'],
    ['{"a":1.0}', 'json_noncanonical'],
    ['{"a":1e0}', 'json_noncanonical'],
    [' 1', 'json_noncanonical'],
    ['"\\u0041"', 'json_noncanonical'],
    ['{"a":1,"a":1}', 'json_duplicate_member'],
    ['{"a":1', 'json_syntax'],
    ['9007199254740992', 'json_unsafe_number'],
    ['-9007199254740992', 'json_unsafe_number'],
    ['1e+300', 'json_unsafe_number'],
    ['"\\ud800"', 'invalid_json'],
    ['"\ufdd0"', 'invalid_json'],
    ['"\u{1FFFE}"', 'invalid_json'],
    ['{"\uffff":1}', 'invalid_json'],
    ['1e400', 'invalid_json'],
    [`${'['.repeat(128)}${']'.repeat(128)}`, 'json_too_deep'],
  ];
  for (const [text, code] of cases) rejects(() => readJson(text), code, text);
  rejects(() => readJson(raw('1')), 'wrong_json_type');
});

/** JSON values without integers beyond 2^53 - 1, which I-JSON refuses. */
const safeJson = fc.jsonValue({ maxDepth: 4 }).filter((v) => !JSON.stringify(v).match(/\d{16,}|e\+/));

test('json: a canonical text is accepted unchanged; an indented one is refused', () => {
  fc.assert(
    fc.property(safeJson, (v) => {
      const canonical = canonicalJson(v);
      assert.equal(readJson(canonical), canonical);
      const indented = JSON.stringify(v, null, 1);
      if (indented !== canonical) rejects(() => readJson(indented), 'json_noncanonical', indented);
    }),
  );
});

test('null: presence depends on the column, never on the value', () => {
  assert.deepEqual(readPortable({ type: 'json' }, null), { type: 'json', value: null });
  assert.deepEqual(readPortable({ type: 'json' }, 'null'), { type: 'json', value: 'null' });
  rejects(() => readPortable({ type: 'string', nullable: false }, null), 'null_not_allowed');
  rejects(() => readPortable({ type: 'int' }, undefined), 'wrong_json_type');
  rejects(() => readPortable({ type: 'int', precision: 3, scale: 1 }, raw('1')), 'invalid_manifest');
  rejects(() => readPortable({ type: 'decimal', precision: 3 }, '1'), 'invalid_manifest');
  rejects(() => readPortable({ type: 'decimal', precision: 2, scale: 3 }, '1'), 'invalid_manifest');
});
