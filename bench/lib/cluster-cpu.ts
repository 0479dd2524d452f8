/**
 * CPU time spent by each process of a PostgreSQL cluster and by this
 * process over a timed part of a bench, so a bench can show where its time
 * goes beside its ratio. The cluster's processes are read from /proc (Linux);
 * elsewhere only this process is measured and the bench says so.
 */
import { existsSync, readFileSync } from 'node:fs';
import type pg from 'pg';

/** Clock ticks per second of /proc's CPU counters (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * CPU seconds (user + system) of each of `pids` from /proc, by PID; undefined
 * without /proc. A process that has ended is left out.
 */
function processCpu(pids: Iterable<number>): Map<number, number> | undefined {
  if (!existsSync('/proc/self/stat')) return undefined;
  const out = new Map<number, number>();
  for (const pid of pids) {
    try {
      // Fields after the parenthesized command name: state is the first, utime and stime the 12th and 13th.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      out.set(pid, (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND);
    } catch {
      // The process has ended since pg_stat_activity listed it.
    }
  }
  return out;
}

/**
 * Each process of the cluster `sql` is connected to, with its application
 * name (its backend type when it has none): pg_stat_activity lists the
 * sessions and the background processes, so other clusters on the machine
 * are never counted.
 */
async function processNames(sql: pg.Client): Promise<Map<number, string>> {
  const { rows } = await sql.query<{ pid: number; name: string }>("SELECT pid, coalesce(nullif(application_name, ''), backend_type) AS name FROM pg_stat_activity");
  return new Map(rows.map((r) => [r.pid, r.name]));
}

export interface CpuSplit {
  /** This process (user + system), milliseconds. */
  self: number;
  /** PostgreSQL processes grouped by `group(name)`, milliseconds; undefined where /proc is not readable. */
  postgres: Map<string, number> | undefined;
}

/**
 * Starts measuring; the returned function ends the measurement and splits the
 * CPU time spent since. `group` maps a backend's application name (or type)
 * to the label it is counted under.
 */
export async function measureCpu(sql: pg.Client, group: (name: string) => string): Promise<() => Promise<CpuSplit>> {
  const names = await processNames(sql);
  const before = processCpu(names.keys());
  const self = process.cpuUsage();
  return async () => {
    const used = process.cpuUsage(self);
    // Sessions opened during the measurement count from their start.
    for (const [pid, name] of await processNames(sql)) names.set(pid, name);
    const after = processCpu(names.keys());
    if (before === undefined || after === undefined) return { self: (used.user + used.system) / 1000, postgres: undefined };
    const postgres = new Map<string, number>();
    for (const [pid, seconds] of after) {
      const label = group(names.get(pid) as string);
      postgres.set(label, (postgres.get(label) ?? 0) + (seconds - (before.get(pid) ?? 0)) * 1000);
    }
    return { self: (used.user + used.system) / 1000, postgres };
  };
}
