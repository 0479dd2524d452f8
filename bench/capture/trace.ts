/**
 * Where commit-to-pull-visible goes: the capture bench's probe (single-row
 * transactions, each followed by incremental pulls until the row shows) on
 * a fresh database of --rows rows, with every database statement of the
 * process timed by shape and session (the capture worker's, the server's
 * pool). A diagnostic, not a goal: it prints no RESULT line.
 *
 *   node bench/capture/trace.ts [--rows 100000] [--probes 50] [--top 30]
 */
import { parseArgs } from 'node:util';
import { median, positiveInteger, quantile } from '../lib/report.ts';
import { printTrace, traceStatements } from '../lib/statement-trace.ts';
import { benchCluster, drain, insertRows, probePullVisible, startBench } from '../pull/setup.ts';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rows: { type: 'string', default: '100000' }, probes: { type: 'string', default: '50' }, top: { type: 'string', default: '30' } } });
  const rows = positiveInteger('rows', values.rows, 1_000_000);
  const probes = positiveInteger('probes', values.probes, 10_000);
  const top = positiveInteger('top', values.top, 1000);
  const { seen, on } = traceStatements();
  const cluster = await benchCluster(false);
  try {
    const b = await startBench(cluster, `bench_capture_trace_${rows}`);
    try {
      await insertRows(b.sql, 1, rows);
      await b.server.capture?.catchUp(1_800_000);
      const cursors = { ...b.cursors };
      await drain(b, cursors, Math.ceil(rows / 1000) + 10);
      const latencies: number[] = [];
      const pulls: number[] = [];
      on.value = true;
      for (let i = 0; i < probes; i++) {
        const probe = await probePullVisible(b, cursors, i);
        latencies.push(probe.ms);
        pulls.push(probe.pulls);
      }
      on.value = false;
      console.log(`${probes} probes with ${rows} rows: median ${median(latencies).toFixed(2)} ms, p99 ${quantile(latencies, 0.99).toFixed(2)} ms; pulls per probe median ${median(pulls)}, max ${Math.max(...pulls)}`);
      printTrace(seen, probes, 'probe', top);
    } finally {
      await b.close();
    }
  } finally {
    await cluster.stop();
  }
}

main().catch((e: unknown) => {
  console.error((e as Error).message);
  process.exit(1);
});
