import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  CodecError,
  type CodecErrorCode,
  decodeRowIdentity,
  digestRow,
  parseJson,
  parseRowText,
  readTableShape,
  rowIdentityFromWire,
  toHex,
} from '../../harness/codec/index.ts';
import { DIGESTS, R1_TABLE, R3_ROW, R3_TABLE, r1Row, SCHEMA_HASH } from './fixtures.ts';

const rejects = (fn: () => unknown, code: CodecErrorCode) => assert.throws(fn, (e: unknown) => e instanceof CodecError && e.code === code, code);

test('R3: identity, body and digest match the sheet preimage', () => {
  const r = digestRow({ schemaHash: SCHEMA_HASH, table: R3_TABLE, row: R3_ROW, pk: 7, serverVersion: '1' });
  assert.equal(r.identity.length, 66);
  assert.equal(r.body.length, 55);
  assert.equal(
    toHex(r.identity),
    '73796e6368726f3a76333a726f772d6964656e746974793a763100000000000000000c74626c5f636f756e746572730000000000000005666c645f6e020100000007',
  );
  assert.equal(toHex(r.body), '000000020000000000000009666c645f6c6162656c01010000000000000005736576656e0000000000000005666c645f6e020100000007');
  assert.equal(toHex(r.digest), DIGESTS.r3);
});

test('R1 (every type), R1 with another version, and R2 match the sheet', () => {
  const base = { schemaHash: SCHEMA_HASH, table: R1_TABLE };
  assert.equal(toHex(digestRow({ ...base, row: r1Row('rec-1'), pk: 'rec-1', serverVersion: 'sv-0001' }).digest), DIGESTS.r1);
  assert.equal(toHex(digestRow({ ...base, row: r1Row('rec-1'), serverVersion: 'sv-0002' }).digest), DIGESTS.r1v2);
  assert.equal(toHex(digestRow({ ...base, row: r1Row('rec-2'), pk: 'rec-2', serverVersion: 'sv-0002' }).digest), DIGESTS.r2);
});

test('R1 body follows bytewise field order, and the whole preimage is 574 octets', () => {
  assert.deepEqual(R1_TABLE.bodyOrder, [
    'fld_big', 'fld_bool', 'fld_bytes', 'fld_date', 'fld_dec', 'fld_float', 'fld_id', 'fld_int', 'fld_json', 'fld_note', 'fld_text', 'fld_time', 'fld_ts',
  ]);
  const r = digestRow({ schemaHash: SCHEMA_HASH, table: R1_TABLE, row: r1Row('rec-1'), serverVersion: 'sv-0001' });
  const preimage = 25 + 32 + 8 + r.identity.length + 8 + r.body.length + 8 + 'sv-0001'.length;
  assert.equal(preimage, 574);
});

test('row identity round-trips through the structural reader', () => {
  const id = rowIdentityFromWire('tbl', 'k', 'int64', '-5');
  assert.deepEqual(decodeRowIdentity(id), { tableId: 'tbl', pkFieldId: 'k', pkType: 'int64', pk: -5n });
  const s = rowIdentityFromWire('tbl', 'k', 'string', 'é');
  assert.deepEqual(decodeRowIdentity(s), { tableId: 'tbl', pkFieldId: 'k', pkType: 'string', pk: 'é' });
});

test('every bound member changes the digest', () => {
  const r3 = (over: Partial<Parameters<typeof digestRow>[0]> = {}) =>
    toHex(digestRow({ schemaHash: SCHEMA_HASH, table: R3_TABLE, row: R3_ROW, serverVersion: '1', ...over }).digest);
  const shape = (tableId: string, pk: string, pkType: string, labelType: string) =>
    readTableShape({ table_id: tableId, primary_key_field_id: pk, fields: [{ field_id: pk, type: pkType }, { field_id: 'fld_label', type: labelType, nullable: true }] });
  const mutants = [
    r3({ schemaHash: `${SCHEMA_HASH.slice(0, -2)}1e` }),
    r3({ table: shape('tbl_counterz', 'fld_n', 'int', 'string') }),
    r3({ table: shape('tbl_counters', 'fld_m', 'int', 'string'), row: parseJson('{"fld_m":7,"fld_label":"seven"}') }),
    r3({ table: shape('tbl_counters', 'fld_n', 'int64', 'string'), row: parseJson('{"fld_n":"7","fld_label":"seven"}') }),
    r3({ row: parseJson('{"fld_n":8,"fld_label":"seven"}') }),
    r3({ table: shape('tbl_counters', 'fld_n', 'int', 'json'), row: parseJson('{"fld_n":7,"fld_label":"\\"seven\\""}') }),
    r3({ row: parseJson('{"fld_n":7,"fld_label":null}') }),
    r3({ row: parseJson('{"fld_n":7,"fld_label":"seveN"}') }),
    r3({ serverVersion: '2' }),
  ];
  assert.equal(new Set([r3(), ...mutants]).size, mutants.length + 1);
  assert.equal(r3(), DIGESTS.r3);
});

test('any change to a string value or the version changes the digest (property)', () => {
  fc.assert(
    fc.property(fc.string(), fc.string(), (a, b) => {
      fc.pre(a !== b);
      const d = (label: string) => toHex(digestRow({ schemaHash: SCHEMA_HASH, table: R3_TABLE, row: { fld_n: 7, fld_label: label }, serverVersion: '1' }).digest);
      return d(a) !== d(b);
    }),
  );
});

test('rows with an extra, missing or repeated field, a wrong key, or a wrong type are refused', () => {
  const go = (row: unknown, pk?: unknown) => digestRow({ schemaHash: SCHEMA_HASH, table: R3_TABLE, row, pk, serverVersion: '1' });
  rejects(() => go(parseJson('{"fld_n":7,"fld_label":"seven","x":1}')), 'unknown_field');
  rejects(() => go(parseJson('{"fld_n":7}')), 'missing_field');
  rejects(() => go(parseRowText('{"fld_n":7,"fld_label":"a","fld_label":"b"}')), 'duplicate_field');
  rejects(() => go(R3_ROW, 8), 'pk_mismatch');
  rejects(() => go(R3_ROW, '7'), 'wrong_json_type');
  rejects(() => go(parseJson('{"fld_n":"7","fld_label":"seven"}')), 'wrong_json_type');
  rejects(() => go(parseJson('{"fld_n":null,"fld_label":"seven"}')), 'null_not_allowed');
  rejects(() => go(parseJson('[7,"seven"]')), 'wrong_json_type');
});

test('schema hash, server_version and table shape are validated', () => {
  const go = (over: Partial<Parameters<typeof digestRow>[0]>) => digestRow({ schemaHash: SCHEMA_HASH, table: R3_TABLE, row: R3_ROW, serverVersion: '1', ...over });
  rejects(() => go({ schemaHash: SCHEMA_HASH.toUpperCase() }), 'invalid_schema_hash');
  rejects(() => go({ schemaHash: SCHEMA_HASH.slice(1) }), 'invalid_schema_hash');
  rejects(() => go({ schemaHash: `${SCHEMA_HASH}0` }), 'invalid_schema_hash');
  for (const v of ['', 'a"b', 'a\\b', 'x'.repeat(65), 'caf\u00e9', 'tab\there', '\u007f']) rejects(() => go({ serverVersion: v }), 'invalid_server_version');
  assert.doesNotThrow(() => go({ serverVersion: ' '.repeat(64) }));
  const table = (fields: unknown[], pk = 'k') => () => readTableShape({ table_id: 't', primary_key_field_id: pk, fields });
  rejects(table([{ field_id: 'k', type: 'text' }]), 'unknown_type');
  rejects(table([{ field_id: 'k', type: 'decimal', precision: 5, scale: 0 }]), 'invalid_pk_type');
  rejects(table([{ field_id: 'k', type: 'float' }]), 'invalid_pk_type');
  rejects(table([{ field_id: 'k', type: 'int', nullable: true }]), 'invalid_pk_type');
  rejects(table([{ field_id: 'k', type: 'int' }], 'missing'), 'invalid_manifest');
  rejects(table([{ field_id: 'k', type: 'int' }, { field_id: 'k', type: 'int' }]), 'duplicate_field');
  rejects(table([{ field_id: 'k', type: 'int' }, { field_id: 'd', type: 'decimal' }]), 'invalid_manifest');
  rejects(table([{ field_id: 'k', type: 'int', precision: 3, scale: 1 }]), 'invalid_manifest');
  rejects(table([{ field_id: '', type: 'int' }], ''), 'invalid_identifier');
});
