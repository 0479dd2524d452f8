/**
 * What every bench prints: its durability settings, readable lines, and one
 * `RESULT {json}` line per goal, which bench/run-all.ts gathers into a table.
 */

export interface GoalResult {
  bench: string;
  /** Our figure, with its unit (e.g. "4,210 rows/s"). */
  ours: string;
  /** The baseline figure measured in the same run, or "-" for an absolute goal. */
  baseline: string;
  /** ours relative to baseline as the goal reads it, or the absolute figure for an absolute goal. */
  ratio: number;
  /** The goal as text, e.g. ">= 0.25". */
  goal: string;
  met: boolean;
}

export function atLeast(bench: string, ours: string, baseline: string, ratio: number, goal: number): GoalResult {
  return { bench, ours, baseline, ratio, goal: `>= ${goal}`, met: ratio >= goal };
}

export function atMost(bench: string, ours: string, baseline: string, ratio: number, goal: number): GoalResult {
  return { bench, ours, baseline, ratio, goal: `<= ${goal}`, met: ratio <= goal };
}

export function printResult(r: GoalResult): void {
  console.log(`RESULT ${JSON.stringify(r)}`);
}

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function quantile(values: number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? Number.NaN;
}

export const median = (values: number[]) => quantile(values, 0.5);

/** The embedded cluster's settings, as every server bench states them (both sides run on the same cluster). */
export function durabilityLine(durable: boolean): string {
  // The allocator settings are the embedded cluster's in both modes (reference/server/db/cluster.ts, decision 405).
  const allocator = 'glibc malloc mmap threshold 32 MiB, trim threshold 64 MiB';
  return durable
    ? `durability: embedded cluster in durable mode (fsync, synchronous_commit, full_page_writes on; files on disk; ${allocator}), both sides`
    : `durability: embedded disposable cluster (fsync, synchronous_commit, full_page_writes off; files in /dev/shm when writable; ${allocator}), both sides`;
}

export function positiveInteger(name: string, value: string | undefined, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`--${name} must be a whole number 1..${max}, not ${value}`);
  return n;
}
