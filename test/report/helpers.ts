/** Shared set-up of the report tests: one real Cucumber run per test process, reused by every test in it. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Classification } from '../../harness/report/classify.ts';
import { classifyRun } from '../../harness/report/classify.ts';
import type { MessageIndex } from '../../harness/report/messages.ts';
import { readMessages } from '../../harness/report/messages.ts';
import { scratchDir } from '../support/scratch-dir.ts';
import { fixtureRecords, runFixtures } from './fixtures/run-fixtures.ts';

export interface FixtureRun {
  dir: string;
  messagesFile: string;
  catalogFile: string;
  index: MessageIndex;
  classification: Classification;
}

let run: Promise<FixtureRun> | undefined;

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

/** A temporary folder removed when this test process ends. */
export function tempDir(prefix = 'report-out-'): string {
  return scratchDir(prefix);
}
