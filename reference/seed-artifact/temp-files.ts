/**
 * Names of the builder's temporary files. A temporary file sits beside the
 * destination (so publication is one rename on the same file system) and its
 * name carries the destination's name and the building process's ID, so
 * whoever outlives a build (the build itself on a refusal, its supervisor
 * after a kill) can find and remove exactly what that build left.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const SIDECARS = ['-wal', '-shm', '-journal'];

/** A fresh temporary name for a build of `out` by process `pid`. */
export function tempPath(out: string, pid: number = process.pid): string {
  return join(dirname(out), `.${basename(out)}.${pid}.${randomBytes(4).toString('hex')}.seed-tmp`);
}

/** Removes a file and the SQLite sidecars beside it. */
export function removeWithSidecars(path: string): void {
  for (const suffix of ['', ...SIDECARS]) rmSync(`${path}${suffix}`, { force: true });
}

/** Temporary files (and their sidecars) left for `out`, by any build or by the build of process `pid`. */
export function leftoverTemps(out: string, pid?: number): string[] {
  const prefix = pid === undefined ? `.${basename(out)}.` : `.${basename(out)}.${pid}.`;
  return readdirSync(dirname(out)).filter((f) => f.startsWith(prefix) && f.includes('.seed-tmp'));
}

/** Removes every temporary file the build of process `pid` left for `out`. */
export function removeTempsOf(out: string, pid: number): void {
  for (const f of leftoverTemps(out, pid)) rmSync(join(dirname(out), f), { force: true });
}
