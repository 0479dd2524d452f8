/**
 * Capture latency of the reference server: --count (default 1,000) single-row
 * transactions committed one at a time by direct SQL; for each, the time from
 * COMMIT returning until an incremental pull returns the row. Prints the
 * median and the 99th percentile. Loopback only; each wait is bounded.
 *
 *   node bench/capture/main.ts [--count 1000]
 */
import { parseArgs } from 'node:util';
import { pullBody, startBench } from '../pull/setup.ts';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { count: { type: 'string', default: '1000' } } });
  const count = Number(values.count);
  if (!Number.isInteger(count) || count < 1 || count > 10_000) throw new Error('--count must be 1..10000');
  const b = await startBench('bench_capture');
  try {
    const cursors = { ...b.cursors };
    const latencies: number[] = [];
    for (let i = 0; i < count; i++) {
      const id = `c${i}`;
      await b.sql.query('INSERT INTO public.items (id, grp, label) VALUES ($1, $2, $3)', [id, i % 4, 'latency probe']);
      const t0 = performance.now();
      const deadline = t0 + 10_000;
      for (;;) {
        const r = await b.post('/sync/pull', pullBody(b, cursors, 1000));
        if (r.status !== 200) throw new Error(`pull failed: ${JSON.stringify(r.json)}`);
        Object.assign(cursors, r.json.scope_cursors);
        if ((r.json.changes as Array<{ pk: Record<string, string> }>).some((c) => Object.values(c.pk)[0] === id)) break;
        if (performance.now() > deadline) throw new Error(`row ${id} was not pull-visible within 10 s`);
      }
      latencies.push(performance.now() - t0);
    }
    latencies.sort((x, y) => x - y);
    console.log(`commit-to-pull-visible latency over ${count} single-row transactions:`);
    console.log(`median ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms`);
  } finally {
    await b.close();
  }
}

main().catch((e: unknown) => {
  console.error((e as Error).message);
  process.exit(1);
});
