import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CodecError, checksumNames, checksumObject, parseJson, readChecksumObject } from '../../harness/codec/index.ts';

const DIGEST = '8ff7afb86816c1781e21bbc99b1a89e7117f585f0b79a52e3b3e5143002582f5';
/** A well-formed checksum object, and texts each malformed in one way. */
const GOOD = `{"algorithm":"sha256","version":1,"encoding":"hex","digest":"${DIGEST}"}`;
const MALFORMED = [
  GOOD.replace('"sha256"', '"sha-256"'),
  GOOD.replace('"version":1', '"version":2'),
  GOOD.replace('"version":1', '"version":1.0'),
  GOOD.replace('"version":1', '"version":"1"'),
  GOOD.replace('"hex"', '"base64"'),
  GOOD.replace(DIGEST, DIGEST.toUpperCase()),
  GOOD.replace(DIGEST, DIGEST.slice(1)),
  GOOD.replace(DIGEST, `${DIGEST}0`),
  GOOD.replace(DIGEST, `${DIGEST.slice(1)}g`),
  GOOD.replace('}', ',"extra":true}'),
  GOOD.replace('"encoding":"hex",', ''),
  `"${DIGEST}"`,
  'null',
  `[${GOOD}]`,
];

test('the checksum object has exactly the four members', () => {
  const o = checksumObject(Buffer.from(DIGEST, 'hex'));
  assert.deepEqual(o, { algorithm: 'sha256', version: 1, encoding: 'hex', digest: DIGEST });
  assert.throws(() => checksumObject(new Uint8Array(31)), (e: unknown) => e instanceof CodecError && e.code === 'invalid_digest');
});

test('a received checksum object is read strictly', () => {
  const good = GOOD;
  assert.equal(Buffer.from(readChecksumObject(parseJson(good))).toString('hex'), DIGEST);
  assert.equal(Buffer.from(readChecksumObject(JSON.parse(good))).toString('hex'), DIGEST);
  for (const text of MALFORMED) {
    assert.throws(() => readChecksumObject(parseJson(text)), (e: unknown) => e instanceof CodecError && e.code === 'invalid_checksum_object', text);
  }
});

test('checksumNames refuses what readChecksumObject refuses and otherwise answers as comparing its octets', () => {
  const good = GOOD;
  const other = `${DIGEST.slice(0, 63)}${DIGEST.endsWith('0') ? '1' : '0'}`;
  const texts = [good, good.replace(DIGEST, other), ...MALFORMED];
  for (const digest of [Buffer.from(DIGEST, 'hex'), Buffer.from(other, 'hex')]) {
    for (const text of texts) {
      for (const value of [parseJson(text), JSON.parse(text)]) {
        let expected: boolean | string;
        try {
          expected = Buffer.compare(readChecksumObject(value), digest) === 0;
        } catch (e) {
          expected = (e as CodecError).code;
        }
        let actual: boolean | string;
        try {
          actual = checksumNames(value, digest);
        } catch (e) {
          actual = (e as CodecError).code;
        }
        assert.equal(actual, expected, text);
      }
    }
  }
  assert.throws(() => checksumNames(parseJson(good), new Uint8Array(31)), (e: unknown) => e instanceof CodecError && e.code === 'invalid_digest');
});
