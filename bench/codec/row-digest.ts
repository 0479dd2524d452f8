/**
 * Row-digest throughput for a 10-column row of mixed portable types, against
 * plain SHA-256 over the same number of octets, both measured in this run.
 * Timed is `rowDigest`: the row validated, encoded into its preimage and
 * hashed, the digest returned (what the server does to each row it serves or
 * stores). `digestRow` also copies the identity and body out, for callers
 * that keep them.
 *
 *   node bench/codec/row-digest.ts [rowsPerRound]
 *
 * Each side warms up once, then the two run in alternating rounds; the median
 * round is reported, and the ratio is the median of the paired rounds' ratios. The ratio shows what validation and canonical encoding cost on
 * top of hashing alone. No storage is involved.
 */
import { hash } from 'node:crypto';
import { digestRow, parseJson, readTableShape, rowDigest } from '../../harness/codec/index.ts';
import { atLeast, fmt, printResult } from '../lib/report.ts';

const ROUNDS = 9;
const rowsPerRound = Number(process.argv[2] ?? 20_000);
if (!Number.isSafeInteger(rowsPerRound) || rowsPerRound < 1) {
  console.error('usage: node bench/codec/row-digest.ts [rowsPerRound]');
  process.exit(2);
}

const SCHEMA_HASH = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
const table = readTableShape({
  table_id: 'tbl_bench',
  primary_key_field_id: 'fld_id',
  fields: [
    { field_id: 'fld_id', type: 'int64' },
    { field_id: 'fld_name', type: 'string' },
    { field_id: 'fld_qty', type: 'int' },
    { field_id: 'fld_price', type: 'decimal', precision: 12, scale: 2 },
    { field_id: 'fld_ratio', type: 'float' },
    { field_id: 'fld_active', type: 'boolean' },
    { field_id: 'fld_updated', type: 'datetime' },
    { field_id: 'fld_day', type: 'date' },
    { field_id: 'fld_meta', type: 'json' },
    { field_id: 'fld_blob', type: 'bytes', nullable: true },
  ],
});

// Rows as a wire reader delivers them (numbers keep their text), varied so no result can be cached.
const rows = Array.from({ length: 256 }, (_, i) =>
  parseJson(
    JSON.stringify({
      fld_id: String(1_000_000 + i),
      fld_name: `item number ${i} — ünïcode`,
      fld_qty: i * 7,
      fld_price: `${i}.25`,
      fld_ratio: i / 3,
      fld_active: i % 2 === 0,
      fld_updated: '2024-02-29T12:34:56.123456Z',
      fld_day: '2024-02-29',
      fld_meta: `{"k":${i},"tags":["a","b"]}`,
      fld_blob: i % 5 === 0 ? null : 'AQIDBAUGBwg',
    }),
  ),
);

let sink = 0;
const preimageOctets = rows.map((row) => {
  const r = digestRow({ schemaHash: SCHEMA_HASH, table, row, serverVersion: 'sv-000001' });
  return 25 + 32 + 8 + r.identity.length + 8 + r.body.length + 8 + 'sv-000001'.length;
});
const meanPreimage = preimageOctets.reduce((a, b) => a + b, 0) / preimageOctets.length;

function timeRound(fn: (n: number) => void): number {
  const start = process.hrtime.bigint();
  fn(rowsPerRound);
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

/**
 * Rounds of the two sides alternate, so that load from other processes on a
 * shared machine falls on both alike; each side's rate is its median round,
 * and the ratio is the median of the paired rounds' ratios.
 */
function measurePaired(ours: (n: number) => void, baseline: (n: number) => void): { ourRate: number; baselineRate: number; ratio: number } {
  timeRound(ours);
  timeRound(baseline);
  const ourRounds: number[] = [];
  const baselineRounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    ourRounds.push(timeRound(ours));
    baselineRounds.push(timeRound(baseline));
  }
  const ratio = median(ourRounds.map((t, r) => (baselineRounds[r] as number) / t));
  return { ourRate: rowsPerRound / median(ourRounds), baselineRate: rowsPerRound / median(baselineRounds), ratio };
}

const digestRows = (n: number): void => {
  for (let i = 0; i < n; i++) {
    const digest = rowDigest({ schemaHash: SCHEMA_HASH, table, row: rows[i & 255], serverVersion: 'sv-000001' });
    sink ^= digest[0] ?? 0;
  }
};

// The same number of octets per item, each hashed by one one-shot SHA-256 call, as a row digest hashes its preimage (decision 400).
const buffers = preimageOctets.map((len, i) => Buffer.alloc(len, i));
const plainSha = (n: number): void => {
  for (let i = 0; i < n; i++) {
    const d = hash('sha256', buffers[i & 255] ?? Buffer.alloc(0), 'buffer');
    sink ^= d[0] ?? 0;
  }
};

const { ourRate: rowRate, baselineRate: shaRate, ratio } = measurePaired(digestRows, plainSha);
console.log(`row digest (10 mixed columns, mean preimage ${meanPreimage.toFixed(0)} octets): ${Math.round(rowRate).toLocaleString('en-US')} rows/s`);
console.log(`plain SHA-256 over the same octets: ${Math.round(shaRate).toLocaleString('en-US')} hashes/s`);
console.log(`ratio (row digest / plain SHA-256): ${ratio.toFixed(3)}  [median of ${ROUNDS} paired rounds of ${rowsPerRound}, alternating, after one warm-up round each]`);
printResult(atLeast('row digest', `${fmt(rowRate)} rows/s`, `${fmt(shaRate)} hashes/s`, ratio, 0.3));
if (sink === -1) console.log('unreachable');
