/** Shared set-up of the report tests: one real Cucumber run per test process, reused by every test in it. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Classification } from '../../harness/report/classify.ts';
import { classifyRun } from '../../harness/report/classify.ts';
import type { MessageIndex } from '../../harness/report/messages.ts';
import { readMessages } from '../../harness/report/messages.ts';
import { fixtureRecords, runFixtures } from './fixtures/run-fixtures.ts';

export interface FixtureRun {
  dir: string;
  messagesFile: string;
  catalogFile: string;
  index: MessageIndex;
  classification: Classification;
}

let run: Promise<FixtureRun> | undefined;
const created: string[] = [];

// Each test file runs in its own process: its temporary folders go when it ends.
process.on('exit', () => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});

export function fixtureRun(): Promise<FixtureRun> {
  run ??= (async () => {
    const dir = tempDir('report-test-');
    const messagesFile = await runFixtures(dir);
    const catalogFile = join(dir, 'catalog.md');
    writeFileSync(catalogFile, '# Catalog\n\n## Protocol Invariants\n\n### Everything Passes\n');
    const index = readMessages(messagesFile);
    return { dir, messagesFile, catalogFile, index, classification: classifyRun(index, fixtureRecords()) };
  })();
  return run;
}

export function tempDir(prefix = 'report-out-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}
