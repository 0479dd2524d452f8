/**
 * Shortcuts inside the one-pass row digest (decisions 381 and 402) against the
 * plain reading they skip: a short int64 text written without a BigInt, a float
 * spelling checked without parsing it twice, date and time texts checked by
 * position, and short text encoded to UTF-8 (or decoded from base64url) in a
 * loop. Same octets, same refusals.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ByteWriter } from '../../harness/codec/byte-writer.ts';
import {
  CodecError,
  digestRow,
  encodeRowBody,
  encodeRowIdentity,
  isCanonicalNumberText,
  parseJson,
  RawNumber,
  readFloat,
  readRow,
  rowDigestFromParts,
  schemaHashRaw,
  toHex,
} from '../../harness/codec/index.ts';
import { isDatetimeText, isDateText, isTimeText, shortInt64 } from '../../harness/codec/wire-values.ts';
import { R1_TABLE, r1Row, SCHEMA_HASH } from './fixtures.ts';

function outcome(fn: () => { identity: Uint8Array; body: Uint8Array; digest: Uint8Array }): string {
  try {
    const r = fn();
    return `ok ${toHex(r.identity)} ${toHex(r.body)} ${toHex(r.digest)}`;
  } catch (e) {
    if (e instanceof CodecError) return `refused ${e.code} at ${e.path}: ${e.message}`;
    throw e;
  }
}

/** readRow, then the octets from the general encoders (BigInt for every int64). */
function general(row: unknown) {
  const { values, pk } = readRow(R1_TABLE, row, undefined);
  const identity = encodeRowIdentity(R1_TABLE.tableId, R1_TABLE.pkFieldId, pk);
  const body = encodeRowBody(R1_TABLE, values);
  return { identity, body, digest: rowDigestFromParts(schemaHashRaw(SCHEMA_HASH), identity, body, 'sv-1') };
}

test('an int64 text gives the same octets, or the same refusal, with or without the short path (property)', () => {
  const near = (edge: bigint) => fc.bigInt({ min: edge - 1000n, max: edge + 1000n });
  const texts = fc.oneof(
    fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String),
    fc.oneof(near(10n ** 15n), near(-(10n ** 15n)), near(2n ** 53n), near(-(2n ** 53n)), near(2n ** 32n), near(-(2n ** 32n)), near(0n)).map(String),
    fc.constantFrom('-0', '00', '01', '+1', ' 1', '1 ', '1e3', '1.0', '', '-', '999999999999999', '-999999999999999', '1000000000000000', '9223372036854775807', '-9223372036854775808', '9223372036854775808'),
  );
  fc.assert(
    fc.property(texts, (text) => {
      const row = { ...r1Row('rec-1'), fld_big: text };
      return outcome(() => digestRow({ schemaHash: SCHEMA_HASH, table: R1_TABLE, row, serverVersion: 'sv-1' })) === outcome(() => general(row));
    }),
    { numRuns: 1000 },
  );
});

test('shortInt64 takes only canonical texts of at most 15 digits, and writes them as i64 of their BigInt does', () => {
  for (const [text, expected] of [
    ['999999999999999', 999999999999999],
    ['-999999999999999', -999999999999999],
    ['0', 0],
    ['1000000000000000', undefined],
    ['-0', undefined],
    ['01', undefined],
    [7, undefined],
  ] as const) {
    assert.equal(shortInt64(text), expected, String(text));
  }
  fc.assert(
    fc.property(fc.integer({ min: -(10 ** 15) + 1, max: 10 ** 15 - 1 }), (n) => {
      const a = new ByteWriter(16);
      const b = new ByteWriter(16);
      a.i64FromSafeInteger(n);
      b.i64(BigInt(n));
      return toHex(a.copy()) === toHex(b.copy());
    }),
  );
});

test('a float spelling is accepted exactly when it is the canonical text of a finite binary64 value (property)', () => {
  const spellings = fc.oneof(
    fc.double().chain((d) => fc.constantFrom(String(d), d.toExponential(), d.toPrecision(17), `${d}0`, d.toFixed(3))),
    fc.constantFrom('1.0', '1e21', '1E21', '1e+21', '-0', '0', '1e-7', '0.0000001', '1e400', '-1e400', '5e-324', '2e-324', '123456789012345680000'),
  );
  fc.assert(
    fc.property(spellings, (text) => {
      let parsed: unknown;
      try {
        parsed = parseJson(text);
      } catch {
        return true; // not a JSON number at all (NaN, Infinity): the reader never gets as far as readFloat
      }
      if (!(parsed instanceof RawNumber)) return true;
      let accepted: boolean;
      try {
        readFloat(parsed);
        accepted = true;
      } catch (e) {
        if (!(e instanceof CodecError)) throw e;
        accepted = false;
      }
      return accepted === (Number.isFinite(Number(text)) && isCanonicalNumberText(text));
    }),
    { numRuns: 2000 },
  );
});

// The patterns the date and time readers used before they checked texts position by position.
const DATE_PATTERN = /^([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$/;
const TIME_PATTERN = /^(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}$/;
const DATETIME_PATTERN = /^([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}Z$/;

test('the positional date, time and datetime checks accept exactly what their patterns match (property)', () => {
  // Texts near the valid shapes: each character drawn from digits, the separators and a few others.
  const near = (template: string) =>
    fc
      .array(fc.constantFrom(...'0123456789-:.TZ tz/0'), { minLength: template.length - 1, maxLength: template.length + 1 })
      .chain((chars) => fc.constantFrom(chars.join(''), template.replace(/./g, (c, k) => (/[0-9]/.test(c) ? (chars[k] ?? c) : c))));
  const cases: [string, (s: string) => boolean, RegExp][] = [
    ['2024-02-29', isDateText, DATE_PATTERN],
    ['23:59:59.123456', isTimeText, TIME_PATTERN],
    ['2024-02-29T23:59:59.123456Z', isDatetimeText, DATETIME_PATTERN],
  ];
  for (const [template, check, pattern] of cases) {
    fc.assert(
      fc.property(near(template), (s) => check(s) === pattern.test(s)),
      { numRuns: 3000 },
    );
    for (const s of [template, `${template}\n`, ` ${template}`, '', template.replace('2', '\u0662'), template.toLowerCase()]) {
      assert.equal(check(s), pattern.test(s), JSON.stringify(s));
    }
  }
  for (const [s, expected] of [
    ['0000-01-01', true],
    ['9999-12-31', true],
    ['2024-00-10', false],
    ['2024-13-10', false],
    ['2024-01-00', false],
    ['2024-01-32', false],
    ['00:00:00.000000', true],
    ['24:00:00.000000', false],
    ['23:60:00.000000', false],
    ['23:59:60.000000', false],
  ] as const) {
    assert.equal(s.length === 10 ? isDateText(s) : isTimeText(s), expected, s);
  }
});

test('a blob of text writes the same octets as the UTF-8 encoder, short or long, with or without surrogates (property)', () => {
  const texts = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 80 }),
    fc.string({ unit: 'binary', maxLength: 80 }),
    fc.string({ unit: fc.constantFrom('a', '\u00e9', '\u20ac', '\u{1f600}', '\ud800', '\udc00', '\u07ff', '\u0800', '\uffff'), maxLength: 70 }),
  );
  fc.assert(
    fc.property(texts, (s) => {
      const w = new ByteWriter(8);
      w.utf8Blob(s);
      const octets = Buffer.from(s, 'utf8');
      const expected = Buffer.concat([Buffer.from(octets.length.toString(16).padStart(16, '0'), 'hex'), octets]);
      return toHex(w.copy()) === toHex(expected);
    }),
    { numRuns: 3000 },
  );
});

test('a blob of base64url text writes the octets the decoder gives, short or long (property)', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 90 }), (octets) => {
      const text = Buffer.from(octets).toString('base64url');
      const w = new ByteWriter(8);
      w.base64urlBlob(text);
      const expected = Buffer.concat([Buffer.from(octets.length.toString(16).padStart(16, '0'), 'hex'), octets]);
      return toHex(w.copy()) === toHex(expected);
    }),
    { numRuns: 3000 },
  );
});
