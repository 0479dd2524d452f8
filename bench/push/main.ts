/**
 * Push throughput of the reference server, with its capture worker running
 * (as in production, it decodes and materializes what push commits while
 * push goes on): accepted mutations per second for batches of 100 inserts
 * over HTTP, against inserting the same rows with plain parameterized SQL,
 * one single-row INSERT at a time, 100 per transaction, measured in the same
 * run on the same embedded database. Loopback only; bounded batch counts.
 * Two lines split each side's time into CPU per process (this process, the
 * server's pooled sessions, capture's sessions, the baseline's session).
 *
 *   node bench/push/main.ts [--batches 30] [--durable]
 */
import { parseArgs } from 'node:util';
import { startCluster } from '../../reference/server/db/index.ts';
import { type CpuSplit, measureCpu } from '../lib/cluster-cpu.ts';
import { atLeast, durabilityLine, fmt, printResult } from '../lib/report.ts';
import { startPushBench } from './setup.ts';

const BATCH = 100;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { batches: { type: 'string', default: '30' }, durable: { type: 'boolean', default: false } } });
  const batches = Number(values.batches);
  if (!Number.isInteger(batches) || batches < 1 || batches > 1000) throw new Error('--batches must be 1..1000');
  console.log(durabilityLine(values.durable));
  const cluster = await startCluster(process.env, values.durable ? 'durable' : 'disposable');
  try {
    const bench = await startPushBench(cluster, 'bench_push', 'CREATE TABLE public.plain_items (id text PRIMARY KEY, label text NOT NULL, qty integer);');
    const { server, sql } = bench;

    // Warm up both paths once so connection setup and plan caching do not count.
    await bench.push(-1, BATCH);
    const cpu = await measureCpu(sql, cpuGroup);
    const t0 = performance.now();
    let accepted = 0;
    for (let b = 0; b < batches; b++) accepted += (await bench.push(b, BATCH)).accepted;
    const pushSeconds = (performance.now() - t0) / 1000;
    const split = await cpu();

    const plainBatch = async (b: number) => {
      await sql.query('BEGIN');
      for (let k = 0; k < BATCH; k++) await sql.query('INSERT INTO public.plain_items (id, label, qty) VALUES ($1, $2, $3)', [`b${b}-${k}`, `item ${k}`, k]);
      await sql.query('COMMIT');
    };
    await plainBatch(-1);
    const plainCpu = await measureCpu(sql, cpuGroup);
    const t1 = performance.now();
    for (let b = 0; b < batches; b++) await plainBatch(b);
    const plainSeconds = (performance.now() - t1) / 1000;
    const plainSplit = await plainCpu();

    const pushRate = accepted / pushSeconds;
    const plainRate = (batches * BATCH) / plainSeconds;
    // Capture catches up on what push committed (not timed above; it ran alongside).
    const c0 = performance.now();
    await server.capture?.catchUp(600_000);
    console.log(`push: ${accepted} mutations in ${batches} batches of ${BATCH}: ${fmt(pushRate)} mutations/s; capture finished ${((performance.now() - c0) / 1000).toFixed(2)} s after the last push`);
    console.log(`single-row INSERT loop, ${BATCH} per transaction: ${fmt(plainRate)} rows/s`);
    printCpuSplit('push', split, batches, (pushSeconds * 1000) / batches);
    printCpuSplit('transaction of the INSERT loop', plainSplit, batches, (plainSeconds * 1000) / batches);
    printResult(atLeast('push with capture running', `${fmt(pushRate)} mutations/s`, `${fmt(plainRate)} rows/s`, pushRate / plainRate, 0.25));
    await bench.close();
  } finally {
    await cluster.stop();
  }
}

/** The server's pooled sessions carry no application name; capture's sessions name themselves. */
function cpuGroup(name: string): string {
  if (name === 'client backend') return "the server's pooled sessions";
  if (name.startsWith('synchro-capture')) return "capture's sessions";
  if (name === 'bench') return "the bench's session";
  return 'other PostgreSQL processes';
}

/**
 * Where the time of one push (or one transaction of the baseline) went, in
 * CPU per process. Requests go one at a time, so this process and the
 * session serving the request mostly work in turn, while capture's sessions
 * can use the other core.
 */
function printCpuSplit(what: string, split: CpuSplit, batches: number, wallEach: number): void {
  const per = (ms: number) => `${(ms / batches).toFixed(1)} ms`;
  const parts = [`this process (bench client, server, capture worker) ${per(split.self)}`];
  const shown = (ms: number) => ms / batches >= 0.05;
  if (split.postgres === undefined) parts.push('PostgreSQL not measured (no /proc)');
  else for (const [label, ms] of [...split.postgres].sort((a, b) => b[1] - a[1])) if (shown(ms)) parts.push(`${label} ${per(ms)}`);
  console.log(`CPU per ${what} of ${BATCH} (wall ${wallEach.toFixed(1)} ms): ${parts.join('; ')}`);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${(e as Error).message}\n`);
  process.exit(1);
});
