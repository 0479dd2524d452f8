/**
 * Where a push's time goes: the push bench's table and batches (100 inserts
 * each, the capture worker running), with every database statement of the
 * process timed by its text, literals and parameters folded so the same
 * statement counts as one, and kept apart by session (the server's pool, the
 * capture worker). A diagnostic, not a goal: it prints no RESULT line.
 *
 *   node bench/push/trace.ts [--batches 10] [--top 25]
 */
import { parseArgs } from 'node:util';
import { startCluster } from '../../reference/server/db/index.ts';
import { positiveInteger } from '../lib/report.ts';
import { printTrace, traceStatements } from '../lib/statement-trace.ts';
import { startPushBench } from './setup.ts';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { batches: { type: 'string', default: '10' }, top: { type: 'string', default: '25' } } });
  const batches = positiveInteger('batches', values.batches, 1000);
  const top = positiveInteger('top', values.top, 1000);
  const { seen, on } = traceStatements();
  const cluster = await startCluster(process.env, 'disposable');
  try {
    const bench = await startPushBench(cluster, 'bench_push_trace');
    const { server } = bench;
    await bench.push(-1, 100);
    await server.capture?.catchUp(60_000);
    on.value = true;
    const wall: number[] = [];
    for (let b = 0; b < batches; b++) {
      const t0 = performance.now();
      await bench.push(b, 100);
      wall.push(performance.now() - t0);
    }
    await server.capture?.catchUp(60_000);
    on.value = false;
    const total = wall.reduce((a, b) => a + b, 0);
    console.log(`${batches} pushes of 100 inserts: ${(total / batches).toFixed(1)} ms per push (wall)`);
    printTrace(seen, batches, 'push', top);
    await bench.close();
  } finally {
    await cluster.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`trace failed: ${(e as Error).message}\n`);
  process.exit(1);
});
