/** The 005 sheet's computed row vectors R1, R2 and R3 (schema hash octets 0x00..0x1f). */
import { parseJson, readTableShape } from '../../harness/codec/index.ts';

export const SCHEMA_HASH = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';

export const R3_TABLE = readTableShape({
  table_id: 'tbl_counters',
  primary_key_field_id: 'fld_n',
  fields: [
    { field_id: 'fld_n', type: 'int' },
    { field_id: 'fld_label', type: 'string', nullable: true },
  ],
});
export const R3_ROW = parseJson('{"fld_n":7,"fld_label":"seven"}');

export const R1_TABLE = readTableShape({
  table_id: 'tbl_records',
  primary_key_field_id: 'fld_id',
  fields: [
    { field_id: 'fld_id', type: 'string' },
    { field_id: 'fld_text', type: 'string' },
    { field_id: 'fld_int', type: 'int' },
    { field_id: 'fld_big', type: 'int64' },
    { field_id: 'fld_dec', type: 'decimal', precision: 10, scale: 4 },
    { field_id: 'fld_float', type: 'float' },
    { field_id: 'fld_bool', type: 'boolean' },
    { field_id: 'fld_ts', type: 'datetime' },
    { field_id: 'fld_date', type: 'date' },
    { field_id: 'fld_time', type: 'time' },
    { field_id: 'fld_json', type: 'json' },
    { field_id: 'fld_bytes', type: 'bytes' },
    { field_id: 'fld_note', type: 'string', nullable: true },
  ],
});

export function r1Row(id: string): Record<string, unknown> {
  return parseJson(
    `{"fld_id":"${id}","fld_text":"h\\u00e9llo","fld_int":42,"fld_big":"-9223372036854775808","fld_dec":"1.23","fld_float":0.1,"fld_bool":true,"fld_ts":"2024-02-29T12:34:56.123456Z","fld_date":"2024-02-29","fld_time":"23:59:59.000001","fld_json":"{\\"a\\":1,\\"b\\":[true,null]}","fld_bytes":"AQID","fld_note":null}`,
  ) as Record<string, unknown>;
}

export const DIGESTS = {
  r1: '3823aa62cb812db3845afcd542e67bd9f38ea013949568752fc00c6694387a1f',
  r1v2: '4e8cca6ec3ab2f152495dd66377fa31619e5539dd16d7746a9e83c1a60c7b9b0',
  r2: 'e29c68a3d7f6dd88ca9fd01f62904225781b80ff2cae21b2fd85c5bd4831bfcd',
  r3: 'aca227bbc32c4d004ee861c6ae7ce07cd38ff0127f17d9beb74ce479922885cb',
  emptyScope: '09a66150dd7030e96b929ec07cf93400a36b602968c5b611c0646654ceb07e4c',
  scopeR123: '3fbe6807b60254ddb00cf0c3bf46a19cf40d3b643cc1f21faf70bc4a6500ff36',
};
