/**
 * Pulls of the reference server, on fresh databases of --small (1,000) and
 * --large (100,000) rows over four scopes, captured before timing:
 * - drain: the large size pulled incrementally in pages of 1,000, in rows per
 *   second, against one SELECT of the same rows from the table pull reads
 *   (synchro.scope_effects), built into the same change objects with the
 *   same checksums and serialized to the same canonical JSON in pages of
 *   1,000, in the same run. --drains clients, connected and rebuilt before
 *   the rows are loaded, each drain the same rows from the same start; each
 *   drain is paired with one timed SELECT, the pair's order turning each
 *   round, and the goal is the median of the pairs' ratios (one drain and one
 *   SELECT swung the ratio by a quarter between runs of the same code). Only
 *   the first drain's terminal page computes the four scope checksums; the
 *   later ones find them cached by scope and content version, as any client's
 *   would (about 1% of a drain);
 * - steady pull: with nothing new, --steady terminal pulls (every scope's
 *   checksum included) at each size, and as many GET /ready round trips on
 *   the large size's server, timed in alternating rounds of 20 with both
 *   servers up; each ratio is the median of the rounds' ratios.
 * Loopback only; bounded page counts.
 *
 *   node bench/pull/main.ts [--small 1000] [--large 100000] [--steady 200] [--drains 5] [--durable]
 */
import { parseArgs } from 'node:util';
import { canonicalJson, checksumObject } from '../../harness/codec/index.ts';
import type { Cluster } from '../../reference/server/db/index.ts';
import { atLeast, atMost, durabilityLine, fmt, median, positiveInteger, printResult } from '../lib/report.ts';
import { type Bench, type BenchClient, benchCluster, drain, insertRows, pullBody, SCOPES, startBench } from './setup.ts';

const PAGE = 1000;

/** Warm-up rounds, so compilation and connection setup of a server do not count. */
async function warmUp(fn: () => Promise<void>, count = 20): Promise<void> {
  for (let i = 0; i < count; i++) await fn();
}

async function timed(count: number, fn: () => Promise<void>, warm = 20): Promise<number[]> {
  await warmUp(fn, Math.min(warm, count));
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

/** The drained rows read with one SELECT and serialized as pull serializes them; seconds. */
async function selectAndSerialize(b: Bench, expected: number, table: { id: string; pkField: string }): Promise<number> {
  const t0 = performance.now();
  const { rows } = await b.sql.query<{ scope_id: string; pk_text: string; op: string; server_version: string; row_wire: Record<string, unknown> | null; row_digest: Buffer | null }>(
    `SELECT scope_id, pk_text, op, server_version, row_wire, row_digest FROM synchro.scope_effects
      WHERE scope_id = ANY ($1::text[]) AND stream_generation = (SELECT stream_generation FROM synchro.wal_progress)
      ORDER BY commit_lsn, event_ordinal, effect_ordinal, scope_id COLLATE "C"`,
    [SCOPES],
  );
  let octets = 0;
  for (let at = 0; at < rows.length; at += PAGE) {
    const changes = rows.slice(at, at + PAGE).map((r) => ({
      scope: r.scope_id,
      table: table.id,
      op: r.op,
      pk: { [table.pkField]: r.pk_text },
      server_version: r.server_version,
      ...(r.row_wire === null || r.row_digest === null ? {} : { row: r.row_wire, row_checksum: checksumObject(r.row_digest) }),
    }));
    octets += canonicalJson({ changes }).length;
  }
  const seconds = (performance.now() - t0) / 1000;
  if (rows.length !== expected || octets === 0) throw new Error(`the SELECT saw ${rows.length} rows, not ${expected}`);
  return seconds;
}

/** One size's server after its drain, ready for steady pulls. */
interface Drained {
  rows: number;
  b: Bench;
  cursors: Record<string, string>;
}

async function loadAndDrain(cluster: Cluster, rows: number, large: number, drains: number): Promise<Drained> {
  const b = await startBench(cluster, `bench_pull_${rows}`);
  try {
    return await drained(b, rows, large, drains);
  } catch (e) {
    await b.close();
    throw e;
  }
}

/** One client's drain of every row loaded, in seconds. */
async function timedDrain(b: Bench, client: BenchClient, rows: number): Promise<number> {
  const t0 = performance.now();
  const delivered = await drain(b, client.cursors, Math.ceil(rows / PAGE) + 10, PAGE, client.envelope);
  const seconds = (performance.now() - t0) / 1000;
  if (delivered !== rows) throw new Error(`the drain of ${client.envelope.client_id} delivered ${delivered} of ${rows} rows`);
  return seconds;
}

async function drained(b: Bench, rows: number, large: number, drains: number): Promise<Drained> {
  // Every client starts before the rows exist, so each drain is the same work from the same start.
  const clients: BenchClient[] = [{ envelope: b.envelope, cursors: { ...b.cursors } }];
  for (let k = 1; k < drains; k++) clients.push(await b.connectClient(`bench-${k + 1}`));
  const load0 = performance.now();
  await insertRows(b.sql, 1, rows);
  await b.server.capture?.catchUp(1_800_000);
  console.log(`setup (not timed below): ${fmt(rows)} rows inserted and captured in ${((performance.now() - load0) / 1000).toFixed(1)} s`);
  const first = await b.sql.query<{ table_id: string; pk_field_id: string }>("SELECT table_id, pk_field_id FROM synchro.relations WHERE physical_relation = 'items'");
  const table = { id: first.rows[0]?.table_id as string, pkField: first.rows[0]?.pk_field_id as string };
  const pairs: Array<{ pull: number; select: number }> = [];
  for (const [k, client] of clients.entries()) {
    // The pair's order turns each round, so neither side always runs first.
    const pair = { pull: 0, select: 0 };
    if (k % 2 === 1) pair.select = await selectAndSerialize(b, rows, table);
    pair.pull = await timedDrain(b, client, rows);
    if (k % 2 === 0) pair.select = await selectAndSerialize(b, rows, table);
    pairs.push(pair);
    console.log(`pull drain ${k + 1} of ${drains} at ${fmt(rows)} rows: ${pair.pull.toFixed(2)} s = ${fmt(rows / pair.pull)} rows/s; SELECT + same JSON: ${pair.select.toFixed(3)} s = ${fmt(rows / pair.select)} rows/s; ratio ${(pair.select / pair.pull).toFixed(3)}`);
  }
  if (rows === large) {
    const pullRate = median(pairs.map((p) => rows / p.pull));
    const selectRate = median(pairs.map((p) => rows / p.select));
    printResult(atLeast(`pull drain, ${fmt(rows)} rows`, `${fmt(pullRate)} rows/s`, `${fmt(selectRate)} rows/s`, median(pairs.map((p) => p.select / p.pull)), 0.25));
  }
  return { rows, b, cursors: (clients[0] as BenchClient).cursors };
}

async function steadyPull({ b, cursors }: Drained): Promise<void> {
  const r = await b.post('/sync/pull', pullBody(b, cursors, PAGE));
  if (r.status !== 200 || (r.json.changes as unknown[]).length !== 0 || r.json.checksums === undefined) throw new Error(`a steady pull was not an empty terminal page: ${r.status}`);
}

async function ready({ b }: Drained): Promise<void> {
  const res = await fetch(`${b.server.url}/ready`);
  await res.text();
  if (res.status !== 200) throw new Error(`GET /ready answered ${res.status}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { small: { type: 'string', default: '1000' }, large: { type: 'string', default: '100000' }, steady: { type: 'string', default: '200' }, drains: { type: 'string', default: '5' }, durable: { type: 'boolean', default: false } },
  });
  const small = positiveInteger('small', values.small, 1_000_000);
  const large = positiveInteger('large', values.large, 1_000_000);
  const steady = positiveInteger('steady', values.steady, 10_000);
  const drains = positiveInteger('drains', values.drains, 9);
  console.log(durabilityLine(values.durable));
  const cluster = await benchCluster(values.durable);
  const sizes: Drained[] = [];
  try {
    for (const rows of [small, large]) sizes.push(await loadAndDrain(cluster, rows, large, drains));
    const [lo, hi] = sizes as [Drained, Drained];
    // Both servers stay up and the three timings alternate in rounds (the order turning each
    // round), so load from other processes on a shared machine falls on all three alike; each
    // goal is the median of the rounds' ratios.
    for (const fn of [() => steadyPull(lo), () => steadyPull(hi), () => ready(hi)]) await warmUp(fn);
    const perRound = Math.min(steady, 20);
    const rounds = Math.ceil(steady / perRound);
    const all = { lo: [] as number[], hi: [] as number[], ready: [] as number[] };
    const growth: number[] = [];
    const overReady: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const sides = [
        { out: 'lo' as const, fn: () => steadyPull(lo) },
        { out: 'hi' as const, fn: () => steadyPull(hi) },
        { out: 'ready' as const, fn: () => ready(hi) },
      ];
      const ms: Partial<Record<'lo' | 'hi' | 'ready', number>> = {};
      for (let k = 0; k < sides.length; k++) {
        const side = sides[(k + round) % sides.length] as (typeof sides)[number];
        const times = await timed(perRound, side.fn, 0);
        all[side.out].push(...times);
        ms[side.out] = median(times);
      }
      growth.push((ms.hi as number) / (ms.lo as number));
      overReady.push((ms.hi as number) / (ms.ready as number));
    }
    const [loMs, hiMs, readyMs] = [median(all.lo), median(all.hi), median(all.ready)];
    console.log(`steady pull, median over ${rounds * perRound} pulls in ${rounds} alternating rounds: ${loMs.toFixed(2)} ms at ${fmt(small)} rows in scope, ${hiMs.toFixed(2)} ms at ${fmt(large)}; GET /ready median ${readyMs.toFixed(2)} ms`);
    printResult(atMost(`steady pull, ${fmt(large)} vs ${fmt(small)} rows`, `${hiMs.toFixed(2)} ms`, `${loMs.toFixed(2)} ms`, median(growth), 1.5));
    printResult(atMost(`steady pull vs GET /ready, ${fmt(large)} rows`, `${hiMs.toFixed(2)} ms`, `${readyMs.toFixed(2)} ms`, median(overReady), 10));
  } finally {
    for (const { b } of sizes) await b.close();
    await cluster.stop();
  }
}

main().catch((e: unknown) => {
  console.error((e as Error).message);
  process.exit(1);
});
