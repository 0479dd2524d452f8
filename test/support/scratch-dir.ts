/**
 * Scratch directories for tests: each is a fresh directory under the
 * temporary directory, removed when the test process exits (node --test runs
 * every test file in a process of its own), so a test that hands a directory
 * to a client or a fixture leaves nothing behind.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

process.once('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory whose name starts with `prefix`, gone when this process exits. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
