/**
 * Capture of the reference server, at two sizes on fresh databases:
 * - scaling: time per row to materialize --small (10,000) and --large
 *   (100,000) rows committed while the worker was paused, then worked off
 *   from the moment it resumes until everything is acknowledged;
 * - throughput: the large size's capture rate against inserting the same
 *   rows into the same registered source table with the same multi-row
 *   INSERTs (1,000 rows each), measured in the same run;
 * - commit-to-pull-visible: with the large size present and the client
 *   drained, --probes single-row transactions one at a time; for each, the
 *   time from COMMIT returning until an incremental pull returns the row.
 * Loopback only; every wait is bounded.
 *
 *   node bench/capture/main.ts [--small 10000] [--large 100000] [--probes 200] [--durable]
 */
import { parseArgs } from 'node:util';
import { atLeast, atMost, durabilityLine, fmt, positiveInteger, printResult, quantile } from '../lib/report.ts';
import { type Bench, benchCluster, drain, insertRows, probePullVisible, startBench } from '../pull/setup.ts';

/** Seconds to insert `rows` rows with the worker paused, and seconds for the worker to materialize them once resumed. */
async function captureRun(b: Bench, rows: number): Promise<{ insertSeconds: number; captureSeconds: number }> {
  const capture = b.server.capture;
  if (capture === undefined) throw new Error('the bench server has no capture worker');
  await capture.pause();
  const t0 = performance.now();
  await insertRows(b.sql, 1, rows);
  const insertSeconds = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  await capture.resume();
  await capture.catchUp(1_800_000);
  return { insertSeconds, captureSeconds: (performance.now() - t1) / 1000 };
}

async function probeLatency(b: Bench, probes: number): Promise<number[]> {
  const cursors = { ...b.cursors };
  await drain(b, cursors, 10_000);
  const latencies: number[] = [];
  for (let i = 0; i < probes; i++) latencies.push((await probePullVisible(b, cursors, i)).ms);
  return latencies;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { small: { type: 'string', default: '10000' }, large: { type: 'string', default: '100000' }, probes: { type: 'string', default: '200' }, durable: { type: 'boolean', default: false } } });
  const small = positiveInteger('small', values.small, 1_000_000);
  const large = positiveInteger('large', values.large, 1_000_000);
  const probes = positiveInteger('probes', values.probes, 10_000);
  console.log(durabilityLine(values.durable));
  const cluster = await benchCluster(values.durable);
  try {
    const perRow: number[] = [];
    let largeRun: { insertSeconds: number; captureSeconds: number } | undefined;
    let latencies: number[] = [];
    for (const rows of [small, large]) {
      const b = await startBench(cluster, `bench_capture_${rows}`);
      try {
        const run = await captureRun(b, rows);
        perRow.push(run.captureSeconds / rows);
        console.log(
          `capture scaling: ${fmt(rows)} rows in ${run.captureSeconds.toFixed(2)} s = ${((run.captureSeconds / rows) * 1e6).toFixed(1)} µs/row (${fmt(rows / run.captureSeconds)} rows/s); inserting them took ${run.insertSeconds.toFixed(2)} s (${fmt(rows / run.insertSeconds)} rows/s)`,
        );
        if (rows === large) {
          largeRun = run;
          latencies = await probeLatency(b, probes);
        }
      } finally {
        await b.close();
      }
    }
    const [smallPerRow, largePerRow] = perRow as [number, number];
    const run = largeRun as { insertSeconds: number; captureSeconds: number };
    const p50 = quantile(latencies, 0.5);
    const p99 = quantile(latencies, 0.99);
    console.log(`commit-to-pull-visible with ${fmt(large)} rows present, ${probes} single-row transactions: median ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`);
    printResult(atMost(`capture µs/row, ${fmt(large)} vs ${fmt(small)} rows`, `${(largePerRow * 1e6).toFixed(1)} µs/row`, `${(smallPerRow * 1e6).toFixed(1)} µs/row`, largePerRow / smallPerRow, 1.3));
    const captureRate = large / run.captureSeconds;
    const insertRate = large / run.insertSeconds;
    printResult(atLeast('capture throughput vs multi-row INSERT', `${fmt(captureRate)} rows/s`, `${fmt(insertRate)} rows/s`, captureRate / insertRate, 0.1));
    printResult({ ...atMost(`commit-to-pull-visible p99, ${fmt(large)} rows`, `${p99.toFixed(1)} ms`, '-', p99, 50), goal: '<= 50 ms' });
  } finally {
    await cluster.stop();
  }
}

main().catch((e: unknown) => {
  console.error((e as Error).message);
  process.exit(1);
});
