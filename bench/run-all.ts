/**
 * Runs every bench at a bounded size, one process each, and prints one table:
 * bench, ours, baseline, ratio, goal, met. Each bench's own lines (its
 * durability settings and scaling lines) are printed as it runs. The whole
 * run stops at a deadline (default 10 minutes) and says which bench ran out.
 *
 *   node bench/run-all.ts [--deadline-seconds 600] [--durable]
 */
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import type { GoalResult } from './lib/report.ts';

const root = new URL('..', import.meta.url).pathname;

const BENCHES: Array<{ name: string; args: string[]; server: boolean }> = [
  { name: 'capture', args: ['bench/capture/main.ts', '--small', '10000', '--large', '100000', '--probes', '200'], server: true },
  { name: 'pull', args: ['bench/pull/main.ts', '--small', '1000', '--large', '100000', '--steady', '200'], server: true },
  { name: 'push', args: ['bench/push/main.ts', '--batches', '30'], server: true },
  { name: 'client rebuild', args: ['bench/client/rebuild.ts', '50000'], server: false },
  { name: 'row digest', args: ['bench/codec/row-digest.ts', '20000'], server: false },
];

/** Runs one bench, echoing its lines, and returns its RESULT lines; rejects when it fails or the deadline passes. */
function runBench(args: string[], deadline: number): Promise<GoalResult[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    const results: GoalResult[] = [];
    let buffered = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('RESULT ')) results.push(JSON.parse(line.slice(7)) as GoalResult);
        else console.log(`  ${line}`);
      }
    });
    const timer = setTimeout(() => child.kill('SIGTERM'), Math.max(0, deadline - Date.now()));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(results);
      else reject(new Error(signal === null ? `exited with status ${code}` : `stopped by ${signal} at the run's deadline`));
    });
  });
}

function table(rows: GoalResult[]): string {
  const cells = rows.map((r) => [r.bench, r.ours, r.baseline, r.ratio.toFixed(r.ratio >= 10 ? 1 : 3), r.goal, r.met ? 'yes' : 'NO']);
  const head = ['bench', 'ours', 'baseline', 'ratio', 'goal', 'met'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)));
  const line = (c: string[]) => `| ${c.map((x, i) => x.padEnd(widths[i] as number)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'deadline-seconds': { type: 'string', default: '600' }, durable: { type: 'boolean', default: false } } });
  const seconds = Number(values['deadline-seconds']);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error('--deadline-seconds must be a positive number');
  const started = Date.now();
  const deadline = started + seconds * 1000;
  const results: GoalResult[] = [];
  const failures: string[] = [];
  for (const b of BENCHES) {
    console.log(`${b.name}: node ${b.args.join(' ')}`);
    const t0 = Date.now();
    try {
      results.push(...(await runBench([...b.args, ...(values.durable && b.server ? ['--durable'] : [])], deadline)));
    } catch (e) {
      failures.push(`${b.name}: ${(e as Error).message}`);
    }
    console.log(`  (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    if (Date.now() >= deadline) break;
  }
  console.log('');
  console.log(table(results));
  console.log(`${results.filter((r) => r.met).length} of ${results.length} goals met; ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
  for (const f of failures) console.log(`FAILED ${f}`);
  if (failures.length > 0) process.exitCode = 1;
}

await main();
